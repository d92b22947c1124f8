"""`cuda-agent export SOLUTION --task TASK --to kernelbench|cuda-agent`: a solution folder written
in another harness's format."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cuda_agent.errors import UserError
from cuda_agent.sandbox import (
    EXPORT_FORMATS,
    export_cuda_agent,
    export_kernelbench,
    read_solution,
)
from cuda_agent.task import load_task


def export(
    solution: Annotated[Path, typer.Argument(help="A folder with model_new.py and kernels/.")],
    task: Annotated[str, typer.Option("--task", help="A task .py file or a built-in task name.")],
    to: Annotated[str, typer.Option("--to", help="kernelbench or cuda-agent.")],
    out: Annotated[
        Path | None,
        typer.Option(
            help="Where to write: the .py file (kernelbench; default: standard output) or a new "
            "folder (cuda-agent; default: SOLUTION-cuda-agent in the current folder)."
        ),
    ] = None,
) -> None:
    """Write a solution as a KernelBench single-file submission or a CUDA Agent workdir."""
    if to not in EXPORT_FORMATS:
        raise UserError(f"--to {to!r}: choose {' or '.join(EXPORT_FORMATS)}")
    found = load_task(task)
    files = read_solution(solution)
    if to == "kernelbench":
        text = export_kernelbench(found, files)
        if out is None:
            typer.echo(text, nl=False)
            return
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
    else:
        out = export_cuda_agent(found, files, out or Path(f"{solution.resolve().name}-cuda-agent"))
    typer.echo(f"wrote {out}", err=True)
