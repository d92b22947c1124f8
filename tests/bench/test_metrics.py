"""Metrics against values computed by hand (the arithmetic is written next to each check)."""

from __future__ import annotations

import math

import pytest

from cuda_agent.bench.metrics import OVERALL, by_level, compute, geomean
from cuda_agent.sandbox import Stage, Status
from tests.bench.conftest import verdict

# Level 1: four tasks.
#   a: correct, 2.0x eager, 1.5x compile   -> reward 3
#   b: correct, 1.02x eager, 0.5x compile  -> reward 1 (1.02 is faster, but not > 5 %)
#   c: correct, 0.5x eager, 0.25x compile  -> reward 1
#   d: compile error                       -> reward -1
L1 = [
    verdict("a", True, 2.0, 1.5),
    verdict("b", True, 1.02, 0.5),
    verdict("c", True, 0.5, 0.25),
    verdict("d", status=Status.COMPILE_ERROR),
]
# Level 2: two tasks.
#   e: correct, 4.0x eager, 2.0x compile   -> reward 3
#   f: mismatch                            -> reward -1
L2 = [verdict("e", True, 4.0, 2.0), verdict("f")]


def approx(x):
    return pytest.approx(x, rel=1e-9)


def test_level_one_by_hand():
    m = compute(L1)
    assert m.tasks == 4 and m.passed == 3
    assert m.pass_rate == approx(3 / 4)
    assert m.faster_than_eager == approx(2 / 4)  # a (2.0) and b (1.02) are > 1
    assert m.faster_than_eager_5pct == approx(1 / 4)  # only a is > 1.05
    assert m.faster_than_compile == approx(1 / 4)  # only a (1.5)
    assert m.faster_than_compile_5pct == approx(1 / 4)
    # correct only: (2.0 * 1.02 * 0.5) ** (1/3) = 1.02 ** (1/3)
    assert m.geomean_vs_eager_correct == approx(1.02 ** (1 / 3))
    # all, d counting 1.0x: (2.0 * 1.02 * 0.5 * 1.0) ** (1/4) = 1.02 ** (1/4)
    assert m.geomean_vs_eager_all == approx(1.02 ** (1 / 4))
    # (1.5 * 0.5 * 0.25) = 0.1875
    assert m.geomean_vs_compile_correct == approx(0.1875 ** (1 / 3))
    assert m.geomean_vs_compile_all == approx(0.1875 ** (1 / 4))
    assert m.reward_counts == {-1: 1, 1: 2, 3: 1}
    assert m.mean_reward == approx((3 + 1 + 1 - 1) / 4)


def test_fast_p_by_hand():
    m = compute(L1)
    assert m.fast_p_eager[0.0] == approx(3 / 4)  # fast_0: every correct solution
    assert m.fast_p_eager[0.5] == approx(2 / 4)  # a, b (c's 0.5 is not > 0.5)
    assert m.fast_p_eager[1.0] == approx(2 / 4)  # fast_1: a, b
    assert m.fast_p_eager[1.05] == approx(1 / 4)  # a
    assert m.fast_p_eager[2.0] == approx(0.0)  # a's 2.0 is not > 2.0
    assert m.fast_p_compile[0.0] == approx(3 / 4)
    assert m.fast_p_compile[0.5] == approx(1 / 4)  # a's 1.5 (b's 0.5 is not > 0.5)
    assert m.fast_p_compile[1.0] == approx(1 / 4)


def test_overall_weights_levels_by_task_count():
    scores = by_level([(1, v) for v in L1] + [(2, v) for v in L2])
    assert list(scores) == ["L1", "L2", OVERALL]
    l2 = scores["L2"]
    assert l2.pass_rate == approx(1 / 2)
    assert l2.geomean_vs_eager_correct == approx(4.0)
    assert l2.geomean_vs_eager_all == approx(math.sqrt(4.0 * 1.0))
    overall = scores[OVERALL]
    assert overall.tasks == 6
    # rates: (4 * 3/4 + 2 * 1/2) / 6 = 4/6, the pooled rate
    assert overall.pass_rate == approx(4 / 6)
    # faster than compile: (4 * 1/4 + 2 * 1/2) / 6 = 2/6
    assert overall.faster_than_compile == approx(2 / 6)
    # geomeans: (4 * 1.02**(1/3) + 2 * 4.0) / 6
    assert overall.geomean_vs_eager_correct == approx((4 * 1.02 ** (1 / 3) + 2 * 4.0) / 6)
    # (4 * 1.02**(1/4) + 2 * 2.0) / 6
    assert overall.geomean_vs_eager_all == approx((4 * 1.02 ** (1 / 4) + 2 * 2.0) / 6)
    # fast_1 vs eager: (4 * 2/4 + 2 * 1/2) / 6 = 3/6
    assert overall.fast_p_eager[1.0] == approx(3 / 6)
    assert overall.reward_counts == {-1: 2, 1: 2, 3: 2}
    assert overall.mean_reward == approx((4 * 1.0 + 2 * 1.0) / 6)


def test_correct_but_untimed_counts_as_correct_only():
    """A solution verified but not profiled: it passes, is not faster, and counts 1.0x in 'all'."""
    scores = compute([verdict("v", True, stage=Stage.VERIFY), verdict("w", True, 3.0, 3.0)])
    assert scores.pass_rate == approx(1.0)
    assert scores.faster_than_eager == approx(1 / 2)
    assert scores.fast_p_eager[0.0] == approx(1.0)
    assert scores.geomean_vs_eager_correct == approx(3.0)  # only the timed one
    assert scores.geomean_vs_eager_all == approx(math.sqrt(3.0 * 1.0))


def test_tasks_without_level_and_empty_groups():
    scores = by_level([(None, verdict("x")), (3, verdict("y", True, 1.2, 0.9))])
    assert list(scores) == ["L3", "other", OVERALL]
    assert scores["other"].pass_rate == 0.0
    assert scores["other"].geomean_vs_eager_correct is None
    # overall geomean over correct skips the level without one: only L3's 1.2 is left
    assert scores[OVERALL].geomean_vs_eager_correct == approx(1.2)
    assert by_level([])[OVERALL].tasks == 0
    assert geomean([]) is None
