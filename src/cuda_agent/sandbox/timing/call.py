"""One timed call, the same routine for the trusted baselines and the candidate.

The primitives are bound when this module is imported, before any candidate code runs, so
patching torch.cuda.Event or time.perf_counter afterwards does not reach them. Each call: the
GPU idle, the GPU trace started (gpu_work.py), the L2 flush queued, then an event before the
call, one right after it on the current stream, and one after a device-wide synchronize, so work
left running on other streams shows up as the gap between the two (the parent turns that gap
into a violation).

The flush is not waited for before the start event, as in KernelBench's `cuda_event` timing:
the host issues the call while the GPU still reads the flush's buffer, so a call whose launches
fit in that head start (about 0.08 ms on an H100) is not charged them by any method, and its
event window no longer moves with the host CPU's speed from one process to the next. A call
whose host work outlasts the head start has the rest in its events and its span.

One call yields all three methods' figures (method.py); `CallTime.measure` is what a trusted
side is charged by a method, `CallTime.charged` what a candidate is.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass

import torch

from cuda_agent.sandbox.timing.gpu_work import GpuRecorder
from cuda_agent.sandbox.timing.method import TimingMethod

_perf_ns = time.perf_counter_ns
_sync = torch.cuda.synchronize
synchronize = _sync  # for the child's other waits: the candidate may patch torch's name
_Event = torch.cuda.Event
_elapsed = torch.cuda.Event.elapsed_time
_record = torch.cuda.Event.record
_read = torch.Tensor.sum

# The flush reads at least this much, so its head start is as long as KernelBench's 256 MiB
# fill gives (on cards whose L2 is smaller than half of it).
FLUSH_BYTES = 256 << 20


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
    busy_ms: float | None = None  # its activities' GPU time summed; None: no trace here
    launch_ms: float = 0.0  # host time until the call returned, before the GPU is waited for

    def measure(self, method: TimingMethod) -> float:
        """What `method` charges this call on a trusted side (eager, torch.compile).

        Where the trace saw no GPU work, every method gives the event window. `events` is never
        less than the span: work that began on another stream during the flush, before the
        start event, is charged (an honest call's work on the current stream waits for the flush
        and starts after the start event, so its span is inside its window)."""
        if self.gpu_ms is None:
            return self.wide_ms if method is not TimingMethod.EVENTS else self.stream_ms
        if method is TimingMethod.SPAN:
            return self.gpu_ms
        if method is TimingMethod.KERNELS:
            return self.busy_ms if self.busy_ms is not None else self.gpu_ms
        return max(self.stream_ms, self.gpu_ms)

    def charged(self, method: TimingMethod) -> float:
        """What a candidate's call is charged: `measure(method)`, or its event window less
        UNTRACED_ALLOWANCE_MS when that is longer (host work, or GPU work out of the trace's
        sight, which no method leaves free). Never less than a trusted side's measure."""
        return max(self.measure(method), self.wide_ms - UNTRACED_ALLOWANCE_MS)

    @property
    def charged_ms(self) -> float:
        """`charged` by the span (the cross-checks' reference figure)."""
        return self.charged(TimingMethod.SPAN)


_FLUSH_ACTIVITIES: dict[str, tuple[str, ...]] = {}  # by device: what one flush records


class L2Flusher:
    """Reads a buffer twice the size of L2 (at least FLUSH_BYTES) so no call finds its inputs in
    cache.

    Reading, not writing: a write-flush (triton's do_bench zeroes a buffer) leaves L2 full of
    dirty lines that the timed call then pays to write back; a read leaves clean lines, and the
    previous call's dirty output is written back here, outside the timed region. `activities`
    are the names of the GPU activities one flush records, learnt by recording it once per
    process and device: a timed call's trace holds them first, and they are not the call's."""

    def __init__(self, device: torch.device):
        l2 = getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 64 << 20)
        self._buf = torch.ones(max(2 * l2, FLUSH_BYTES) // 4, dtype=torch.int32, device=device)
        key = str(torch.device(device))
        if key not in _FLUSH_ACTIVITIES:
            _FLUSH_ACTIVITIES[key] = self._recorded_activities()
        self.activities: tuple[str, ...] = _FLUSH_ACTIVITIES[key]

    def _recorded_activities(self) -> tuple[str, ...]:
        with GpuRecorder() as rec:
            _sync()
            rec.mark()
            self()
            _sync()
        return rec.work.kernels if rec.work is not None else ()

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
    with GpuRecorder(flush.activities) as rec:
        _sync()
        rec.mark()
        flush()  # not waited for: the call is issued during it (the module's docstring)
        t0 = _perf_ns()
        _record(start)
        out = fn(*inputs)
        returned = _perf_ns()
        _record(after)
        _sync()
        _record(wide)
        _sync()
        t1 = _perf_ns()
    events = (_elapsed(start, after), _elapsed(start, wide), (t1 - t0) / 1e6)
    launch_ms = (returned - t0) / 1e6
    work = rec.work
    if work is None:
        return out, CallTime(*events, launch_ms=launch_ms)
    busy = work.busy_ms
    return out, CallTime(*events, work.span_ms, work.kernels, rec.overhead_ms, busy, launch_ms)


def median_and_spread(values: list[float]) -> tuple[float, float]:
    """The median and (p75 - p25) / median."""
    med = statistics.median(values)
    if len(values) < 4 or med <= 0:
        return med, 0.0
    q = statistics.quantiles(values, n=4)
    return med, (q[2] - q[0]) / med
