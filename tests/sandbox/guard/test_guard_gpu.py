"""The guard on the GPU: no cheat submission is rewarded, every honest one is, and a fault never
breaks the next evaluation in the same Environment.

Each folder under cheats/ and honest/ is a solution with an expect.json naming its task (or an
expect.json alone, whose `solution` names a sibling folder to evaluate again under the
Environment settings in its `config`, e.g. with room for one input set only). A cheat
passes when its verdict's status is one of `expect_status` and its reward is at most `max_reward`
(-1 unless given: a cheat whose output is honest, such as a slow kernel behind patched timers,
may be judged correct, but never rewarded for a speed-up it did not earn). Set
CUDA_AGENT_GUARD_REPORT to a path to get one JSON line per case.
"""

from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import pytest

from cuda_agent.sandbox import EnvConfig, Environment, Stage, Status, Verdict, read_solution
from cuda_agent.task import Task, load_task, load_tasks
from tests.conftest import kernelbench_or_skip
from tests.sandbox.conftest import guard_case_solution

pytestmark = pytest.mark.gpu
HERE = Path(__file__).parents[1]  # tests/sandbox, beside its case folders
REPO = HERE.parents[1]
CHEATS = sorted(p for p in (HERE / "cheats").iterdir() if p.is_dir())
HONEST = sorted(p for p in (HERE / "honest").iterdir() if p.is_dir())
PROBE = HERE / "honest" / "scale_gelu"  # evaluated after every fault: the Environment still works
CHILD_TIMEOUT_S = 20.0  # bounds the hanging cases; an honest step here takes a few seconds


def _expect(folder: Path) -> dict:
    return json.loads((folder / "expect.json").read_text())


def load_expected_task(spec: str) -> Task:
    """A built-in name, a path relative to the repository, or kernelbench:L<level>:<id>."""
    if spec.startswith("kernelbench:"):
        _, level, problem = spec.split(":")
        [task] = load_tasks(
            kernelbench_or_skip(),
            levels=[int(level.removeprefix("L"))],
            problem_ids=[int(problem)],
        )
        return task
    return load_task(REPO / spec if spec.endswith(".py") else spec)


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    cache = Path(os.environ.get("CUDA_AGENT_TEST_CACHE") or tmp_path_factory.mktemp("cache"))
    with Environment(EnvConfig(cache_dir=cache, child_timeout_s=CHILD_TIMEOUT_S)) as environment:
        environment.warm_up().join()
        _prebuild(environment)
        yield environment


def _prebuild(env: Environment) -> None:
    """Compile every case that gets past the static guard, all at once on the host's cores, so
    the GPU never waits on nvcc (the build cache is content-addressed: evaluate reuses it)."""
    runtime = [f for f in CHEATS + HONEST if _expect(f).get("caught_by") != "static"]
    folders = {guard_case_solution(f) for f in runtime}
    # every pytest worker prebuilds the same cases (the cache's locks let one compile each):
    # the host's cores are shared among the workers, not each worker's
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    with ThreadPoolExecutor(max_workers=max(2, (os.cpu_count() or 2) // workers)) as pool:
        list(pool.map(lambda f: env.build(None, read_solution(f)), sorted(folders)))


def _evaluate(env: Environment, folder: Path) -> Verdict:
    expect = _expect(folder)
    task, solution = load_expected_task(expect["task"]), read_solution(guard_case_solution(folder))
    if "config" not in expect:
        return env.evaluate(task, solution, Stage.PROFILE)
    with Environment(replace(env.config, **expect["config"])) as own:
        return own.evaluate(task, solution, Stage.PROFILE)


def _report(case: Path, kind: str, verdict: Verdict, passed: bool, **extra) -> None:
    path = os.environ.get("CUDA_AGENT_GUARD_REPORT")
    if not path:
        return
    row = {
        "case": case.name,
        "kind": kind,
        **_expect(case),
        "status": verdict.status.value,
        "reward": verdict.reward,
        "correct": verdict.correct,
        "violations": [v.message for v in verdict.violations],
        "message": verdict.message[:2000],
        "seconds": verdict.seconds,
        "passed": passed,
        **extra,
    }
    with open(path, "a") as fh:
        fh.write(json.dumps(row) + "\n")
        fh.flush()


def _cases(folders: list[Path]) -> list:
    """Each case folder; one on a KernelBench problem holds that problem's GiBs of inputs."""
    large = [pytest.mark.large_gpu_memory]
    return [
        pytest.param(
            f, id=f.name, marks=large if _expect(f)["task"].startswith("kernelbench:") else []
        )
        for f in folders
    ]


@pytest.mark.parametrize("folder", _cases(CHEATS))
def test_cheat_is_not_rewarded(env, folder):
    expect = _expect(folder)
    verdict = _evaluate(env, folder)
    max_reward = expect.get("max_reward", -1)
    caught = verdict.status.value in expect["expect_status"] and verdict.reward <= max_reward
    if expect["caught_by"] == "static":
        caught = caught and bool(verdict.violations) and not verdict.compiled
    probe = None
    if expect["caught_by"] == "runtime" and expect["class"] in (4, 8):  # exits, kills, faults
        probe = _evaluate(env, PROBE)
    recovered = probe is None or (probe.status == Status.OK and probe.reward >= 1)
    _report(
        folder,
        "cheat",
        verdict,
        caught and recovered,
        probe_status=probe.status.value if probe else None,
    )
    assert verdict.status.value in expect["expect_status"], (
        f"{verdict.status.value}: {verdict.message}"
    )
    assert verdict.reward <= max_reward, verdict.summary()
    if expect["caught_by"] == "static":
        assert verdict.violations and not verdict.compiled
    if probe is not None:
        assert probe.status == Status.OK and probe.reward >= 1, (
            f"after {folder.name}: {probe.summary()}"
        )


@pytest.mark.parametrize("folder", _cases(HONEST))
def test_honest_solution_is_rewarded(env, folder):
    verdict = _evaluate(env, folder)
    passed = verdict.status == Status.OK and verdict.correct and verdict.reward >= 1
    _report(folder, "honest", verdict, passed and not verdict.violations)
    assert verdict.status == Status.OK, verdict.summary()
    assert verdict.correct and verdict.reward >= 1 and not verdict.violations, verdict.summary()
