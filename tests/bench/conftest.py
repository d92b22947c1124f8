"""Crafted verdicts for the bench tests (real Verdict records, values chosen by hand)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cuda_agent.sandbox import (
    EnvConfig,
    Environment,
    Solution,
    Stage,
    Status,
    Verdict,
    milestone_reward,
    read_solution,
    solution_from_files,
)
from cuda_agent.task import content_hash, load_task


def verdict(
    name: str,
    correct: bool = False,
    eager: float | None = None,
    compile_: float | None = None,
    status: Status | None = None,
    stage: Stage = Stage.PROFILE,
    **extra,
) -> Verdict:
    """A verdict whose reward follows the milestone rule; times from speed-ups of a 1 ms run."""
    status = status or (Status.OK if correct else Status.MISMATCH)
    timed = correct and eager is not None
    return Verdict(
        task=name,
        task_hash=content_hash(name),
        stage=stage,
        status=status,
        compiled=status not in (Status.COMPILE_ERROR, Status.INVALID),
        correct=correct,
        candidate_ms=1.0 if timed else None,
        eager_ms=eager if timed else None,
        compile_ms=compile_ if timed else None,
        speedup_vs_eager=eager if correct else None,
        speedup_vs_compile=compile_ if correct else None,
        reward=milestone_reward(correct, eager, compile_),
        **extra,
    )


FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "solutions"
GOOD = ("row_sum_squares", "elementwise_chain")  # builtin tasks with an honest fixture


def broken(solution: Solution) -> Solution:
    """The solution with a syntax error in each .cu file: a compile error, nothing else."""
    files = {
        p: t + "\nthis is not CUDA;\n" if p.endswith(".cu") else t
        for p, t in solution.files.items()
    }
    return solution_from_files(files)


@pytest.fixture(scope="session")
def env_config(tmp_path_factory) -> EnvConfig:
    """One build cache for the bench tests (CUDA_AGENT_TEST_CACHE shares it with the other test
    packages); a build limit for a busy 2-core machine, where torch's headers take minutes."""
    cache = os.environ.get("CUDA_AGENT_TEST_CACHE") or tmp_path_factory.mktemp("bench-cache")
    return EnvConfig(cache_dir=Path(cache), build_timeout_s=1800.0)


@pytest.fixture(scope="session")
def built(env_config) -> EnvConfig:
    """`env_config` whose cache already holds the honest fixtures' builds (compiled here once,
    under the long time limit), so later builds of them, even in subprocesses, are cache hits."""
    with Environment(env_config) as env:
        for name in GOOD:
            result = env.build(load_task(name), read_solution(FIXTURES / name))
            assert result.ok, result.log
    return env_config
