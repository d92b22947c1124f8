"""The candidate process: loads the extension and ModelNew, runs what the parent asks, nothing else.

It is forked from the warm forkserver, confines itself before touching candidate code, and
answers one command at a time over its pipe. It never sees the reference program, the reference
outputs or the seeds; its answers are outputs and times that the parent checks.
"""

from __future__ import annotations

import gc
import importlib.util
import os
import sys
import tempfile
import time
import traceback
from functools import partial
from pathlib import Path

import torch

from cuda_agent.sandbox.check.inputs import copy_inputs
from cuda_agent.sandbox.guard.runtime import trace_forward
from cuda_agent.sandbox.process.confinement import apply_confinement
from cuda_agent.sandbox.process.messages import (
    Answer,
    Call,
    ChildError,
    Done,
    DropOutput,
    ErrorKind,
    Load,
    Loaded,
    LoadSingleFile,
    Ping,
    Ready,
    Request,
    Stop,
    Stored,
    StoreSets,
    Timed,
    Verified,
    Verify,
    Warmup,
)
from cuda_agent.sandbox.process.model_state import StateMismatch, adopt_state
from cuda_agent.sandbox.single_file.child_load import EntryPointMissing, asker, import_entry
from cuda_agent.sandbox.timing.call import L2Flusher, synchronize, timed_call
from cuda_agent.sandbox.timing.gpu_work import GpuTraceTampered, start_recording_once

_no_grad = torch.no_grad
_manual_seed = torch.manual_seed
_fill = torch.Tensor.fill_
_empty = torch.empty  # bound before candidate code can patch torch's names
_OutOfMemoryError = torch.cuda.OutOfMemoryError


def candidate_main(conn, workdir: str, device_index: int) -> None:
    began = time.time()
    os.setsid()
    root = Path(workdir)
    log = os.open(root / "child.log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(log, 1)
    os.dup2(log, 2)
    device = torch.device("cuda", device_index)
    torch.cuda.set_device(device)
    torch.empty(1, device=device)  # the context exists before confinement closes files off
    stamps = {"fork": began, "cuda": time.time()}
    profiler = _start_profiler(device)
    stamps["kernel_trace"] = time.time()
    layers = {**apply_confinement(root, no_processes=True), "kernel_trace": profiler}
    tempfile.tempdir = None
    sys.dont_write_bytecode = True
    sys.path[:] = [p for p in sys.path if p not in ("", ".", str(root))]
    stamps["confinement"] = time.time()
    conn.send(Ready(layers, stamps))
    state = _State(device, conn)
    try:
        _serve(conn, state, root)
    finally:
        state.release()


def _serve(conn, state: _State, root: Path) -> None:
    while True:
        try:
            request = conn.recv()
        except (EOFError, OSError):
            return
        if isinstance(request, Stop):
            return
        try:
            answer = state.handle(request)
        except BaseException as err:  # SystemExit from candidate code is an error, not an exit
            conn.send(_describe(err, root))
            return
        del request
        conn.send(answer)
        del answer


class _State:
    def __init__(self, device: torch.device, conn):
        self.device = device
        self.conn = conn  # a single-file submission's extension builds are asked over it
        self.model = None
        self.sets: list = []
        self.held = None  # the last timed output, kept alive until the next command
        self.flush = L2Flusher(device)

    def release(self) -> None:
        """Drop every tensor received from the parent before exiting. The parent's CUDA IPC
        blocks are freed only once this process lets go of them, which exiting without
        collecting never does."""
        self.sets, self.held, self.model = [], None, None
        gc.collect()
        try:
            synchronize()
        except Exception:  # a context broken by the candidate: nothing more to hand back
            pass

    def handle(self, request: Request) -> Answer:
        """The answer to one request (its own type's: see messages.py)."""
        match request:
            case Load():
                return self.load(request)
            case LoadSingleFile():
                return self.load_single_file(request)
            case Verify():
                return self.verify(request)
            case StoreSets():
                return self.store_sets(request)
            case Warmup():
                return self.warmup(request)
            case DropOutput():
                return self.drop_output()
            case Ping():
                return self.ping(request)
            case Call():
                return self.call(request)
        raise TypeError(f"unknown request {type(request).__name__}")

    def load(self, job: Load) -> Loaded:
        spec = importlib.util.spec_from_file_location("cuda_extension", job.so_path)
        ext = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(ext)
        sys.modules["cuda_extension"] = ext
        spec = importlib.util.spec_from_file_location("model_new", job.entry_path)
        module = importlib.util.module_from_spec(spec)
        sys.modules["model_new"] = module
        spec.loader.exec_module(module)
        if not hasattr(module, "ModelNew"):
            raise _InterfaceError("model_new.py defines no class ModelNew")
        return self._construct(module.ModelNew, job)

    def load_single_file(self, job: LoadSingleFile) -> Loaded:
        """Import a single-file submission with its extension builds answered by the parent."""
        try:
            cls = import_entry(job.entry_path, job.entry_point, asker(self.conn))
        except EntryPointMissing as err:
            raise _InterfaceError(str(err)) from None
        return self._construct(cls, job)

    def _construct(self, cls, job: Load | LoadSingleFile) -> Loaded:
        name = cls.__name__
        if job.seed is not None:  # as Model was built: the same weights where built the same way
            _manual_seed(job.seed)
        try:
            model = cls(*job.init_inputs)
        except TypeError as err:
            raise _InterfaceError(
                f"{name}(*get_init_inputs()) failed: {err}; {name} takes Model's arguments"
            ) from None
        model = model.to(self.device)
        if job.eval_mode:
            model.eval()
        try:
            note = adopt_state(model, job.state_dict, name)
        except StateMismatch as err:
            raise _InterfaceError(str(err)) from None
        self.model = model
        synchronize()  # GPU work started by the constructor ends inside the parent's lock
        return Loaded((note,) if note else ())

    def verify(self, job: Verify) -> Verified:
        outputs, traces = [], []
        with _no_grad():
            for i, inputs in enumerate(job.sets):
                _poison(job.poison_bytes, self.device)
                out, trace = trace_forward(self.model, inputs, with_kernels=i == job.profile_at)
                outputs.append(out)
                traces.append(trace)
        return Verified(outputs, traces)

    def store_sets(self, job: StoreSets) -> Stored:
        self.sets = job.sets
        return Stored(len(job.sets))

    def warmup(self, job: Warmup) -> Done:
        with _no_grad():
            for inputs in job.sets:
                self.model(*inputs)
        synchronize()
        return Done()

    def drop_output(self) -> Done:
        """Free the last timed output (shared with the parent), outside either request of a
        call and its ping: freeing a large one inside whichever came next cost up to 16 ms on
        the H200 and made the pair's difference useless for the parent's check."""
        self.held = None
        return Done()

    def ping(self, job: Ping) -> Timed:
        """A call with the harness's own no-op as forward: the parent's measure of what a call
        costs around the timed region."""
        self.held = None
        _poison(job.poison_bytes, self.device)
        out, times = timed_call(partial(_empty, 1, device=self.device), [], self.flush)
        self.held = out
        return Timed(out, times)

    def call(self, job: Call) -> Timed:
        """One timed call on set `index`, after an untimed one on set `warm_index` (already
        timed, so nothing to precompute) when given, and then, with `refill_from`, that set's
        new content copied in from the staging set (only after the untimed call, which could
        otherwise compute on it). `warm_ms` is the host time of both, which the parent's round
        trip includes and the timed call's figures do not."""
        self.held = None
        start = time.perf_counter()
        with _no_grad():
            if job.warm_index is not None:
                self.model(*self.sets[job.warm_index])
                synchronize()
            if job.refill_from is not None:
                copy_inputs(self.sets[job.index], self.sets[job.refill_from])
                synchronize()
            warm_ms = (time.perf_counter() - start) * 1e3
            _poison(job.poison_bytes, self.device)
            out, times = timed_call(self.model, self.sets[job.index], self.flush)
        self.held = out
        return Timed(out, times, warm_ms)


def _start_profiler(device: torch.device) -> bool:
    """Start the GPU trace that verification's kernel check and the timed calls read, before
    confinement (CUPTI's start-up opens files).

    One run of torch's profiler object here puts its one-time set-up in the process's start,
    beside the round's build, not in the round's verification; the fork server has already
    imported the torch modules that set-up would import (fork_server.PRELOAD, docs/verdict.md)."""
    if not start_recording_once(device):
        return False
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]):
        torch.ones(1, device=device).add_(1)
        synchronize()
    return True


class _InterfaceError(Exception):
    """ModelNew does not have Model's constructor or state_dict."""


class _HarnessOutOfMemory(Exception):
    """The harness's own allocation in this process ran out of GPU memory: no fault of the
    candidate's (other evaluations on the GPU hold theirs)."""


def _poison(nbytes: int, device: torch.device) -> None:
    """Fill memory the allocator will hand out next with NaN: unwritten outputs then fail."""
    if nbytes > 0:
        try:
            block = _empty(nbytes // 4 + 1, dtype=torch.float32, device=device)
        except _OutOfMemoryError as err:
            raise _HarnessOutOfMemory(
                f"the harness's NaN fill of {nbytes / 2**30:.2f} GiB before the call: "
                f"{str(err).splitlines()[0]}"
            ) from None
        _fill(block, float("nan"))
        del block


def _describe(err: BaseException, root: Path) -> ChildError:
    """The error, whose fault it is (see ErrorKind), and the candidate's own frames (not the
    harness's)."""
    kind = ErrorKind.ERROR
    for cls, label in (
        (GpuTraceTampered, ErrorKind.TAMPER),
        (_InterfaceError, ErrorKind.INTERFACE),
        (_HarnessOutOfMemory, ErrorKind.HARNESS),
        (_OutOfMemoryError, ErrorKind.OOM),
    ):
        if isinstance(err, cls):
            kind = label
            break
    frames = [f for f in traceback.extract_tb(err.__traceback__) if str(root) in f.filename]
    where = "".join(
        f"  {Path(f.filename).name}:{f.lineno} in {f.name}: {f.line}\n" for f in frames[-4:]
    )
    text = f"{type(err).__name__}: {err}".strip()
    return ChildError(kind, f"{text[:2000]}\n{where}".rstrip())
