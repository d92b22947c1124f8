"""The null-kernel battery: can the check tell the reference from a trivial output?

Run once per task (and torch version, tolerance), cached. For each input distribution in turn it
draws a few sets, computes the reference, and tries trivial answers: zeros, ones, a constant,
the output of another input set (what a stale buffer holds), and each input passed through. The
first distribution under which the reference is finite and no trivial answer passes is the one
verdicts are checked on; if there is none, the task is degenerate.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from pydantic import BaseModel

from cuda_agent.sandbox.compare import as_tensors, compare
from cuda_agent.sandbox.inputs import DISTRIBUTIONS, draw_inputs, secret_seed


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

    @property
    def redrawn(self) -> bool:
        return self.distribution != "task"


def run_battery(reference, device, atol: float, rtol: float, sets: int = 3) -> AuditRecord:
    passing: dict[str, list[str]] = {}
    nonfinite: list[str] = []
    chosen = None
    for dist in DISTRIBUTIONS:
        inputs = [draw_inputs(reference.program, dist, secret_seed(), device) for _ in range(sets)]
        outputs = [reference(*s) for s in inputs]
        if not all(
            bool(torch.isfinite(t).all())
            for o in outputs
            for t in as_tensors(o)
            if t.is_floating_point()
        ):
            nonfinite.append(dist)
            continue
        passing[dist] = [
            name
            for name, fake in _trivial_answers(inputs, outputs)
            if all(compare(o, f, atol, rtol).ok for o, f in zip(outputs, fake, strict=True))
        ]
        if not passing[dist]:
            chosen = dist
            break
    degenerate = chosen is None
    if degenerate:
        chosen = next((d for d in DISTRIBUTIONS if d not in nonfinite), DISTRIBUTIONS[0])
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
    )


def _trivial_answers(inputs: list[list], outputs: list):
    flat = [as_tensors(o) for o in outputs]
    floats = [t.float().flatten() for f in flat for t in f if t.is_floating_point()]
    overall = float(torch.cat(floats).mean()) if floats else 0.0
    yield "zeros", [[torch.zeros_like(t) for t in f] for f in flat]
    yield "ones", [[torch.ones_like(t) for t in f] for f in flat]
    yield "constant", [[torch.full_like(t, overall) for t in f] for f in flat]
    yield (
        "per-set constant",
        [[torch.full_like(t, float(t.float().mean())) for t in f] for f in flat],
    )
    if len(flat) > 1:
        yield "another set's output", [flat[(i + 1) % len(flat)] for i in range(len(flat))]
    if len(flat[0]) == 1:
        out = flat[0][0]
        for k, x in enumerate(inputs[0]):
            if isinstance(x, torch.Tensor) and x.shape == out.shape and x.dtype == out.dtype:
                yield f"input {k} itself", [[s[k]] for s in inputs]


def load_audit(path: Path) -> AuditRecord | None:
    try:
        return AuditRecord.model_validate(json.loads(path.read_text()))
    except (OSError, ValueError):
        return None
