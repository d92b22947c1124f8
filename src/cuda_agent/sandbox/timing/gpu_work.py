"""What the GPU ran during one call, on every stream: CUPTI's activity records, through torch's
profiler (kineto).

A call's events measure from a start event on an idle GPU to an end event, so they include the
host's launch of the call's first kernel. On an H200's host that launch took 10–28 µs, moving
with the host CPU's speed from one process to the next, while the GPU's own time of the same
kernel held within 0.3 %. The records give the GPU's own time: from the start of the first
kernel, copy or fill the call caused to the end of the last, whatever stream ran it.

A recording is opened before the harness's L2 flush, not right before the call: the first CUDA
call after the profiler starts pays 0.35–0.5 ms of CUPTI's own set-up, which the flush absorbs.
The flush is queued just ahead of the call and not waited for (call.py), so its records are in
the call's: they are the leading ones with the flush's own names (`skip`), which `L2Flusher`
learns once by recording itself, and are dropped. Activities are those that start after
`mark()`, a host time taken once the GPU is idle: CUPTI's timestamps are on the host's clock.
About one call in 60 had one record end tens of milliseconds late (24 and 32 ms for a 0.35 ms
call of five kernels); no record can end after the host saw the GPU finish, so ends are cut
there.

The profiler's entry points are bound when this module is imported, before any candidate code
runs; a recording that candidate code stopped, or stopped and started again, raises
GpuTraceTampered.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import torch
from torch._C._profiler import ProfilerActivity, _ExperimentalConfig
from torch.autograd import (
    DeviceType,
    ProfilerConfig,
    ProfilerState,
    _disable_profiler,
    _enable_profiler,
    _prepare_profiler,
)

_ACTIVITIES = {ProfilerActivity.CUDA}
_CUDA = DeviceType.CUDA
_now_ns = time.time_ns  # CUPTI's records are on this clock (kineto converts them to it)
_session = threading.Lock()  # one recording at a time in a process (the profiler is global)
_available: list[bool] = []  # [whether this process records GPU activity], once known


class GpuTraceTampered(RuntimeError):
    """The recording around a call was stopped, or replaced by another, during the call."""


def _config() -> ProfilerConfig:
    return ProfilerConfig(ProfilerState.KINETO, False, False, False, False, False,
                          _ExperimentalConfig())  # fmt: skip


@dataclass(frozen=True)
class GpuWork:
    """The GPU activity recorded during one call."""

    span_ms: float | None  # first activity's start to the last one's end; None: none recorded
    kernels: tuple[str, ...]  # names, in order of start (copies and fills included)
    busy_ms: float | None = None  # the activities' durations summed; None: none recorded


class GpuRecorder:
    """`with GpuRecorder() as rec: <harness work>; rec.mark(); <the call>` then `rec.work`
    (None where this process cannot record GPU activity: see `start_recording_once`)."""

    def __init__(self, skip: tuple[str, ...] = ()) -> None:
        self.work: GpuWork | None = None
        self._skip = skip  # the names of the leading activities that are not the call's
        self.overhead_ms = 0.0  # host time spent starting the recording and reading it back
        self._on = False
        self._enabled_ns = 0
        self._mark_ns = 0

    def __enter__(self) -> GpuRecorder:
        if not start_recording_once():
            return self
        began = _now_ns()
        _session.acquire()
        try:
            _start()
        except BaseException:
            _session.release()
            raise
        self._on = True
        self._enabled_ns = self._mark_ns = _now_ns()
        self.overhead_ms = (self._enabled_ns - began) / 1e6
        return self

    def mark(self) -> None:
        """What the GPU runs from now on is the call's."""
        self._mark_ns = _now_ns()

    def __exit__(self, *exc) -> None:
        if not self._on:
            return
        finished_ns = _now_ns()  # the call's last synchronize has returned
        try:
            result = _disable_profiler()
        except RuntimeError as err:
            if exc[0] is None:
                raise GpuTraceTampered(f"the GPU trace was stopped in the call: {err}") from None
            return
        finally:
            _session.release()
        if exc[0] is not None:
            return
        if result.trace_start_ns() > self._enabled_ns:
            raise GpuTraceTampered("the GPU trace was stopped and started again during the call")
        activities = [
            (e.name(), e.start_ns(), min(e.start_ns() + e.duration_ns(), finished_ns))
            for e in result.events()
            if e.device_type() == _CUDA and not e.is_user_annotation()
            and self._mark_ns <= e.start_ns() < finished_ns
        ]  # fmt: skip
        self.work = summarize(activities, self._skip)
        self.overhead_ms += (_now_ns() - finished_ns) / 1e6


def summarize(activities, skip: tuple[str, ...] = ()) -> GpuWork:
    """GpuWork from (name, start_ns, end_ns) of each GPU activity, less the leading ones that
    are `skip`'s, in its order (the harness's flush, queued just before the call)."""
    rows = sorted(activities, key=lambda a: a[1])
    for name in skip:
        if not rows or rows[0][0] != name:
            break
        rows.pop(0)
    if not rows:
        return GpuWork(None, ())
    span = (max(end for _, _, end in rows) - rows[0][1]) / 1e6
    busy = sum(end - start for _, start, end in rows) / 1e6
    return GpuWork(span, tuple(name for name, _, _ in rows), busy)


def _start() -> None:
    config = _config()
    _prepare_profiler(config, _ACTIVITIES)
    _enable_profiler(config, _ACTIVITIES)


def start_recording_once(device=None) -> bool:
    """Whether this process records GPU activity. The first call finds out (0.04–0.05 s in a
    fresh process on the H200), outside any timed call, on `device` (default: the current one)."""
    if _available:
        return _available[0]
    with _session:
        if _available:  # found out by another thread while this one waited
            return _available[0]
        try:
            _start()
        except RuntimeError:  # no profiler in this torch build
            _available.append(False)
            return False
        try:
            torch.ones(1, device=device or "cuda").add_(1)
            torch.cuda.synchronize(device)
        except (RuntimeError, AssertionError):  # no GPU (a CPU build of torch asserts)
            pass
        finally:
            ok = any(e.device_type() == _CUDA for e in _disable_profiler().events())
        _available.append(ok)
    return ok
