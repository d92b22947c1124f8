"""Whether an evaluation starts beside the others on its GPU, or alone.

Workers that share a GPU each hold an evaluation's inputs, reference outputs and candidate
process at once. An evaluation whose GPU memory would not fit in what is free when it starts
waits instead for the GPU's lock held exclusively (retry.py's "alone"): then no other process is
inside a section of GPU work, each having freed what its sections cached, and the evaluation
runs with the memory the others do not hold for good. What it waited is in the verdict's
`seconds["gpu_memory_wait"]` and notes.

The estimate is the task's own, measured once with its audit (`AuditRecord.call_bytes`: one
reference call's peak: its inputs, outputs and workspace) times EVALUATION_CALLS.
"""

from __future__ import annotations

import torch

from cuda_agent.sandbox.check.audit import AuditRecord

# An evaluation holds about this many reference calls' memory at its peak: the checked input set
# with its reference outputs in the harness, and in the candidate's process its outputs and the
# NaN fill of twice their size before each call.
EVALUATION_CALLS = 4


def evaluation_bytes(audit: AuditRecord) -> int | None:
    """The GPU memory an evaluation of the audited task needs (None: not measured)."""
    return None if audit.call_bytes is None else EVALUATION_CALLS * audit.call_bytes


def available_bytes(device: torch.device) -> int:
    """What this process can have now: the device's free memory and what its own allocator
    holds unused."""
    free, _ = torch.cuda.mem_get_info(device)
    return free + torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)


def must_wait(need: int | None, available: int) -> bool:
    return need is not None and need > available


def waited_note(need: int, available: int, waited_s: float) -> str:
    gib = 2**30
    return (
        f"needed about {need / gib:.1f} GiB of GPU memory where {available / gib:.1f} GiB was "
        f"free beside other evaluations: waited {waited_s:.1f} s for the GPU, then ran alone"
    )
