"""`cuda-agent workspace TASK DIR`: a fresh workspace for a task, to work in by hand or by agent."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cuda_agent.agent import new_workspace
from cuda_agent.cli.writable import check_writable_folder
from cuda_agent.task import load_task


def workspace(
    task: Annotated[
        str, typer.Argument(help="A KernelBench-format .py file or a built-in task name.")
    ],
    folder: Annotated[Path, typer.Argument(help="Where to create it (new or empty).")],
) -> None:
    """Create a fresh workspace for a task: model.py, infrastructure, kernels/, SKILL.md."""
    found = load_task(task)
    check_writable_folder(folder, "workspace DIR", "choose a new folder in a writable place")
    root = new_workspace(found, folder)
    typer.echo(f"workspace for {found.name} at {root}")
    typer.echo("write model_new.py and kernels/; read SKILL.md for how to work there")
