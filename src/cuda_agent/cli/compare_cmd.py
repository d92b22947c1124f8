"""`cuda-agent compare RUN --kernelbench-results FILE`: our verdicts beside another harness's."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from cuda_agent.bench import compare_with_file, verdict_text, write_comparison


def compare(
    run: Annotated[Path, typer.Argument(help="A run folder of `cuda-agent bench`.")],
    kernelbench_results: Annotated[
        Path,
        typer.Option(
            "--kernelbench-results",
            help="KernelBench's eval_results.json, or JSONL rows of level, problem_id, "
            "compiled, correct (and speedup, hash, ...).",
        ),
    ],
    level: Annotated[
        int | None,
        typer.Option(help="Level of an eval_results.json (default: the run's, if it has one)."),
    ] = None,
    sample: Annotated[int, typer.Option(help="Which of their samples of each problem.")] = 0,
    their_problems: Annotated[
        Path | None,
        typer.Option(help="The KernelBench copy their run used, to compare problem versions."),
    ] = None,
    kernelbench_baseline: Annotated[
        Path | None,
        typer.Option(
            "--kernelbench-baseline",
            help="KernelBench's baseline timings (results/timing/HARDWARE/"
            "baseline_time_torch.json): their speed-ups, as its analysis computes them.",
        ),
    ] = None,
    rules: Annotated[
        str | None,
        typer.Option(
            "--rules",
            help="The rules our verdicts are compared under: cuda-agent or kernelbench (default: "
            "the run's own). cuda-agent over a kernelbench run counts its partial kernels as "
            "violations.",
        ),
    ] = None,
) -> None:
    """Set the run's verdicts beside another harness's, problem by problem (RUN/compare.md)."""
    comparison = compare_with_file(
        run, kernelbench_results, level, sample, their_problems, kernelbench_baseline, rules
    )
    markdown, data = write_comparison(comparison, run)
    console = Console()
    table = Table(title=f"{run} beside {kernelbench_results}")
    for column in ("problem", "ours", "theirs", "verdict"):
        table.add_column(column, overflow="fold")
    for row in comparison.rows:
        table.add_row(f"L{row.level} #{row.problem_id}", row.ours or "—", row.theirs or "—",
                      verdict_text(row))  # fmt: skip
    console.print(table)
    s = comparison.summary()
    console.print(
        f"{s['compared']} in both: {s['same']} the same, {s['different']} different; "
        f"{s['only_ours']} only in ours, {s['only_theirs']} only in theirs"
    )
    console.print(f"ours by the {comparison.rules} rules")
    for note in comparison.notes:
        console.print(f"note: {note}")
    console.print(f"{markdown}\n{data}")
