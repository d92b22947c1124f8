"""The retry policy: which evaluations and which GPU work are tried again, alone.

Running out of GPU memory: whose fault it is decides the verdict. The candidate's process labels
the error (process/test_candidate.py); the Environment scores a candidate's out-of-memory as its
runtime error only on the try that held the GPU alone."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from cuda_agent.sandbox import EnvConfig, Environment, Stage, Status, read_solution, retry
from cuda_agent.sandbox.outcome import Head, to_verdict
from cuda_agent.sandbox.process.candidate import CandidateFailure
from cuda_agent.sandbox.verdict import Verdict
from cuda_agent.task import load_task

HERE = Path(__file__).parent
CHAIN = HERE / "solutions" / "elementwise_chain"
OOM = "CUDA out of memory. Tried to allocate 12.00 GiB. GPU 0 has a total capacity of 139.80 GiB"


@pytest.fixture()
def patched(tmp_path, monkeypatch, recorded_gpu_lock):
    """An Environment whose attempts fail as `failures` says, with the GPU lock recorded."""
    from cuda_agent.sandbox import environment as env_mod

    held, attempts = recorded_gpu_lock, []

    def run(failures):
        def evaluate(self, task, solution, stage, prebuilt, alone):
            attempts.append(held[-1] if held else None)
            err = failures[len(attempts) - 1]
            failure = retry.blame_out_of_memory(err.failure, err.out_of_memory, alone)
            return to_verdict(Head(task.name, task.hash, stage, None, "train"), failure, True)

        monkeypatch.setattr(env_mod.Environment, "_evaluate", evaluate)
        task = load_task("elementwise_chain")
        with Environment(EnvConfig(cache_dir=tmp_path)) as env:
            verdict = env.evaluate(
                task, read_solution(HERE / "solutions" / "elementwise_chain"), Stage.PROFILE
            )
        assert held == []
        return verdict

    return run, attempts


def test_the_candidate_out_of_memory_beside_others_is_tried_again_alone(patched):
    run, attempts = patched
    oom = CandidateFailure(Status.RUNTIME_ERROR, f"call: OutOfMemoryError: {OOM}", True)
    verdict: Verdict = run([oom, oom])
    assert attempts == [None, "exclusive"]
    assert verdict.status == Status.RUNTIME_ERROR and verdict.reward == -1
    assert "with no other evaluation running" in verdict.message


def test_an_out_of_memory_that_passes_alone_gets_the_verdict_of_the_second_try(patched):
    run, attempts = patched
    oom = CandidateFailure(Status.RUNTIME_ERROR, f"call: OutOfMemoryError: {OOM}", True)
    mismatch = CandidateFailure(Status.MISMATCH, "input set 2: max abs error 0.5")
    verdict = run([oom, mismatch])
    assert attempts == [None, "exclusive"] and verdict.status == Status.MISMATCH


def test_the_harness_out_of_memory_is_never_the_candidate_s_fault(patched):
    run, attempts = patched
    harness = CandidateFailure(Status.HARNESS_ERROR, f"ping: NaN fill: {OOM}", True)
    verdict = run([harness, harness])
    assert attempts == [None, "exclusive"] and verdict.status == Status.HARNESS_ERROR


def test_other_runtime_errors_are_not_tried_again(patched):
    run, attempts = patched
    crash = CandidateFailure(Status.RUNTIME_ERROR, "call: RuntimeError: illegal memory access")
    verdict = run([crash])
    assert attempts == [None] and verdict.status == Status.RUNTIME_ERROR
    assert verdict.message == "call: RuntimeError: illegal memory access"


def test_a_harness_out_of_memory_is_tried_again_holding_the_gpu_alone(
    tmp_path, monkeypatch, recorded_gpu_lock
):
    from cuda_agent.sandbox import environment as env_mod
    from cuda_agent.sandbox.verdict import Verdict

    task = load_task("elementwise_chain")
    statuses = iter([Status.HARNESS_ERROR, Status.OK])
    held = recorded_gpu_lock

    def evaluate(self, task, solution, stage, prebuilt, alone):
        status = next(statuses)
        return Verdict(task=task.name, task_hash=task.hash, stage=stage, status=status,
                       compiled=True, correct=status == Status.OK, reward=1,
                       message=f"under lock {held[-1] if held else None}")  # fmt: skip

    monkeypatch.setattr(env_mod.Environment, "_evaluate", evaluate)
    with Environment(EnvConfig(cache_dir=tmp_path)) as env:
        verdict = env.evaluate(task, read_solution(CHAIN), Stage.PROFILE)
    assert verdict.status == Status.OK and verdict.message == "under lock exclusive"
    assert held == []  # released


def test_untimed_gpu_work_out_of_memory_is_tried_again_holding_the_gpu_alone(
    tmp_path, recorded_gpu_lock
):
    """Baselines' compile and timing: a second try only after the first ran out of memory,
    holding the lock exclusively; an error other than out-of-memory is not retried."""
    held, calls = recorded_gpu_lock, []

    def work():
        calls.append(held[-1] if held else None)
        if len(calls) == 1:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 8.00 GiB")
        return 2.5

    released = []
    release = lambda: released.append(held[-1] if held else None)  # noqa: E731
    assert retry.again_alone_if_out_of_memory(work, None, release) == 2.5
    assert calls == [None, "exclusive"] and held == []
    assert released == [None, "exclusive"]  # before the second try, and inside it
    with pytest.raises(ValueError):
        retry.again_alone_if_out_of_memory(lambda: calls.append("other") or int("x"), None, release)
    assert calls[-1] == "other"  # tried once


def test_the_audit_out_of_memory_is_the_harness_s_and_tried_again(tmp_path, monkeypatch):
    """The audit runs the reference on the task's inputs beside other evaluations: running out
    of GPU memory there is harness_error (then evaluate_again_alone's second try)."""
    task = load_task("elementwise_chain")
    with Environment(EnvConfig(cache_dir=tmp_path)) as env:

        def audit(*args):
            raise torch.cuda.OutOfMemoryError(OOM)

        monkeypatch.setattr(env._trusted, "reference", lambda *args: None)
        monkeypatch.setattr(env._trusted, "audit", audit)
        head = Head(task.name, task.hash, Stage.PROFILE, None, "train")
        verdict = env._run(task, read_solution(CHAIN), None, Stage.PROFILE, head, False)
    assert verdict.status == Status.HARNESS_ERROR and verdict.reward == -1
    assert "the harness ran out of GPU memory" in verdict.message and OOM in verdict.message
