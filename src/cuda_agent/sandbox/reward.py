"""The milestone reward of the CUDA Agent paper."""

from __future__ import annotations

FASTER = 1.05  # "more than 5 % faster"


def milestone_reward(
    correct: bool, speedup_vs_eager: float | None, speedup_vs_compile: float | None
) -> int:
    """-1 unless correct; 3 if > 5 % faster than eager and compile; 2 than eager only; else 1."""
    if not correct:
        return -1
    beats_eager = speedup_vs_eager is not None and speedup_vs_eager > FASTER
    beats_compile = speedup_vs_compile is not None and speedup_vs_compile > FASTER
    if beats_eager and beats_compile:
        return 3
    if beats_eager:
        return 2
    return 1
