"""The CUDA Agent paper's published KernelBench figures, shown beside a run's scores for reference.

CUDA Agent (ByteDance Seed and Tsinghua AIR), arXiv:2602.24286v1. Table 1: KernelBench levels 1-3,
every system run in the same agent loop; columns pass rate, faster than eager, faster than
torch.compile (percent of the level's problems), geometric-mean speed-up vs eager and vs
torch.compile; "Overall" weights the levels by problem count (100 / 100 / 50). Table 2: ablations,
overall only. The figures are as the project's page gives them (its
`static/images/main_results.png`, github.com/nwiad/CUDA-Agent.github.io), the same as the paper's
summary. A figure the source does not give is absent, never guessed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

SOURCE = (
    "CUDA Agent, arXiv:2602.24286v1 (https://arxiv.org/abs/2602.24286), Table 1 and Table 2; "
    "figures as the project page's main_results.png gives them "
    "(github.com/nwiad/CUDA-Agent.github.io, static/images/main_results.png)"
)
NOTES = (
    "The paper's rows are its Table 1 (all systems in the same agent loop) and, in the overall "
    "table, its Table 2 ablations. The abstract says 100 %, 100 % and 92 % faster than "
    "torch.compile on levels 1, 2 and 3; Table 1 says 97, 100 and 90 (overall 96.8 %, which the "
    "table's rows give): the rows here are the table's.",
    'The paper\'s geometric-mean speed-ups are shown in the "correct only" columns: how they treat '
    "failed tasks is not stated in what could be read (one summary says over correct solutions "
    "only), so compare them with both of our geometric means.",
    "The paper does not state the GPU its evaluation ran on (its sandbox pool was H20, sm_90); "
    "speed-ups measured on another GPU are not directly comparable.",
)
# Table 1's columns, as the names of `cuda_agent.bench.metrics.Metrics` fields
_T1 = (
    "pass_rate",
    "faster_than_eager",
    "faster_than_compile",
    "geomean_vs_eager_correct",
    "geomean_vs_compile_correct",
)
_T2 = ("pass_rate", "faster_than_compile", "geomean_vs_compile_correct")


@dataclass(frozen=True)
class PaperRow:
    """One system's published figures for one level (`L1`..`L3`, `overall`).

    `values` is keyed by the names of `cuda_agent.bench.metrics.Metrics` fields (fractions for
    rates, ratios for speed-ups); a figure the source does not give is absent.
    """

    system: str
    level: str
    values: dict[str, float] = field(default_factory=dict)
    source: str = SOURCE


def _row(system: str, level: str, columns: tuple[str, ...], figures: tuple[float, ...]) -> PaperRow:
    """Rates given in percent become fractions; speed-ups stay ratios."""
    values = {
        name: value / 100 if name in ("pass_rate", "faster_than_eager", "faster_than_compile")
        else value
        for name, value in zip(columns, figures, strict=True)
    }  # fmt: skip
    return PaperRow(f"{system} (paper)", level, values)


# (system, pass %, faster than eager %, faster than torch.compile %, SU eager, SU torch.compile)
_TABLE1: dict[str, tuple[tuple[str, float, float, float, float, float], ...]] = {
    "overall": (
        ("Seed1.6 (base)", 74.0, 43.6, 27.2, 0.95, 0.69),
        ("GLM 4.6", 75.6, 44.8, 19.2, 0.78, 0.57),
        ("Kimi K2", 66.8, 40.8, 22.8, 0.93, 0.66),
        ("Gemini 3 Pro", 91.2, 87.6, 69.6, 1.92, 1.42),
        ("Claude Opus 4.5", 95.2, 90.4, 66.4, 1.99, 1.46),
        ("CUDA Agent", 98.8, 98.4, 96.8, 2.60, 2.11),
    ),
    "L1": (
        ("Seed1.6 (base)", 90.0, 63.0, 51.0, 1.65, 1.25),
        ("GLM 4.6", 86.0, 57.0, 32.0, 0.99, 0.73),
        ("Kimi K2", 85.0, 56.0, 39.0, 1.43, 1.00),
        ("Gemini 3 Pro", 95.0, 90.0, 72.0, 1.99, 1.51),
        ("Claude Opus 4.5", 96.0, 88.0, 72.0, 2.03, 1.54),
        ("CUDA Agent", 100.0, 99.0, 97.0, 2.48, 1.87),
    ),
    "L2": (
        ("Seed1.6 (base)", 74.0, 40.0, 16.0, 0.68, 0.50),
        ("GLM 4.6", 76.0, 43.0, 11.0, 0.60, 0.42),
        ("Kimi K2", 65.0, 40.0, 15.0, 0.93, 0.65),
        ("Gemini 3 Pro", 93.0, 91.0, 76.0, 2.03, 1.46),
        ("Claude Opus 4.5", 98.0, 97.0, 69.0, 2.24, 1.60),
        ("CUDA Agent", 100.0, 100.0, 100.0, 3.27, 2.80),
    ),
    "L3": (
        ("Seed1.6 (base)", 42.0, 12.0, 2.0, 0.60, 0.40),
        ("GLM 4.6", 54.0, 24.0, 10.0, 0.83, 0.62),
        ("Kimi K2", 34.0, 12.0, 6.0, 0.40, 0.29),
        ("Gemini 3 Pro", 80.0, 76.0, 52.0, 1.58, 1.17),
        ("Claude Opus 4.5", 88.0, 82.0, 50.0, 1.52, 1.10),
        ("CUDA Agent", 94.0, 94.0, 90.0, 1.80, 1.52),
    ),
}
# Table 2, overall: (variant, pass %, faster than torch.compile %, SU torch.compile)
_TABLE2: tuple[tuple[str, float, float, float], ...] = (
    ("CUDA Agent w/o agent loop (single-turn)", 77.1, 14.1, 0.69),
    ("CUDA Agent w/o robust reward (raw speed-up reward)", 96.8, 60.4, 1.25),
    ("CUDA Agent w/o RFT", 95.6, 49.8, 1.05),
    ("CUDA Agent w/o value pretraining", 98.6, 50.9, 1.00),
)

PAPER_ROWS: tuple[PaperRow, ...] = (
    *(_row(r[0], level, _T1, r[1:]) for level, rows in _TABLE1.items() for r in rows),
    *(_row(r[0], "overall", _T2, r[1:]) for r in _TABLE2),
)


def rows_for(level: str) -> list[PaperRow]:
    return [row for row in PAPER_ROWS if row.level == level]
