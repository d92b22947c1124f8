"""The GPU trace of one timed call, on stand-ins for the profiler's records (the real trace runs
in the GPU tests: tests/sandbox/guard/test_guard_gpu.py)."""

from __future__ import annotations

import pytest

from cuda_agent.sandbox.timing import gpu_work
from cuda_agent.sandbox.timing.gpu_work import GpuRecorder, GpuTraceTampered, summarize

CUDA, CPU = gpu_work._CUDA, object()


class _Record:
    def __init__(self, name, start_ns, duration_ns, device=CUDA, annotation=False):
        self._name, self._start, self._duration = name, start_ns, duration_ns
        self._device, self._annotation = device, annotation

    def name(self):
        return self._name

    def start_ns(self):
        return self._start

    def duration_ns(self):
        return self._duration

    def device_type(self):
        return self._device

    def is_user_annotation(self):
        return self._annotation


class _Result:
    def __init__(self, trace_start_ns, records):
        self._trace_start, self._records = trace_start_ns, records

    def trace_start_ns(self):
        return self._trace_start

    def events(self):
        return self._records


@pytest.fixture
def profiler(monkeypatch):
    """A process that records GPU activity, on a host clock the test sets: `clock[0]` ns."""
    clock = [1_000_000]
    state = {"result": None}
    monkeypatch.setattr(gpu_work, "_available", [True])
    monkeypatch.setattr(gpu_work, "_start", lambda: None)
    monkeypatch.setattr(gpu_work, "_now_ns", lambda: clock[0])

    def disable():
        if isinstance(state["result"], Exception):
            raise state["result"]
        return state["result"]

    monkeypatch.setattr(gpu_work, "_disable_profiler", disable)
    return clock, state


def test_the_span_runs_from_the_first_start_to_the_last_end_on_any_stream():
    work = summarize([("b", 300, 900), ("a", 100, 400), ("side_stream", 200, 1_200)])
    assert work.span_ms == pytest.approx((1_200 - 100) / 1e6)
    assert work.kernels == ("a", "side_stream", "b")
    assert summarize([]).span_ms is None and summarize([]).kernels == ()


def test_busy_time_sums_the_activities_and_leaves_the_gaps_out():
    work = summarize([("a", 100, 300), ("b", 1_000, 1_500), ("c", 2_000, 2_100)])
    assert work.span_ms == pytest.approx(2_000 / 1e6)
    assert work.busy_ms == pytest.approx(800 / 1e6)


def test_the_flush_queued_ahead_of_the_call_is_not_the_calls():
    flush = ("reduce_kernel", "Memset (Device)")
    rows = [("reduce_kernel", 0, 80_000), ("Memset (Device)", 80_000, 81_000)]
    rows += [("softsign", 82_000, 84_000)]
    work = summarize(rows, flush)
    assert work.kernels == ("softsign",) and work.span_ms == pytest.approx(2_000 / 1e6)
    # only the leading run, in the flush's order: the same name later is the call's own
    work = summarize([("reduce_kernel", 0, 80_000), ("reduce_kernel", 90_000, 95_000)], flush)
    assert work.kernels == ("reduce_kernel",) and work.busy_ms == pytest.approx(5_000 / 1e6)
    # a call whose first activity is not the flush's loses nothing
    assert summarize([("softsign", 0, 2_000)], flush).kernels == ("softsign",)


def test_only_the_calls_gpu_work_after_the_mark_counts(profiler):
    clock, state = profiler
    rec = GpuRecorder().__enter__()  # enabled at 1.000 ms
    clock[0] = 1_200_000  # the harness's flush has finished
    rec.mark()
    clock[0] = 1_900_000  # the call's last synchronize has returned
    state["result"] = _Result(
        900_000,
        [
            _Record("reduce_kernel (the flush)", 1_050_000, 100_000),
            _Record("my_kernel", 1_250_000, 300_000),
            _Record("my_epilogue", 1_560_000, 40_000),
            _Record("cudaLaunchKernel", 1_240_000, 5_000, device=CPU),
            _Record("a range of the candidate's", 1_250_000, 350_000, annotation=True),
        ],
    )
    rec.__exit__(None, None, None)
    assert rec.work.kernels == ("my_kernel", "my_epilogue")
    assert rec.work.span_ms == pytest.approx(0.35)


def test_a_record_that_ends_after_the_host_saw_the_gpu_finish_is_cut_there(profiler):
    # about one call in 60 on the H200 had one record end tens of milliseconds late
    clock, state = profiler
    rec = GpuRecorder().__enter__()
    rec.mark()
    clock[0] = 1_500_000
    state["result"] = _Result(900_000, [_Record("k", 1_100_000, 24_000_000)])
    rec.__exit__(None, None, None)
    assert rec.work.span_ms == pytest.approx(0.4)


def test_a_trace_stopped_during_the_call_is_tampering(profiler):
    clock, state = profiler
    state["result"] = RuntimeError("Can't disable Kineto profiler when it's not running")
    rec = GpuRecorder().__enter__()
    with pytest.raises(GpuTraceTampered, match="stopped in the call"):
        rec.__exit__(None, None, None)


def test_a_trace_started_again_during_the_call_is_tampering(profiler):
    # the candidate stopped the harness's trace after its work and started one of its own
    clock, state = profiler
    rec = GpuRecorder().__enter__()
    rec.mark()
    clock[0] = 1_800_000
    state["result"] = _Result(1_600_000, [_Record("tiny_kernel", 1_650_000, 5_000)])
    with pytest.raises(GpuTraceTampered, match="started again"):
        rec.__exit__(None, None, None)


def test_an_error_in_the_call_is_not_hidden_by_the_trace(profiler):
    clock, state = profiler
    state["result"] = _Result(900_000, [])
    with pytest.raises(ValueError, match="the call's own"):
        with GpuRecorder():
            raise ValueError("the call's own")


def test_a_process_without_a_trace_records_nothing(monkeypatch):
    monkeypatch.setattr(gpu_work, "_available", [False])
    with GpuRecorder() as rec:
        pass
    assert rec.work is None and rec.overhead_ms == 0.0
