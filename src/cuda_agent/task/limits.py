"""The largest task program accepted. A KernelBench program is a few kilobytes; one of many
megabytes is a mistake (a data file, generated code) that would take minutes and gigabytes to
parse and could never fit a model's context, so loading refuses it at once, saying the limit."""

from __future__ import annotations

import os

from cuda_agent.task.validate import TaskError

LIMIT_VARIABLE = "CUDA_AGENT_MAX_TASK_BYTES"
DEFAULT_MAX_TASK_BYTES = 1_000_000


def max_task_bytes() -> int:
    """The limit: CUDA_AGENT_MAX_TASK_BYTES when set, else 1 MB."""
    text = os.environ.get(LIMIT_VARIABLE)
    if text is None:
        return DEFAULT_MAX_TASK_BYTES
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        raise TaskError(
            f"{LIMIT_VARIABLE}={text!r}: give the largest task size in bytes, e.g. 1000000"
        )
    return value


def check_size(size: int, where: str) -> None:
    """TaskError naming `where` when a program of `size` bytes is over the limit."""
    limit = max_task_bytes()
    if size > limit:
        raise TaskError(
            f"{where}: {size:,} bytes, over the {limit:,}-byte limit on a task program; "
            f"set {LIMIT_VARIABLE} to raise it"
        )
