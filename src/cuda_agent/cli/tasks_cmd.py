"""`cuda-agent tasks [PATH]`: list a task set as a table, or as JSON lines for scripts."""

from __future__ import annotations

import json
from collections import Counter
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from cuda_agent.cli.options import KernelBenchOpt, parse_int_set
from cuda_agent.task import load_tasks


def tasks(
    path: Annotated[
        str,
        typer.Argument(
            help="builtin, kernelbench (levels 1-3 unless --levels), a .py file, folder, "
            "KernelBench checkout, .jsonl or .parquet."
        ),
    ] = "builtin",
    levels: Annotated[str | None, typer.Option(help="KernelBench levels, e.g. 1,2.")] = None,
    ids: Annotated[str | None, typer.Option(help="KernelBench problem ids, e.g. 1,5-9.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object a line.")] = False,
    kernelbench: KernelBenchOpt = None,
) -> None:
    """List the tasks of a set (the built-in tasks by default)."""
    found = load_tasks(
        path, parse_int_set(levels, "--levels"), parse_int_set(ids, "--ids"), kernelbench
    )
    if as_json:
        for task in found:
            record = task.to_record()
            record.pop("code")
            typer.echo(json.dumps(record))
        return
    table = Table(title=f"{len(found)} tasks in {path}")
    for column in ("name", "source", "operators", "hash"):
        table.add_column(column, overflow="fold")
    for task in sorted(found, key=lambda t: (t.level or 0, t.source.problem_id or 0, t.name)):
        table.add_row(task.name, task.source.describe(), ", ".join(task.ops) or "—", task.hash)
    console = Console()
    console.print(table)
    by_level = Counter(t.level for t in found if t.level is not None)
    if by_level:
        console.print(", ".join(f"level {lv}: {n}" for lv, n in sorted(by_level.items())))
