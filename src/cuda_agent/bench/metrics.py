"""Scores of a run, per level and overall, as the CUDA Agent paper and KernelBench define them.

Every rate has all tasks of the group as its denominator: a task that failed, was not verified,
or has no solution counts as not passed and not faster. "Overall" weights each level by its task
count (as the paper does): a rate is then the pooled rate, and a geometric mean is the
task-count-weighted mean of the levels' values.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from cuda_agent.sandbox import Verdict

FASTER_BY = 1.05  # "more than 5 % faster", the paper's threshold (and the reward's)
FAST_P_GRID = (0.0, 0.5, 0.8, 1.0, 1.05, 1.2, 1.5, 2.0, 3.0, 5.0, 10.0)
OTHER_LEVEL = "other"  # the group of tasks that carry no KernelBench level
OVERALL = "overall"


@dataclass(frozen=True)
class Metrics:
    """The scores of one group of tasks (a level, or all of them)."""

    tasks: int
    passed: int  # correct solutions
    pass_rate: float
    faster_than_eager: float  # correct and speedup vs eager > 1
    faster_than_eager_5pct: float  # correct and speedup vs eager > 1.05
    faster_than_compile: float
    faster_than_compile_5pct: float
    geomean_vs_eager_correct: float | None  # over correct, timed solutions only
    geomean_vs_compile_correct: float | None
    geomean_vs_eager_all: float | None  # over all tasks, a failure counting as 1.0x
    geomean_vs_compile_all: float | None
    fast_p_eager: dict[float, float]  # KernelBench fast_p: correct and speedup > p, over all tasks
    fast_p_compile: dict[float, float]
    reward_counts: dict[int, int]
    mean_reward: float | None

    def as_dict(self) -> dict:
        """JSON-ready, fast_p keys as strings."""
        out = dict(self.__dict__)
        out["fast_p_eager"] = {f"{p:g}": v for p, v in self.fast_p_eager.items()}
        out["fast_p_compile"] = {f"{p:g}": v for p, v in self.fast_p_compile.items()}
        out["reward_counts"] = {str(r): n for r, n in self.reward_counts.items()}
        return out


def level_key(level: int | None) -> str:
    """`L1` for KernelBench level 1; `other` for tasks without a level."""
    return f"L{level}" if level is not None else OTHER_LEVEL


def compute(verdicts: Sequence[Verdict], grid: Iterable[float] = FAST_P_GRID) -> Metrics:
    """The metrics of one group of verdicts (one per task)."""
    n = len(verdicts)
    grid = tuple(grid)
    correct = [v for v in verdicts if v.correct]
    eager = [v.speedup_vs_eager for v in correct]
    compile_ = [v.speedup_vs_compile for v in correct]
    rewards = Counter(v.reward for v in verdicts)
    return Metrics(
        tasks=n,
        passed=len(correct),
        pass_rate=_rate(len(correct), n),
        faster_than_eager=_rate(_count_over(eager, 1.0), n),
        faster_than_eager_5pct=_rate(_count_over(eager, FASTER_BY), n),
        faster_than_compile=_rate(_count_over(compile_, 1.0), n),
        faster_than_compile_5pct=_rate(_count_over(compile_, FASTER_BY), n),
        geomean_vs_eager_correct=geomean([s for s in eager if s is not None]),
        geomean_vs_compile_correct=geomean([s for s in compile_ if s is not None]),
        geomean_vs_eager_all=geomean(_failures_as_one(eager, n)),
        geomean_vs_compile_all=geomean(_failures_as_one(compile_, n)),
        fast_p_eager={p: _rate(_fast(eager, p), n) for p in grid},
        fast_p_compile={p: _rate(_fast(compile_, p), n) for p in grid},
        reward_counts=dict(sorted(rewards.items())),
        mean_reward=sum(v.reward for v in verdicts) / n if n else None,
    )


def by_level(
    results: Iterable[tuple[int | None, Verdict]], grid: Iterable[float] = FAST_P_GRID
) -> dict[str, Metrics]:
    """Metrics per level (`L1`, `L2`, ..., `other`) plus `overall`, in that order."""
    grid = tuple(grid)
    groups: dict[str, list[Verdict]] = {}
    for level, verdict in sorted(results, key=lambda r: (r[0] is None, r[0] or 0)):
        groups.setdefault(level_key(level), []).append(verdict)
    levels = {key: compute(vs, grid) for key, vs in groups.items()}
    if not levels:
        return {OVERALL: compute([], grid)}
    return {**levels, OVERALL: weighted_overall(list(levels.values()))}


def weighted_overall(levels: Sequence[Metrics]) -> Metrics:
    """Each metric as the task-count-weighted mean of the levels' values (None values skipped)."""
    grid = tuple(levels[0].fast_p_eager)
    rewards: Counter[int] = Counter()
    for m in levels:
        rewards.update(m.reward_counts)
    return Metrics(
        tasks=sum(m.tasks for m in levels),
        passed=sum(m.passed for m in levels),
        pass_rate=_weighted(levels, lambda m: m.pass_rate),
        faster_than_eager=_weighted(levels, lambda m: m.faster_than_eager),
        faster_than_eager_5pct=_weighted(levels, lambda m: m.faster_than_eager_5pct),
        faster_than_compile=_weighted(levels, lambda m: m.faster_than_compile),
        faster_than_compile_5pct=_weighted(levels, lambda m: m.faster_than_compile_5pct),
        geomean_vs_eager_correct=_weighted(levels, lambda m: m.geomean_vs_eager_correct),
        geomean_vs_compile_correct=_weighted(levels, lambda m: m.geomean_vs_compile_correct),
        geomean_vs_eager_all=_weighted(levels, lambda m: m.geomean_vs_eager_all),
        geomean_vs_compile_all=_weighted(levels, lambda m: m.geomean_vs_compile_all),
        fast_p_eager={p: _weighted(levels, lambda m, p=p: m.fast_p_eager[p]) for p in grid},
        fast_p_compile={p: _weighted(levels, lambda m, p=p: m.fast_p_compile[p]) for p in grid},
        reward_counts=dict(sorted(rewards.items())),
        mean_reward=_weighted(levels, lambda m: m.mean_reward),
    )


def fast_p_curve(verdicts: Sequence[Verdict], grid: Sequence[float], baseline: str) -> list[float]:
    """fast_p over `grid` against `eager` or `compile`, for plotting."""
    attr = {"eager": "speedup_vs_eager", "compile": "speedup_vs_compile"}[baseline]
    speedups = [getattr(v, attr) for v in verdicts if v.correct]
    return [_rate(_fast(speedups, p), len(verdicts)) for p in grid]


def geomean(values: Sequence[float]) -> float | None:
    """Geometric mean; None for no values."""
    if not values:
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))


def _rate(count: int, n: int) -> float:
    return count / n if n else 0.0


def _count_over(speedups: Iterable[float | None], threshold: float) -> int:
    return sum(1 for s in speedups if s is not None and s > threshold)


def _fast(speedups: Sequence[float | None], p: float) -> int:
    """fast_0 counts every correct solution (timed or not); fast_p for p > 0 needs a timing."""
    if p == 0:
        return len(speedups)
    return _count_over(speedups, p)


def _failures_as_one(correct_speedups: Sequence[float | None], n: int) -> list[float]:
    timed = [s for s in correct_speedups if s is not None]
    return timed + [1.0] * (n - len(timed))


def _weighted(levels: Sequence[Metrics], value) -> float | None:
    pairs = [(m.tasks, value(m)) for m in levels if value(m) is not None and m.tasks]
    total = sum(w for w, _ in pairs)
    return sum(w * v for w, v in pairs) / total if total else None
