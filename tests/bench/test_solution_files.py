"""Stored solutions matched to tasks: by name (folder or NAME.py) or as KernelBench names them."""

from __future__ import annotations

from cuda_agent.bench.solution_files import find_solution
from cuda_agent.task import Task, TaskSource


def _task(name: str, level: int | None = None, problem: int | None = None) -> Task:
    source = TaskSource("kernelbench" if level else "file", "x.py", level, problem)
    return Task(name=name, code="", source=source)


def test_by_name_then_by_level_and_problem(tmp_path):
    (tmp_path / "relu").mkdir()
    (tmp_path / "gelu.py").write_text("")
    for name in (
        "level_1_problem_19_sample_2_kernel.py",
        "level_1_problem_19_sample_0_kernel.py",
        "level_2_problem_19_sample_0_kernel.py",
        "level_1_problem_190_sample_0_kernel.py",
    ):
        (tmp_path / name).write_text("")  # fmt: skip
    assert find_solution(tmp_path, _task("relu")) == tmp_path / "relu"
    assert find_solution(tmp_path, _task("gelu", 1, 19)) == tmp_path / "gelu.py"
    found = find_solution(tmp_path, _task("19_ReLU", 1, 19))
    assert found == tmp_path / "level_1_problem_19_sample_0_kernel.py"
    assert find_solution(tmp_path, _task("3_Other", 1, 3)) is None
    assert find_solution(tmp_path, _task("softmax")) is None
