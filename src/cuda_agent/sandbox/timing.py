"""One timed call, the same routine for the trusted baselines and the candidate.

The primitives are bound when this module is imported, before any candidate code runs, so
patching torch.cuda.Event or time.perf_counter afterwards does not reach them. Each call: L2
flushed, then an event before the call, one right after it on the current stream, and one after
a device-wide synchronize, so work left running on other streams shows up as the gap between the
two (the parent turns that gap into a violation).
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

import torch

_perf_ns = time.perf_counter_ns
_sync = torch.cuda.synchronize
synchronize = _sync  # for the child's other waits: the candidate may patch torch's name
_Event = torch.cuda.Event
_elapsed = torch.cuda.Event.elapsed_time
_record = torch.cuda.Event.record
_read = torch.Tensor.sum


@dataclass(frozen=True)
class CallTime:
    stream_ms: float  # events on the current stream around the call
    wide_ms: float  # from the first event to one recorded after a device-wide synchronize
    host_ms: float  # host wall clock around the whole call, synchronize included


class L2Flusher:
    """Reads a buffer twice the size of L2 so no call finds its inputs in cache.

    Reading, not writing: a write-flush (triton's do_bench zeroes a buffer) leaves L2 full of
    dirty lines that the timed call then pays to write back; a read leaves clean lines, and the
    previous call's dirty output is written back here, outside the timed region."""

    def __init__(self, device: torch.device):
        l2 = getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 64 << 20)
        self._buf = torch.ones(max(2 * l2, 8 << 20) // 4, dtype=torch.int32, device=device)

    def __call__(self) -> None:
        _read(self._buf)


def spin_up(flush: L2Flusher, ms: float) -> None:
    """Keep the GPU reading for about `ms` of host time, then wait for it: clocks that dropped
    while it idled (a build, a process start) ramp back up before anything is timed."""
    start = _perf_ns()
    issued = 0
    while (_perf_ns() - start) / 1e6 < ms:
        flush()
        issued += 1
        if issued % 16 == 0:  # never queue far ahead of the device
            _sync()
    _sync()


def timed_call(fn, inputs: list, flush: L2Flusher):
    """(output, CallTime) of one call of fn(*inputs)."""
    flush()
    _sync()
    start, after, wide = (_Event(enable_timing=True) for _ in range(3))
    t0 = _perf_ns()
    _record(start)
    out = fn(*inputs)
    _record(after)
    _sync()
    _record(wide)
    _sync()
    t1 = _perf_ns()
    return out, CallTime(_elapsed(start, after), _elapsed(start, wide), (t1 - t0) / 1e6)


def median_and_spread(values: list[float]) -> tuple[float, float]:
    """The median and (p75 - p25) / median."""
    med = statistics.median(values)
    if len(values) < 4 or med <= 0:
        return med, 0.0
    q = statistics.quantiles(values, n=4)
    return med, (q[2] - q[0]) / med
