"""KernelBench as a named task set: `--tasks kernelbench` reads the problems from a copy the user
names (a flag, else the CUDA_AGENT_KERNELBENCH environment variable) or, with neither, from the
Hugging Face dataset through `datasets` (which caches it).

A copy may be a KernelBench checkout (`KernelBench/level1/19_ReLU.py`), a folder of level folders,
or a JSONL/parquet of rows with `level`, `problem_id`, `name` and `code`. Each task's content hash
is its version: KernelBench has changed problem sizes and input distributions between releases,
and a verdict is comparable with another only on the same problem text.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from cuda_agent.task.types import Task, TaskSource
from cuda_agent.task.validate import TaskError, check_program

KERNELBENCH = "kernelbench"  # the task set's name where a path is expected
KERNELBENCH_ENV = "CUDA_AGENT_KERNELBENCH"
HUB_DATASET = "ScalingIntelligence/KernelBench"
DEFAULT_LEVELS = (1, 2, 3)  # the levels KernelBench's and CUDA Agent's papers report
HOW_TO_POINT = (
    f"pass --kernelbench PATH or set {KERNELBENCH_ENV}=PATH (a KernelBench checkout, a folder of "
    "its level folders, or a JSONL with level, problem_id, name and code)"
)


def kernelbench_source(given: str | Path | None = None) -> Path | None:
    """Where the user's copy of KernelBench is: `given`, else $CUDA_AGENT_KERNELBENCH; None means
    the Hugging Face dataset. A named copy that does not exist is an error, not a fallback."""
    where, origin = (given, "--kernelbench") if given else (os.environ.get(KERNELBENCH_ENV), None)
    if not where:
        return None
    path = Path(where).expanduser()
    if not path.exists():
        named = origin or f"${KERNELBENCH_ENV}"
        raise TaskError(f"{named} {where}: no such file or folder; {HOW_TO_POINT}")
    return path


def kernelbench_name(level: int, stem: str) -> str:
    """`L1_19_ReLU` for level1/19_ReLU.py: unique across levels, safe as a folder name."""
    return f"L{level}_{stem}"


def load_from_hub(levels: Iterable[int], dataset: str = HUB_DATASET) -> list[Task]:
    """The problems of `levels` from the Hugging Face dataset: one split per level (`level_1`,
    ...), each row a problem; `datasets` caches the download."""
    try:
        import datasets
    except ImportError:
        raise TaskError(
            "KernelBench: no copy given and the `datasets` package is missing; "
            f"{HOW_TO_POINT}, or install it (pip install 'cuda-agent[kernelbench]')"
        ) from None
    tasks: list[Task] = []
    for level in levels:
        try:
            rows = datasets.load_dataset(dataset, split=f"level_{level}")
        except Exception as err:  # offline, unknown dataset or split: datasets raises many types
            reason = (str(err).strip().splitlines() or [type(err).__name__])[0][:160]
            raise TaskError(
                f"KernelBench level {level}: could not load the Hugging Face dataset {dataset} "
                f"({reason}); {HOW_TO_POINT}"
            ) from None
        for n, row in enumerate(rows):
            tasks.append(_hub_task(dataset, level, n, row))
    return tasks


def _hub_task(dataset: str, level: int, n: int, row: dict) -> Task:
    where = f"{dataset} level_{level} row {n}"
    code, problem_id = row.get("code"), row.get("problem_id")
    if not isinstance(code, str) or problem_id is None:
        raise TaskError(f"{where}: expected the columns code and problem_id")
    check_program(code, where)
    stem = row.get("name") or str(problem_id)
    source = TaskSource(KERNELBENCH, f"hf:{dataset}", level=level, problem_id=int(problem_id))
    return Task(name=kernelbench_name(level, stem), code=code, source=source)
