"""Running out of GPU memory: whose fault it is decides the verdict.

The candidate's process labels the error (the harness's own allocation, or the candidate's
code); the parent maps the label to a status; the Environment scores a candidate's
out-of-memory as its runtime error only on the try that held the GPU alone."""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path

import pytest
import torch

from cuda_agent.sandbox import EnvConfig, Environment, Stage, Status, read_solution
from cuda_agent.sandbox.process import child
from cuda_agent.sandbox.process.candidate import CandidateFailure, CandidateProcess
from cuda_agent.sandbox.process.messages import ChildError, ErrorKind
from cuda_agent.sandbox.verdict import Verdict
from cuda_agent.task import load_task

HERE = Path(__file__).parent
OOM = "CUDA out of memory. Tried to allocate 12.00 GiB. GPU 0 has a total capacity of 139.80 GiB"


def test_the_child_labels_the_harness_and_the_candidate_running_out_apart(monkeypatch, tmp_path):
    def no_room(*args, **kwargs):
        raise torch.cuda.OutOfMemoryError(OOM)

    monkeypatch.setattr(child, "_empty", no_room)
    with pytest.raises(child._HarnessOutOfMemory) as caught:
        child._poison(12 * 2**30, torch.device("cpu"))
    error = child._describe(caught.value, tmp_path)
    assert error.kind == ErrorKind.HARNESS
    assert "NaN fill of 12.00 GiB" in error.text and "Tried to allocate" in error.text

    assert child._describe(torch.cuda.OutOfMemoryError(OOM), tmp_path).kind == ErrorKind.OOM
    assert child._describe(RuntimeError("illegal memory access"), tmp_path).kind == ErrorKind.ERROR
    interface = child._describe(child._InterfaceError("no ModelNew"), tmp_path)
    assert interface.kind == ErrorKind.INTERFACE and interface.text.startswith("_InterfaceError")
    child._poison(0, torch.device("cpu"))  # nothing to fill: no allocation at all


class _Alive:
    pid = os.getpid()

    def is_alive(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("kind", "status", "out_of_memory"),
    [
        (ErrorKind.OOM, Status.RUNTIME_ERROR, True),
        (ErrorKind.HARNESS, Status.HARNESS_ERROR, True),
        (ErrorKind.ERROR, Status.RUNTIME_ERROR, False),
        (ErrorKind.INTERFACE, Status.INVALID, False),
        (ErrorKind.TAMPER, Status.VIOLATION, False),
    ],
)
def test_the_parent_maps_each_kind_to_a_status(tmp_path, kind, status, out_of_memory):
    parent_end, child_end = multiprocessing.Pipe(duplex=True)
    proc = object.__new__(CandidateProcess)
    proc.conn, proc.proc, proc.workdir, proc.memory_mb, proc.timeout_s = (
        parent_end, _Alive(), tmp_path, None, 5.0
    )  # fmt: skip
    child_end.send(ChildError(kind, f"OutOfMemoryError: {OOM}"))
    with pytest.raises(CandidateFailure) as caught:
        proc._receive("call", 5.0, watch_memory=False)
    assert caught.value.status == status and caught.value.out_of_memory is out_of_memory
    assert caught.value.message.startswith("call: OutOfMemoryError")


@pytest.fixture()
def patched(tmp_path, monkeypatch, recorded_gpu_lock):
    """An Environment whose attempts fail as `failures` says, with the GPU lock recorded."""
    from cuda_agent.sandbox import environment as env_mod

    held, attempts = recorded_gpu_lock, []

    def run(failures):
        def evaluate(self, task, solution, stage, prebuilt):
            attempts.append(held[-1] if held else None)
            base = {"task": task.name, "task_hash": task.hash, "stage": stage, "seconds": {}}
            return self._candidate_failure(base, {}, failures[len(attempts) - 1])

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
