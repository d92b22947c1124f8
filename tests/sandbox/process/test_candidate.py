"""The parent's handle on a candidate process: the child tells whose fault an error is, and
the parent maps that to a status."""

from __future__ import annotations

import multiprocessing
import os

import pytest
import torch

from cuda_agent.sandbox import Status
from cuda_agent.sandbox.process import child
from cuda_agent.sandbox.process.candidate import CandidateFailure, CandidateProcess
from cuda_agent.sandbox.process.messages import ChildError, ErrorKind

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
    failure = caught.value.failure
    assert failure.status == status and caught.value.out_of_memory is out_of_memory
    assert failure.message.startswith("call: OutOfMemoryError")
