"""Stored solutions matched to tasks: by name (folder or NAME.py) or as KernelBench names them."""

from __future__ import annotations

import pytest

from cuda_agent.bench.solution_files import find_solutions
from cuda_agent.task import Task, TaskSource


def _task(name: str, level: int | None = None, problem: int | None = None) -> Task:
    source = TaskSource("kernelbench" if level else "file", "x.py", level, problem)
    return Task(name=name, code="", source=source)


def test_by_name_then_every_sample_of_the_level_and_problem(tmp_path):
    (tmp_path / "relu").mkdir()
    (tmp_path / "gelu.py").write_text("")
    for name in (
        "level_1_problem_19_sample_2_kernel.py",
        "level_1_problem_19_sample_0_kernel.py",
        "level_1_problem_19_solution_1_kernel.py",  # a fork's name for its samples
        "level_2_problem_19_sample_0_kernel.py",
        "level_1_problem_190_sample_0_kernel.py",
        "level_1_problem_19_best_kernel.py",  # neither a sample nor a solution number
    ):
        (tmp_path / name).write_text("")  # fmt: skip
    assert find_solutions(tmp_path, _task("relu")) == [(None, tmp_path / "relu")]
    assert find_solutions(tmp_path, _task("gelu", 1, 19)) == [(None, tmp_path / "gelu.py")]
    assert find_solutions(tmp_path, _task("19_ReLU", 1, 19)) == [
        (0, tmp_path / "level_1_problem_19_sample_0_kernel.py"),
        (1, tmp_path / "level_1_problem_19_solution_1_kernel.py"),
        (2, tmp_path / "level_1_problem_19_sample_2_kernel.py"),
    ]
    assert find_solutions(tmp_path, _task("3_Other", 1, 3)) == []
    assert find_solutions(tmp_path, _task("softmax")) == []


def test_a_folder_of_single_files_alone_is_accepted_and_a_stranger_one_refused(tmp_path):
    from cuda_agent.bench import StoredSolutions, check_solutions
    from cuda_agent.errors import UserError

    tasks = [_task("19_ReLU", 1, 19), _task("gelu")]
    (tmp_path / "level_1_problem_19_sample_0_kernel.py").write_text("")
    check_solutions(tasks, StoredSolutions(tmp_path))
    only_named = tmp_path / "named"
    only_named.mkdir()
    (only_named / "gelu.py").write_text("")
    check_solutions(tasks, StoredSolutions(only_named))
    stranger = tmp_path / "stranger"
    stranger.mkdir()
    (stranger / "notes.txt").write_text("")
    with pytest.raises(UserError) as err:
        check_solutions(tasks, StoredSolutions(stranger))
    assert "nothing there is named after a task of the set (it holds notes.txt" in str(err.value)
    assert "level_L_problem_ID_sample_K_kernel.py" in str(err.value)
