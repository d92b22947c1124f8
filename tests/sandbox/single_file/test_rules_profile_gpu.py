"""The rules profiles end to end on the GPU: a partial kernel (its own add kernel, PyTorch's ReLU
after it) is a violation under the cuda-agent rules and correct, with its torch ops listed by
every layer that saw them, under the kernelbench rules; an integrity cheat the runtime guard
catches (fp16 rounding of an fp32 input) stays a violation under the kernelbench rules. The
partial kernel is profiled under the kernelbench rules: its timed calls launch PyTorch's ReLU
kernel too, which that profile lists rather than refuses (docs/verdict.md, rules profiles)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cuda_agent.sandbox import EnvConfig, Environment, Stage, Status, read_submission
from cuda_agent.task import load_task

pytestmark = pytest.mark.gpu
HERE = Path(__file__).parent
RULES = HERE.parent / "rules"
ADD_RELU = RULES / "add_relu_task.py"


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    return Path(os.environ.get("CUDA_AGENT_TEST_CACHE") or tmp_path_factory.mktemp("cache"))


def _evaluate(cache: Path, rules: str, task: Path, solution: Path, stage: Stage = Stage.VERIFY):
    with Environment(EnvConfig(cache_dir=cache, child_timeout_s=60.0, rules=rules)) as env:
        return env.evaluate(load_task(task), read_submission(solution), stage)


@pytest.mark.parametrize(
    "solution", [RULES / "single_partial_add_relu.py", RULES / "partial_add_relu"],
    ids=["single_file", "workspace"],
)  # fmt: skip
def test_a_partial_kernel_is_a_violation_by_default_and_correct_under_kernelbench(cache, solution):
    refused = _evaluate(cache, "cuda-agent", ADD_RELU, solution)
    assert refused.status == Status.VIOLATION and refused.reward == -1, refused.summary()
    assert any("torch.relu" in v.message for v in refused.violations) and refused.torch_ops == []
    allowed = _evaluate(cache, "kernelbench", ADD_RELU, solution, Stage.PROFILE)
    assert allowed.status == Status.OK and allowed.correct, allowed.summary()
    assert allowed.reward >= 1 and allowed.candidate_ms is not None, allowed.summary()
    assert allowed.rules == "kernelbench" and allowed.violations == []
    seen = {(o.op, o.layer) for o in allowed.torch_ops}
    assert ("torch.relu", "static_python") in seen, seen
    assert ("aten::relu", "runtime_dispatch") in seen, seen


def test_fp16_rounding_seen_by_the_runtime_guard_is_refused_under_kernelbench(cache):
    cheat = HERE / "cheats" / "c7_half_by_conversion_in_forward"
    verdict = _evaluate(cache, "kernelbench", HERE.parent / "tasks" / "scale_gelu.py", cheat)
    assert verdict.status == Status.VIOLATION and verdict.reward == -1, verdict.summary()
    assert any("aten::_to_copy" in v.message for v in verdict.violations), verdict.violations
