"""The KernelBench-format files of tests/fixtures/kernelbench/submissions, which
benchmarks/compare_with_kernelbench.py gives both harnesses: each shortcut is refused by the
static guard for its own rule, and the file that does not compile still has a call the harness
reads and would build."""

from __future__ import annotations

from pathlib import Path

import pytest

from cuda_agent.sandbox.single_file.ahead import literal_calls
from cuda_agent.sandbox.single_file.flags import call_flags
from cuda_agent.sandbox.single_file.guard import check_call, check_file

SUBMISSIONS = Path(__file__).parents[2] / "fixtures" / "kernelbench" / "submissions"
SHORTCUTS = {
    8: "calls torch.matmul",
    9: "references Model (the reference program)",
    10: "assigns to torch.allclose",
}


def _text(problem_id: int) -> str:
    return (SUBMISSIONS / f"level_1_problem_{problem_id}_sample_0_kernel.py").read_text()


@pytest.mark.parametrize("problem_id", sorted(SHORTCUTS))
def test_each_shortcut_is_refused_for_its_own_rule(problem_id):
    text = _text(problem_id)
    found = check_file("model_new.py", text, "ModelNew")
    assert any(SHORTCUTS[problem_id] in line for line in found), found
    # the extension itself is clean: the shortcut is the Python around it
    (call,) = literal_calls(text)
    assert check_call(call) == [] and call_flags(call, "sm_90").refused == ()


def test_the_file_that_does_not_compile_passes_the_guard():
    text = _text(11)
    assert check_file("model_new.py", text, "ModelNew") == []
    (call,) = literal_calls(text)
    assert check_call(call) == [] and "acc * scale" in call.cuda_sources[0]


def test_every_file_is_named_as_kernelbench_names_samples():
    names = {p.name for p in SUBMISSIONS.glob("*.py")}
    assert names == {f"level_1_problem_{i}_sample_0_kernel.py" for i in (8, 9, 10, 11)}
