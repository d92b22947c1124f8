"""The first two messages of an episode: the system prompt (role, SKILL.md, and the text tool
protocol when that is on) and the task."""

from __future__ import annotations

from cuda_agent.task import Task

ROLE = (
    "You are an expert CUDA engineer. You make PyTorch programs faster by replacing their "
    "computation with your own CUDA kernels, working in a workspace through the tools you are "
    "given. Act by calling tools; every reply should call at least one. Here is the guide to "
    "the workspace, SKILL.md:\n\n"
)


def system_prompt(skill: str, addendum: str = "") -> str:
    return ROLE + skill.strip() + addendum


def task_prompt(task: Task) -> str:
    return (
        f"Task `{task.name}`: write a faster CUDA implementation of this reference program "
        "(the workspace's model.py):\n\n"
        f"```python\n{task.code.rstrip()}\n```\n\n"
        "Write model_new.py (class ModelNew, same constructor arguments and state as Model) and "
        "your kernels under kernels/. Check your work with compile, verify and profile; it must be "
        "correct and at least 5 % faster than torch.compile, and faster still is better. Call "
        "submit when you cannot improve it further."
    )


def initial_messages(task: Task, skill: str, addendum: str = "") -> list[dict]:
    return [
        {"role": "system", "content": system_prompt(skill, addendum)},
        {"role": "user", "content": task_prompt(task)},
    ]
