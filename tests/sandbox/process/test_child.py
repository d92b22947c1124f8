"""The candidate process's serving loop, over a real pipe: typed requests in, typed answers out,
an error typed and final."""

from __future__ import annotations

import multiprocessing
import sys
import threading

import torch

from cuda_agent.sandbox.process import child
from cuda_agent.sandbox.process.messages import (
    ChildError,
    ErrorKind,
    Load,
    Loaded,
    Stop,
    Stored,
    StoreSets,
)


def _serving(tmp_path):
    parent, child_end = multiprocessing.Pipe(duplex=True)
    state = child._State.__new__(child._State)
    state.device, state.flush, state.held, state.sets, state.model = "cpu", None, None, [], None
    thread = threading.Thread(target=child._serve, args=(child_end, state, tmp_path))
    thread.start()
    return parent, state, thread


def test_each_request_gets_its_own_answer_type_and_an_error_ends_the_loop(tmp_path):
    parent, state, thread = _serving(tmp_path)
    sets = [[torch.ones(2)], [torch.zeros(2)]]
    parent.send(StoreSets(sets))
    assert parent.recv() == Stored(2) and len(state.sets) == 2
    missing = str(tmp_path / "missing.so")
    parent.send(Load(missing, str(tmp_path / "model_new.py"), [], {}))
    error = parent.recv()
    assert isinstance(error, ChildError) and error.kind == ErrorKind.ERROR
    assert error.kind.status.value == "runtime_error" and not error.kind.out_of_memory
    thread.join(timeout=5)
    assert not thread.is_alive()  # the process exits after an error, never serves on


def test_an_interface_error_is_the_solutions_and_invalid(tmp_path, monkeypatch):
    for name in ("cuda_extension", "model_new"):  # the loop registers both; put back after
        monkeypatch.setitem(sys.modules, name, None)
    parent, state, thread = _serving(tmp_path)
    so = tmp_path / "ext.py"  # any importable file stands in for the extension here
    so.write_text("")
    entry = tmp_path / "model_new.py"
    entry.write_text("class Model: pass\n")
    parent.send(Load(str(so), str(entry), [], {}))
    error = parent.recv()
    assert error.kind == ErrorKind.INTERFACE and "defines no class ModelNew" in error.text
    assert error.kind.status.value == "invalid"
    thread.join(timeout=5)


MODELS = """import torch
from torch import nn

class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.fc = nn.Linear(n, 2)

class ModelNew(nn.Module):  # the same layer under another name
    def __init__(self, n):
        super().__init__()
        self.proj = nn.Linear(n, 2)
"""


def test_the_candidate_is_built_under_the_reference_s_seed(tmp_path, monkeypatch):
    """Built under the seed Model was built under, a ModelNew with other names holds Model's
    weights, and the answer's note says so."""
    for name in ("cuda_extension", "model_new"):
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setattr(child, "synchronize", lambda: None)  # the GPU fence: no GPU here
    parent, state, thread = _serving(tmp_path)
    so = tmp_path / "ext.py"
    so.write_text("")
    entry = tmp_path / "model_new.py"
    entry.write_text(MODELS)
    namespace: dict = {}
    exec(MODELS, namespace)
    torch.manual_seed(1234)
    reference = namespace["Model"](3).state_dict()
    torch.manual_seed(99)  # the child must not build under whatever seed its process holds
    parent.send(Load(str(so), str(entry), [3], reference, seed=1234))
    answer = parent.recv()
    assert isinstance(answer, Loaded) and len(answer.notes) == 1
    assert "built under Model's seed" in answer.notes[0]
    assert torch.equal(state.model.proj.weight.detach(), reference["fc.weight"])
    parent.send(Stop())
    thread.join(timeout=5)
    assert not thread.is_alive()
