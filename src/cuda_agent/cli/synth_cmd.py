"""`cuda-agent synth`: synthesize training tasks (`synth` or `synth run`), show the seed catalog."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from cuda_agent.cli.writable import check_writable_folder
from cuda_agent.errors import UserError
from cuda_agent.synth import Pipeline, SynthConfig, catalog_rows, default_cache_dir, load_catalog

synth_app = typer.Typer(
    help="Synthesize training tasks from torch and transformers operators.",
    invoke_without_command=True,
    add_completion=False,
)

N = Annotated[int | None, typer.Option("--n", help="Tasks wanted (accepted by every stage).")]
OUT = Annotated[Path | None, typer.Option("--out", help="Run folder (resumable).")]
DEVICE = Annotated[
    str | None, typer.Option(help="cuda or cpu: where candidates run (default: cuda if present).")
]
WORKERS = Annotated[int, typer.Option(help="Candidates checked at once.")]
RAY = Annotated[str | None, typer.Option("--ray", help="Ray cluster address (auto, host:port).")]
SEED = Annotated[int, typer.Option(help="Seed: the same seed makes the same candidates.")]
WINDOW = Annotated[
    str | None, typer.Option(help="Eager runtime window in ms, LO,HI (default: per device).")
]
KERNELBENCH = Annotated[
    Path | None,
    typer.Option(
        help="KernelBench checkout, folder or JSONL to decontaminate against (default: "
        "$CUDA_AGENT_KERNELBENCH, else the Hugging Face dataset)."
    ),
]
SKIP_DECONTAM = Annotated[
    bool,
    typer.Option(
        "--skip-decontamination",
        help="Make tasks without checking them against KernelBench (they may copy its problems).",
    ),
]
CACHE = Annotated[Path | None, typer.Option(help="Cache of the catalog and reference traces.")]
MAX_CANDIDATES = Annotated[int | None, typer.Option(help="Stop after this many candidates.")]
LLM_URL = Annotated[
    str | None, typer.Option(help="OpenAI-compatible endpoint for the LLM composer.")
]
LLM_MODEL = Annotated[str | None, typer.Option(help="Model name at --llm-base-url.")]
LLM_FRACTION = Annotated[float, typer.Option(help="Share of candidates the LLM composes.")]


@synth_app.callback()
def synth(
    ctx: typer.Context, n: N = None, out: OUT = None, device: DEVICE = None,
    workers: WORKERS = 4, ray: RAY = None, seed: SEED = 0, window: WINDOW = None,
    kernelbench: KERNELBENCH = None, cache_dir: CACHE = None,
    max_candidates: MAX_CANDIDATES = None, llm_base_url: LLM_URL = None,
    llm_model: LLM_MODEL = None, llm_fraction: LLM_FRACTION = 0.0,
    skip_decontamination: SKIP_DECONTAM = False,
) -> None:  # fmt: skip
    """Synthesize tasks: compose, filter, label, dedup, decontaminate, compile, export."""
    if ctx.invoked_subcommand is None:
        run(n, out, device, workers, ray, seed, window, kernelbench, cache_dir, max_candidates,
            llm_base_url, llm_model, llm_fraction, skip_decontamination)  # fmt: skip


@synth_app.command("run")
def run(
    n: N = None, out: OUT = None, device: DEVICE = None, workers: WORKERS = 4,
    ray: RAY = None, seed: SEED = 0, window: WINDOW = None,
    kernelbench: KERNELBENCH = None, cache_dir: CACHE = None,
    max_candidates: MAX_CANDIDATES = None, llm_base_url: LLM_URL = None,
    llm_model: LLM_MODEL = None, llm_fraction: LLM_FRACTION = 0.0,
    skip_decontamination: SKIP_DECONTAM = False,
) -> None:  # fmt: skip
    """Synthesize tasks (the default command of `cuda-agent synth`)."""
    if n is None or out is None:
        raise UserError("synth needs --n N and --out DIR (see: cuda-agent synth --help)")
    if device is None:
        import torch

        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device not in ("cuda", "cpu") and not device.startswith("cuda:"):
        raise UserError(f"--device {device!r}: use cuda or cpu")
    if llm_fraction > 0 and not (llm_base_url and llm_model):
        raise UserError("--llm-fraction needs --llm-base-url and --llm-model")
    try:
        cfg = SynthConfig(
            n=n, out=out, device=device, workers=workers, ray=ray, seed=seed,
            window_ms=_window(window), kernelbench=kernelbench,
            cache_dir=cache_dir or default_cache_dir(), max_candidates=max_candidates,
            llm_base_url=llm_base_url, llm_model=llm_model, llm_fraction=llm_fraction,
            decontaminate=not skip_decontamination,
        )  # fmt: skip
    except ValidationError as err:  # --n 0, --workers 0
        raise UserError(_option_error(err)) from None
    check_writable_folder(cfg.out, "--out")
    check_writable_folder(cfg.cache_dir, "--cache-dir", "give --cache-dir a writable folder")
    console = Console()
    with _RichProgress(console) as progress:
        result = Pipeline(cfg, progress).run()
    inv = result.summary["invariants"]
    console.print(
        f"{len(result.exported)} tasks in {result.out / 'tasks.parquet'} (and tasks.jsonl) "
        f"from {len(result.ids)} candidates; report: {result.out / 'report.md'}"
    )
    console.print(
        f"duplicates {inv['duplicate_sources']}+{inv['duplicate_signatures']}, label mismatches "
        f"{inv['label_mismatches']}, KernelBench signature matches "
        f"{inv['kernelbench_signature_matches']}, 3+ operators "
        f"{result.summary['share_3_plus_ops']:.0%}"
    )
    print_notes(console, result.notes)


@synth_app.command("catalog")
def catalog(
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object a line.")] = False,
    refresh: Annotated[bool, typer.Option(help="Mine again instead of using the cache.")] = False,
    cache_dir: CACHE = None,
) -> None:
    """Show the seed catalog: operators mined from torch and transformers."""
    found = load_catalog(cache_dir or default_cache_dir(), refresh=refresh)
    rows = catalog_rows(found)
    if as_json:
        for row in rows:
            typer.echo(json.dumps(row))
        return
    title = (f"{len(rows)} operators (torch {found.count('torch')}, transformers "
             f"{found.count('transformers')})")  # fmt: skip
    table = Table(title=title)
    for column in ("name", "library", "kind", "category", "ranks", "plans", "aliases"):
        table.add_column(column, overflow="fold")
    for r in rows:
        table.add_row(r["name"], r["library"], r["kind"], r["category"],
                      ",".join(map(str, r["ranks"])), str(r["plans"]),
                      ", ".join(r["aliases"]) or "—")  # fmt: skip
    console = Console()
    console.print(table)
    print_notes(console, found.notes)


def print_notes(console: Console, notes) -> None:
    """As written: a note's `cuda-agent[synth]` is a pip extra, not rich markup to strip."""
    for note in notes:
        console.print(f"note: {note}", markup=False)


def _option_error(err: ValidationError) -> str:
    """The first problem, named by the option it came from: `--n 0: must be greater than 0`."""
    first = err.errors()[0]
    field = str(first["loc"][0]) if first["loc"] else ""
    option = {"window_ms": "--window"}.get(field, f"--{field.replace('_', '-')}")
    message = first["msg"].removeprefix("Input should be ").removeprefix("Value error, ")
    return f"{option} {first.get('input')}: must be {message}"


def _window(text: str | None) -> tuple[float, float] | None:
    if text is None:
        return None
    try:
        lo, hi = (float(x) for x in text.split(","))
    except ValueError:
        raise UserError(f"--window {text!r}: expected LO,HI in ms, e.g. 1,100") from None
    if not 0 <= lo < hi:
        raise UserError(f"--window {text!r}: needs 0 <= LO < HI")
    return lo, hi


class _RichProgress:
    """One bar per stage; totals grow as rounds add candidates."""

    def __init__(self, console: Console):
        columns = (TextColumn("{task.description:<9}"), BarColumn(), MofNCompleteColumn())
        self.bars = Progress(*columns, TimeElapsedColumn(), console=console)
        self.tasks: dict[str, int] = {}

    def __enter__(self):
        self.bars.__enter__()
        return self

    def __exit__(self, *exc):
        return self.bars.__exit__(*exc)

    def stage(self, name: str, total: int, done: int) -> None:
        if name not in self.tasks:
            self.tasks[name] = self.bars.add_task(name, total=total, completed=done)
        else:
            self.bars.update(self.tasks[name], total=total, completed=done)

    def advance(self, name: str) -> None:
        self.bars.advance(self.tasks[name])
