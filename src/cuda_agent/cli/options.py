"""Parsing of the option values several commands share."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cuda_agent.errors import UserError

KernelBenchOpt = Annotated[
    Path | None,
    typer.Option(
        "--kernelbench",
        help="KernelBench copy for --tasks kernelbench: a checkout, a folder of level folders or "
        "a JSONL (default: $CUDA_AGENT_KERNELBENCH, else the Hugging Face dataset).",
    ),
]

ModuleModeOpt = Annotated[
    str,
    typer.Option(
        help="train (the models as constructed, KernelBench's way), eval (.eval() on both, CUDA "
        "Agent's way) or auto (by the submission's format: a CUDA Agent workdir eval, else train)."
    ),
]

TimingOpt = Annotated[
    str,
    typer.Option(
        "--timing",
        help="What a call is charged: events (CUDA events on its stream, KernelBench's way), "
        "kernels (its kernels' GPU time summed, a torch.profiler kernel sum as CUDA Agent's "
        "paper profiles) or span (first kernel's start to last one's end). The verdict "
        "carries all three.",
    ),
]

RulesOpt = Annotated[
    str,
    typer.Option(
        "--rules",
        help="cuda-agent (every operator a kernel: PyTorch compute is a violation) or "
        "kernelbench (PyTorch compute and kept torch modules allowed beside the kernels, each "
        "listed in the verdict's torch_ops). Integrity rules refuse under both.",
    ),
]


def parse_int_set(text: str | None, option: str) -> set[int] | None:
    """`1,3,5-9` -> {1, 3, 5, 6, 7, 8, 9}; None stays None."""
    if text is None:
        return None
    values: set[int] = set()
    for part in text.split(","):
        part = part.strip()
        try:
            if "-" in part:
                lo, hi = (int(x) for x in part.split("-", 1))
                if lo > hi:
                    raise ValueError
                values.update(range(lo, hi + 1))
            else:
                values.add(int(part))
        except ValueError:
            raise UserError(
                f"{option} {text!r}: expected numbers and ranges like 1,3,5-9"
            ) from None
    return values


def check_at_least(value: float | None, minimum: float, option: str) -> None:
    """UserError naming `option` when `value` (None: unset) is below `minimum`."""
    if value is not None and value < minimum:
        raise UserError(f"{option} {value:g}: give {minimum:g} or more")


EntryPointOpt = Annotated[
    str | None,
    typer.Option(
        "--entry-point",
        help="The class a single-file submission defines (default: ModelNew, or Model in a "
        "file that defines no ModelNew).",
    ),
]
