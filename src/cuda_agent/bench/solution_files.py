"""Which stored solution belongs to which task, in a --solutions folder.

Accepted, for a task named NAME: NAME/ (a workspace folder, or a folder holding one single-file
model_new.py), NAME.py, and, where the task has a KernelBench level and problem id, the files
KernelBench's scripts write, level_{L}_problem_{ID}_sample_{K}_kernel.py, and the same with
`solution` for `sample`, as a common fork writes them (the lowest K when several exist).
"""

from __future__ import annotations

import re
from pathlib import Path

from cuda_agent.task import Task

_KERNELBENCH = re.compile(r"level_(\d+)_problem_(\d+)_(?:sample|solution)_(\d+)_kernel\.py")


def find_solution(folder: Path, task: Task) -> Path | None:
    """The path holding `task`'s solution in `folder`, or None."""
    for candidate in (folder / task.name, folder / f"{task.name}.py"):
        if candidate.exists():
            return candidate
    if task.level is None or task.source.problem_id is None:
        return None
    samples = []
    for path in folder.glob("level_*_problem_*_kernel.py"):
        match = _KERNELBENCH.fullmatch(path.name)
        if match and (int(match[1]), int(match[2])) == (task.level, task.source.problem_id):
            samples.append((int(match[3]), path))
    return min(samples)[1] if samples else None
