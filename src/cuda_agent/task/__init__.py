"""The Task contract, its loaders and the built-in tasks."""

from cuda_agent.task.loaders import BUILTIN, BUILTIN_DIR, kernelbench_name, load_task, load_tasks
from cuda_agent.task.types import Task, TaskSource, content_hash
from cuda_agent.task.validate import TaskError, check_program

__all__ = [
    "BUILTIN",
    "BUILTIN_DIR",
    "Task",
    "TaskError",
    "TaskSource",
    "check_program",
    "content_hash",
    "kernelbench_name",
    "load_task",
    "load_tasks",
]
