"""The Task contract, its loaders and the built-in tasks."""

from cuda_agent.task.kernelbench import (
    HUB_DATASET,
    KERNELBENCH,
    KERNELBENCH_ENV,
    kernelbench_name,
    kernelbench_source,
    load_from_hub,
)
from cuda_agent.task.loaders import BUILTIN, BUILTIN_DIR, load_task, load_tasks
from cuda_agent.task.types import Task, TaskSource, content_hash
from cuda_agent.task.validate import TaskError, check_program

__all__ = [
    "BUILTIN",
    "BUILTIN_DIR",
    "HUB_DATASET",
    "KERNELBENCH",
    "KERNELBENCH_ENV",
    "Task",
    "TaskError",
    "TaskSource",
    "check_program",
    "content_hash",
    "kernelbench_name",
    "kernelbench_source",
    "load_from_hub",
    "load_task",
    "load_tasks",
]
