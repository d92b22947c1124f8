"""One timed call, the same routine for the trusted baselines and the candidate.

The primitives are bound when this module is imported, before any candidate code runs, so
patching torch.cuda.Event or time.perf_counter afterwards does not reach them. Each call: the
GPU trace started (gpu_work.py), L2 flushed, then an event before the call, one right after it
on the current stream, and one after a device-wide synchronize, so work left running on other
streams shows up as the gap between the two (the parent turns that gap into a violation).

A call is charged the GPU's own span of its work (`CallTime.gpu_or_window_ms`; a candidate's,
`CallTime.charged_ms`), not its event window. The window starts on an idle GPU and so includes
the host's launch of the first kernel, which moved timed calls by 3–8 % from one process to the
next on an H200's host, and torch.compile's by up to 25 %, while the GPU's span held within 1 %.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

import torch

from cuda_agent.sandbox.timing.gpu_work import GpuRecorder

_perf_ns = time.perf_counter_ns
_sync = torch.cuda.synchronize
synchronize = _sync  # for the child's other waits: the candidate may patch torch's name
_Event = torch.cuda.Event
_elapsed = torch.cuda.Event.elapsed_time
_record = torch.cuda.Event.record
_read = torch.Tensor.sum


# How much longer than the GPU's span of its work a candidate's event window may be for free:
# the launch of its first kernel and the host's way back after its last (with the trace
# recording, 40–140 µs for a kernel or two launched from Python on an H200).
# Beyond it, the window is charged: host work, or GPU work out of the trace's sight.
UNTRACED_ALLOWANCE_MS = 0.25


@dataclass(frozen=True)
class CallTime:
    stream_ms: float  # events on the current stream around the call
    wide_ms: float  # from the first event to one recorded after a device-wide synchronize
    host_ms: float  # host wall clock around the whole call, synchronize included
    gpu_ms: float | None = None  # the GPU's own span of the call's activity (gpu_work.py)
    kernels: tuple[str, ...] | None = None  # its GPU activity by name; None: no trace here
    trace_ms: float = 0.0  # host time of starting the trace and reading it back (not timed)

    @property
    def gpu_or_window_ms(self) -> float:
        """The GPU's span of the call's work, on every stream; its event window when the trace
        saw no GPU work (a reference that only returns a view). What eager and torch.compile
        are charged."""
        return self.wide_ms if self.gpu_ms is None else self.gpu_ms

    @property
    def charged_ms(self) -> float:
        """What a candidate's call is charged: `gpu_or_window_ms`, or its event window less
        UNTRACED_ALLOWANCE_MS when that is longer (host work, or GPU work out of the trace's
        sight). Never less than the baselines' measure of the same call."""
        return max(self.gpu_or_window_ms, self.wide_ms - UNTRACED_ALLOWANCE_MS)


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
    start, after, wide = (_Event(enable_timing=True) for _ in range(3))
    with GpuRecorder() as rec:
        flush()
        _sync()
        rec.mark()
        t0 = _perf_ns()
        _record(start)
        out = fn(*inputs)
        _record(after)
        _sync()
        _record(wide)
        _sync()
        t1 = _perf_ns()
    events = (_elapsed(start, after), _elapsed(start, wide), (t1 - t0) / 1e6)
    if rec.work is None:
        return out, CallTime(*events)
    return out, CallTime(*events, rec.work.span_ms, rec.work.kernels, rec.overhead_ms)


def median_and_spread(values: list[float]) -> tuple[float, float]:
    """The median and (p75 - p25) / median."""
    med = statistics.median(values)
    if len(values) < 4 or med <= 0:
        return med, 0.0
    q = statistics.quantiles(values, n=4)
    return med, (q[2] - q[0]) / med
