"""Single-file submissions on the GPU: every honest form is rewarded, no cheat is, each cheat's
verdict names the check that caught it, and a fault never breaks the next evaluation.

Each folder under honest/ and cheats/ holds model_new.py (KernelBench's format) and an
expect.json as the workspace guard cases do (tests/sandbox/guard/test_guard_gpu.py). Set
CUDA_AGENT_GUARD_REPORT to a path to get one JSON line per case, with the check that caught it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from cuda_agent.sandbox import (
    EnvConfig,
    Environment,
    Stage,
    Status,
    Verdict,
    read_submission,
    single_file_solution,
)
from cuda_agent.task import load_task

pytestmark = pytest.mark.gpu
HERE = Path(__file__).parent
REPO = HERE.parents[2]
HONEST = sorted(p for p in (HERE / "honest").iterdir() if p.is_dir())
CHEATS = sorted(p for p in (HERE / "cheats").iterdir() if p.is_dir())
PROBE = HERE / "honest" / "strings"


def _expect(folder: Path) -> dict:
    return json.loads((folder / "expect.json").read_text())


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    cache = Path(os.environ.get("CUDA_AGENT_TEST_CACHE") or tmp_path_factory.mktemp("cache"))
    with Environment(EnvConfig(cache_dir=cache, child_timeout_s=20.0)) as environment:
        environment.warm_up().join()
        yield environment


def _evaluate(env: Environment, folder: Path) -> Verdict:
    task = load_task(REPO / _expect(folder)["task"])
    return env.evaluate(task, read_submission(folder), Stage.PROFILE)


def caught_by(verdict: Verdict) -> str:
    """Which check ended the evaluation: the static guard (the file's Python or an extension's
    sources), the runtime guard (dispatcher or kernel trace), the correctness check, the
    confinement, or none."""
    if verdict.status == Status.VIOLATION:
        if any(v.message.startswith("model_new.py:") for v in verdict.violations):
            return "static guard (Python)"
        if any(v.message.startswith(("load_inline(", "load(")) for v in verdict.violations):
            return "static guard (extension sources or flags)"
        return "runtime guard"
    if verdict.status == Status.MISMATCH:
        return "correctness check on fresh inputs"
    if verdict.status in (Status.RUNTIME_ERROR, Status.TIMEOUT):
        return "confinement or process watch"
    return "none" if verdict.reward >= 0 else verdict.status.value


def _report(case: Path, kind: str, verdict: Verdict, passed: bool) -> None:
    path = os.environ.get("CUDA_AGENT_GUARD_REPORT")
    if not path:
        return
    row = {
        "case": f"single_file/{case.name}",
        "kind": kind,
        **_expect(case),
        "status": verdict.status.value,
        "reward": verdict.reward,
        "caught_by_check": caught_by(verdict),
        "violations": [v.message for v in verdict.violations],
        "notes": verdict.notes,
        "message": verdict.message[:2000],
        "seconds": verdict.seconds,
        "passed": passed,
    }
    with open(path, "a") as fh:
        fh.write(json.dumps(row) + "\n")


@pytest.mark.parametrize("folder", HONEST, ids=[p.name for p in HONEST])
def test_honest_single_file_is_rewarded(env, folder):
    verdict = _evaluate(env, folder)
    passed = verdict.status == Status.OK and verdict.correct and verdict.reward >= 1
    _report(folder, "honest", verdict, passed)
    assert passed and not verdict.violations, verdict.summary()
    note = _expect(folder).get("note")
    if note:
        assert any(note in n for n in verdict.notes), verdict.notes


@pytest.mark.parametrize("folder", CHEATS, ids=[p.name for p in CHEATS])
def test_single_file_cheat_is_not_rewarded(env, folder):
    expect = _expect(folder)
    verdict = _evaluate(env, folder)
    max_reward = expect.get("max_reward", -1)
    probe = _evaluate(env, PROBE)  # the environment still scores an honest file after it
    passed = verdict.status.value in expect["expect_status"] and verdict.reward <= max_reward
    _report(folder, "cheat", verdict, passed and probe.status == Status.OK)
    assert verdict.status.value in expect["expect_status"], (caught_by(verdict), verdict.summary())
    assert verdict.reward <= max_reward, verdict.summary()
    if expect["caught_by"] == "static":
        assert verdict.violations and not verdict.compiled, verdict.summary()
    assert probe.status == Status.OK and probe.reward >= 1, (
        f"after {folder.name}: {probe.summary()}"
    )


def test_function_the_extension_does_not_export(env):
    text = (PROBE / "model_new.py").read_text()
    text = text.replace(
        "self.ext.scale_gelu(x, self.scale)", "self.ext.scale_gelu_v2(x, self.scale)"
    )
    task = load_task(REPO / _expect(PROBE)["task"])
    verdict = env.evaluate(task, single_file_solution(text), Stage.VERIFY)
    assert verdict.status == Status.RUNTIME_ERROR and "scale_gelu_v2" in verdict.message
    assert env.evaluate(task, read_submission(PROBE), Stage.VERIFY).status == Status.OK
