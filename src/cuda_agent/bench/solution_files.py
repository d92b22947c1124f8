"""Which stored solution belongs to which task, in a --solutions folder.

Accepted, for a task named NAME: NAME/ (a workspace folder, or a folder holding one single-file
model_new.py), NAME.py, and, where the task has a KernelBench level and problem id, the files
KernelBench's scripts write, level_{L}_problem_{ID}_sample_{K}_kernel.py, and the same with
`solution` for `sample`, as a common fork writes them: every sample K is a solution of its own.
"""

from __future__ import annotations

import re
from pathlib import Path

from cuda_agent.task import Task

_KERNELBENCH = re.compile(r"level_(\d+)_problem_(\d+)_(?:sample|solution)_(\d+)_kernel\.py")


def find_solutions(folder: Path, task: Task) -> list[tuple[int | None, Path]]:
    """`task`'s solutions in `folder` as (sample K, path), lowest K first: one named after the
    task (sample None), else every KernelBench-named sample of its level and problem id."""
    for candidate in (folder / task.name, folder / f"{task.name}.py"):
        if candidate.exists():
            return [(None, candidate)]
    if task.level is None or task.source.problem_id is None:
        return []
    samples = []
    for path in folder.glob("level_*_problem_*_kernel.py"):
        match = _KERNELBENCH.fullmatch(path.name)
        if match and (int(match[1]), int(match[2])) == (task.level, task.source.problem_id):
            samples.append((int(match[3]), path))
    return sorted(samples)
