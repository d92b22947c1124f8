"""The best solution of an episode: highest reward, then fastest; the latest authoritative
verdict of a solution counts."""

from __future__ import annotations

from cuda_agent.agent import Workbench, new_workspace
from cuda_agent.sandbox import Stage, Status, Verdict, milestone_reward, solution_from_files


def solution(tag: str):
    return solution_from_files({"model_new.py": f"# {tag}\n"})


def verdict(task, stage: Stage, correct: bool, ms: float | None = None, eager: float = 2.0):
    speedup = eager / ms if ms is not None else None
    return Verdict(
        task=task.name,
        task_hash=task.hash,
        stage=stage,
        status=Status.OK if correct else Status.MISMATCH,
        compiled=True,
        correct=correct,
        candidate_ms=ms,
        eager_ms=eager if ms is not None else None,
        compile_ms=eager if ms is not None else None,
        speedup_vs_eager=speedup,
        speedup_vs_compile=speedup,
        reward=milestone_reward(correct, speedup, speedup),
    )


def test_best_is_highest_reward_then_fastest(task, tmp_path, environment):
    bench = Workbench(task, new_workspace(task, tmp_path / "ws"), environment)
    a, b, c, d = (solution(t) for t in "abcd")
    assert not bench.consider(a, verdict(task, Stage.COMPILE, correct=False))
    assert bench.best is None  # compiled is not verified
    assert bench.consider(a, verdict(task, Stage.VERIFY, correct=True))
    assert bench.best.solution == a and bench.best.verdict.reward == 1
    assert bench.consider(b, verdict(task, Stage.PROFILE, correct=True, ms=1.5))  # reward 3
    assert bench.consider(c, verdict(task, Stage.PROFILE, correct=True, ms=1.0))  # faster
    assert bench.best.solution == c
    assert not bench.consider(d, verdict(task, Stage.PROFILE, correct=True, ms=1.95))  # reward 1
    assert not bench.consider(d, verdict(task, Stage.PROFILE, correct=False))
    assert bench.best.solution == c


def test_a_later_verdict_of_the_same_solution_replaces_the_earlier(task, tmp_path, environment):
    bench = Workbench(task, new_workspace(task, tmp_path / "ws"), environment)
    b, c = solution("b"), solution("c")
    bench.consider(b, verdict(task, Stage.PROFILE, correct=True, ms=1.5))
    bench.consider(c, verdict(task, Stage.PROFILE, correct=True, ms=1.0))
    # a compile verdict says less than the profile already seen: it does not demote c
    assert not bench.consider(c, verdict(task, Stage.COMPILE, correct=False))
    assert bench.best.solution == c
    # c fails when profiled again on fresh inputs: it is no longer the answer
    assert bench.consider(c, verdict(task, Stage.PROFILE, correct=False))
    assert bench.best.solution == b


def test_a_harness_error_never_replaces_a_known_verdict(task, tmp_path, environment):
    bench = Workbench(task, new_workspace(task, tmp_path / "ws"), environment)
    a = solution("a")
    bench.consider(a, verdict(task, Stage.VERIFY, correct=True))
    failed = verdict(task, Stage.PROFILE, correct=False).model_copy(
        update={"status": Status.HARNESS_ERROR, "reward": -1}
    )
    assert not bench.consider(a, failed)  # profiling at the end ran out of GPU memory
    assert bench.best.solution == a and bench.best.verdict.reward == 1
    b = solution("b")
    assert not bench.consider(b, failed)  # unknown before: recorded, but it is not correct
    assert bench.best.solution == a
