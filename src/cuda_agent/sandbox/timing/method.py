"""The timing methods a run can declare, and what each charges a call.

Every timed call is measured all three ways at once (call.py); a run declares which one its
verdicts, speed-ups and rewards use, and every verdict carries the other two beside it:

- `events`: CUDA events on the current stream around the call, the L2 flush queued just ahead
  of the start event as KernelBench's `cuda_event` timing queues it. What KernelBench reports.
- `kernels`: the GPU time of the call's kernels, copies and fills, summed (CUPTI's records):
  what a `torch.profiler` kernel sum gives, as CUDA Agent's published profiling sums it. Idle
  gaps between kernels and the host's launches are left out.
- `span`: the GPU's span of the call's work, from its first kernel's start to its last one's end
  on any stream: gaps between kernels count, the launch of the first does not.

docs/verdict.md says why `events` is the default.
"""

from __future__ import annotations

from enum import StrEnum

from cuda_agent.errors import choice


class TimingMethod(StrEnum):
    EVENTS = "events"
    KERNELS = "kernels"
    SPAN = "span"


DEFAULT_TIMING = TimingMethod.EVENTS

# A task is launch-bound when the host's time to issue its reference's call (forward returning,
# before the GPU is waited for) is more than this many times the GPU's busy time of that call:
# its speed-ups then measure launch overhead more than kernels, and the three methods disagree.
LAUNCH_BOUND_RATIO = 2.0


def timing_method(name: str) -> TimingMethod:
    """The method named `name`, or a UserError that lists the choices."""
    return choice(TimingMethod, name, "timing method")


def is_launch_bound(launch_ms: float, busy_ms: float) -> bool:
    """Whether a call whose host issued it in `launch_ms` and kept the GPU busy `busy_ms` is
    bound by its launches rather than its GPU work."""
    return launch_ms > LAUNCH_BOUND_RATIO * max(busy_ms, 0.0)
