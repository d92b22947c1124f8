"""Triton single files end to end on the GPU: Triton compiles each kernel in the candidate's
confined process, with its ptxas step and C modules run by the harness (triton_build.py); the
kernels it named are the solution's own for the runtime guard, and the verdicts follow the rules
profile as CUDA files' do."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from cuda_agent.sandbox import EnvConfig, Environment, Stage, Status, read_submission
from cuda_agent.task import load_task

pytestmark = pytest.mark.gpu
pytest.importorskip("triton", reason="Triton single files need the triton package")
ROOT = Path(__file__).parents[2]
TRITON = ROOT / "fixtures" / "triton"
TASKS = ROOT / "sandbox" / "tasks"
ADD_RELU = ROOT / "sandbox" / "rules" / "add_relu_task.py"


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    return Path(os.environ.get("CUDA_AGENT_TEST_CACHE") or tmp_path_factory.mktemp("cache"))


def _evaluate(cache: Path, task: Path, solution: Path, stage: Stage, rules: str = "cuda-agent"):
    with Environment(EnvConfig(cache_dir=cache, child_timeout_s=120.0, rules=rules)) as env:
        return env.evaluate(load_task(task), read_submission(solution), stage)


@pytest.mark.parametrize(
    ("task", "solution", "kernel"),
    [
        (TASKS / "elementwise_add.py", TRITON / "honest_add.py", "_add_kernel"),
        (TASKS / "wide_softmax.py", TRITON / "honest_softmax_autotune.py", "_softmax_rows"),
    ],
    ids=["add", "softmax_autotuned"],
)
def test_an_honest_triton_file_is_correct_and_timed(cache, task, solution, kernel):
    verdict = _evaluate(cache, task, solution, Stage.PROFILE)
    assert verdict.status == Status.OK and verdict.correct, verdict.summary()
    assert verdict.candidate_ms is not None and verdict.speedup_vs_eager is not None
    assert verdict.reward > -1 and verdict.violations == []
    assert any(f"Triton kernel(s) {kernel}" in n for n in verdict.notes), verdict.notes
    again = _evaluate(cache, task, solution, Stage.VERIFY)
    assert again.status == Status.OK, again.summary()
    # Triton's C modules come from the harness's cache; each kernel's PTX names the file's own
    # folder in its line info, so ptxas runs again for a new evaluation
    (note,) = [n for n in again.notes if "Triton kernel(s)" in n]
    assert int(re.search(r"(\d+) from cache", note).group(1)) >= 2, note


def test_a_partial_triton_kernel_follows_the_rules_profile(cache):
    refused = _evaluate(cache, ADD_RELU, TRITON / "partial_torch.py", Stage.VERIFY)
    assert refused.status == Status.VIOLATION, refused.summary()
    allowed = _evaluate(cache, ADD_RELU, TRITON / "partial_torch.py", Stage.PROFILE, "kernelbench")
    assert allowed.status == Status.OK and allowed.correct, allowed.summary()
    seen = {(o.op, o.layer) for o in allowed.torch_ops}
    assert ("aten::relu", "runtime_dispatch") in seen, seen


@pytest.mark.parametrize("rules", ["cuda-agent", "kernelbench"])
def test_a_triton_file_whose_kernel_never_runs_is_refused_under_every_profile(cache, rules):
    verdict = _evaluate(cache, ADD_RELU, TRITON / "launch_never.py", Stage.VERIFY, rules)
    assert verdict.status == Status.VIOLATION and verdict.reward == -1, verdict.summary()
    if rules == "kernelbench":
        assert any("none of the extension's kernels ran" in v.message for v in verdict.violations)
