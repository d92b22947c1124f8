"""The null-kernel battery: can the check tell the reference from a trivial output?

Run once per task and module mode (and torch version, tolerance), cached. For each input
distribution in turn it draws a few sets, computes the reference, and tries trivial answers:
zeros, ones, a constant (the first set's mean), each set's own mean, the previous set's output
(what a stale buffer holds), and each input passed through. The first distribution under which
the reference is finite and no trivial answer passes is the one verdicts are checked on; if there
is none, the task is degenerate.

The mode matters: a BatchNorm in eval mode with fresh running statistics is close to the
identity, so a task whose training-mode check is sound may let its input pass through unchanged
in eval mode.

The record also says whether the task is launch-bound (timing/method.py): the host's time to
issue a reference call against the GPU's busy time of it, over a few calls on the chosen inputs.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import torch
from pydantic import BaseModel

from cuda_agent.sandbox.check.compare import as_tensors, compare
from cuda_agent.sandbox.check.inputs import DISTRIBUTIONS, draw_inputs, secret_seed
from cuda_agent.sandbox.timing.call import L2Flusher, timed_call
from cuda_agent.sandbox.timing.method import is_launch_bound


class AuditRecord(BaseModel):
    task: str
    task_hash: str
    torch_version: str
    atol: float
    rtol: float
    distribution: str  # the one verdicts use
    degenerate: bool
    passing: dict[str, list[str]]  # distribution -> trivial answers that pass under it
    nonfinite: list[str]  # distributions under which the reference is not finite
    module_mode: str = "train"  # the reference's mode (module_mode.py) the battery ran in
    # the reference's host time to issue a call and its GPU busy time (medians, ms), and whether
    # the first is well above the second (None: not measured, a record older than the fields)
    launch_ms: float | None = None
    busy_ms: float | None = None
    launch_bound: bool | None = None
    # GPU memory one reference call holds at its peak: its inputs, outputs and workspace (None:
    # not measured; the evaluation's admission, admission.py, then has no estimate)
    call_bytes: int | None = None

    @property
    def redrawn(self) -> bool:
        return self.distribution != "task"


def run_battery(reference, device, atol: float, rtol: float, sets: int = 3) -> AuditRecord:
    passing: dict[str, list[str]] = {}
    nonfinite: list[str] = []
    chosen = None
    for dist in DISTRIBUTIONS:
        survivors = _battery(reference, dist, device, atol, rtol, sets)
        if survivors is None:
            nonfinite.append(dist)
            continue
        passing[dist] = survivors
        if not survivors:
            chosen = dist
            break
    degenerate = chosen is None
    if degenerate:
        chosen = next((d for d in DISTRIBUTIONS if d not in nonfinite), DISTRIBUTIONS[0])
    launch_ms, busy_ms, call_bytes = _call_facts(reference, chosen, device)
    return AuditRecord(
        task=reference.task.name,
        task_hash=reference.task.hash,
        torch_version=torch.__version__,
        atol=atol,
        rtol=rtol,
        distribution=chosen,
        degenerate=degenerate,
        passing=passing,
        nonfinite=nonfinite,
        module_mode=reference.module_mode,
        launch_ms=launch_ms,
        busy_ms=busy_ms,
        launch_bound=None if busy_ms is None else is_launch_bound(launch_ms, busy_ms),
        call_bytes=call_bytes,
    )


def _call_facts(reference, dist, device, calls: int = 5) -> tuple:
    """(launch_ms, busy_ms, call_bytes): the medians of the host's time to issue a reference call
    and of the GPU's busy time of it, timed as the verdict's calls are, and the GPU memory the
    call holds at its peak (all None where there is no GPU; busy None where its work left no
    trace)."""
    if torch.device(device).type != "cuda":
        return None, None, None
    before = torch.cuda.memory_allocated(device)
    inputs = draw_inputs(reference.program, dist, secret_seed(), device)
    torch.cuda.reset_peak_memory_stats(device)
    reference(*inputs)  # the first of the warm-up of a timing
    call_bytes = torch.cuda.max_memory_allocated(device) - before
    flush = L2Flusher(device)
    reference(*inputs)
    times = [timed_call(reference, inputs, flush)[1] for _ in range(calls)]
    busy = [t.busy_ms for t in times]
    launch = statistics.median(t.launch_ms for t in times)
    return launch, (statistics.median(busy) if None not in busy else None), call_bytes


def _battery(reference, dist, device, atol, rtol, sets) -> list[str] | None:
    """The trivial answers that pass on every one of `sets` input sets drawn from `dist` (None
    where the reference is not finite). One set is held at a time, with the previous set's
    output (the stale-buffer answer), so a task with multi-GB outputs fits beside the reference."""
    alive: dict[str, bool] = {}
    previous, first_mean = None, None
    for _ in range(sets):
        inputs = draw_inputs(reference.program, dist, secret_seed(), device)
        outputs = as_tensors(reference(*inputs))
        if not all(bool(torch.isfinite(t).all()) for t in outputs if t.is_floating_point()):
            return None
        if first_mean is None:
            first_mean = _mean(outputs)
        for name, fake in _trivial_answers(inputs, outputs, previous, first_mean):
            if alive.get(name, True):
                alive[name] = compare(outputs, fake, atol, rtol).ok
            del fake
        previous = outputs
        del inputs
    return [name for name, ok in alive.items() if ok]


def _mean(tensors: list[torch.Tensor]) -> float:
    floats = [t for t in tensors if t.is_floating_point()]
    count = sum(t.numel() for t in floats)
    return sum(float(t.sum(dtype=torch.float64)) for t in floats) / count if count else 0.0


def _trivial_answers(inputs: list, outputs: list[torch.Tensor], previous, first_mean: float):
    """(name, fake output) for one input set; `previous` is the last set's output or None."""
    yield "zeros", [torch.zeros_like(t) for t in outputs]
    yield "ones", [torch.ones_like(t) for t in outputs]
    yield "constant", [torch.full_like(t, first_mean) for t in outputs]
    yield "per-set constant", [torch.full_like(t, _mean([t])) for t in outputs]
    if previous is not None:
        yield "another set's output", previous
    if len(outputs) == 1:
        out = outputs[0]
        for k, x in enumerate(inputs):
            if isinstance(x, torch.Tensor) and x.shape == out.shape and x.dtype == out.dtype:
                yield f"input {k} itself", [x]


def load_audit(path: Path) -> AuditRecord | None:
    """The cached record, or None: none, unreadable, or measured on a GPU before call_bytes
    was (the audit is run again, so that every task has its admission estimate)."""
    try:
        record = AuditRecord.model_validate(json.loads(path.read_text()))
    except (OSError, ValueError):
        return None
    return None if record.launch_ms is not None and record.call_bytes is None else record
