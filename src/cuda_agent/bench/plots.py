"""The report's figures as PNG files (matplotlib's Agg backend: no display needed)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

from cuda_agent.bench.metrics import fast_p_curve
from cuda_agent.sandbox import Verdict

SPEEDUP_PNG = "speedup_distribution.png"
FAST_P_PNG = "fast_p.png"


def _pyplot():
    """matplotlib on its Agg backend, imported when a figure is drawn (it is slow to import)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def speedup_distribution(verdicts: Sequence[Verdict], path: Path) -> Path:
    """Histograms of log2 speed-up vs eager and vs torch.compile over correct, timed solutions."""
    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), sharey=True)
    for ax, attr, title in (
        (axes[0], "speedup_vs_eager", "vs eager"),
        (axes[1], "speedup_vs_compile", "vs torch.compile"),
    ):
        values = [getattr(v, attr) for v in verdicts if v.correct and getattr(v, attr)]
        ax.set_title(f"speed-up {title} ({len(values)} correct, timed)")
        ax.set_xlabel("speed-up (log scale)")
        ax.axvline(0.0, color="#888", linewidth=1, linestyle="--")
        if values:
            logs = [math.log2(s) for s in values]
            lo, hi = min(min(logs), -1.0), max(max(logs), 1.0)
            bins = max(8, min(40, len(values)))
            ax.hist(logs, bins=bins, range=(lo, hi), color="#3b7dd8", edgecolor="white")
            ticks = range(math.floor(lo), math.ceil(hi) + 1)
            ax.set_xticks(list(ticks), [f"{2.0**t:g}x" for t in ticks])
        else:
            ax.text(
                0.5,
                0.5,
                "no correct, timed solutions",
                ha="center",
                va="center",
                transform=ax.transAxes,
                color="#666",
            )
            ax.set_xticks([])
    axes[0].set_ylabel("tasks")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def fast_p(groups: Mapping[str, Sequence[Verdict]], path: Path) -> Path:
    """KernelBench's fast_p (fraction correct and speed-up > p) against p, per group."""
    largest = max(
        [
            s
            for vs in groups.values()
            for v in vs
            if v.correct
            for s in (v.speedup_vs_eager, v.speedup_vs_compile)
            if s
        ],
        default=2.0,
    )
    plt = _pyplot()
    top = max(2.0, min(largest * 1.1, 20.0))
    grid = [top * i / 200 for i in range(201)]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), sharey=True)
    for ax, baseline, title in (
        (axes[0], "eager", "vs eager"),
        (axes[1], "compile", "vs torch.compile"),
    ):
        for name, verdicts in groups.items():
            if verdicts:
                ax.plot(grid, fast_p_curve(verdicts, grid, baseline), label=name, linewidth=1.6)
        ax.axvline(1.0, color="#888", linewidth=1, linestyle="--")
        ax.set_title(f"fast_p {title}")
        ax.set_xlabel("p (speed-up threshold)")
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("fraction of tasks")
    axes[1].legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
