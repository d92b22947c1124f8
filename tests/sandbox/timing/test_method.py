"""What each timing method charges one call, on a trusted side and on the candidate's, and when a
task is launch-bound."""

import pytest

from cuda_agent.errors import UserError
from cuda_agent.sandbox import EnvConfig
from cuda_agent.sandbox.timing.call import UNTRACED_ALLOWANCE_MS, CallTime
from cuda_agent.sandbox.timing.method import (
    DEFAULT_TIMING,
    TimingMethod,
    is_launch_bound,
    timing_method,
)

EVENTS, KERNELS, SPAN = TimingMethod.EVENTS, TimingMethod.KERNELS, TimingMethod.SPAN


def _call(stream, wide, span, busy, host=None, launch=0.0):
    host = wide + 0.02 if host is None else host
    return CallTime(stream, wide, host, span, ("k",), 0.0, busy, launch)


def test_three_kernels_with_gaps_between_them_read_three_ways():
    # three 2 µs kernels spread over 10 µs of GPU time, the events 3 µs wider than the span
    t = _call(stream=0.013, wide=0.014, span=0.010, busy=0.006)
    assert t.measure(SPAN) == 0.010
    assert t.measure(KERNELS) == 0.006
    assert t.measure(EVENTS) == 0.013


def test_events_never_read_less_than_the_span():
    # work begun on another stream during the flush, before the start event: the span is longer
    t = _call(stream=0.005, wide=0.006, span=0.080, busy=0.079)
    assert t.measure(EVENTS) == 0.080


def test_a_call_the_trace_saw_no_work_of_reads_its_window():
    t = CallTime(0.004, 0.006, 0.02)  # a reference that returns a view
    assert t.measure(SPAN) == t.measure(KERNELS) == 0.006
    assert t.measure(EVENTS) == 0.004


@pytest.mark.parametrize("method", list(TimingMethod))
def test_no_method_leaves_untraced_time_free_to_the_candidate(method):
    # 2 ms of the window the trace did not see (host work, or GPU work out of its sight)
    t = _call(stream=2.3, wide=2.32, span=0.26, busy=0.2)
    assert t.charged(method) == pytest.approx(max(t.measure(method), 2.32 - UNTRACED_ALLOWANCE_MS))
    assert t.charged(method) >= 2.32 - UNTRACED_ALLOWANCE_MS


@pytest.mark.parametrize("method", list(TimingMethod))
def test_an_honest_candidate_is_charged_what_a_trusted_side_is(method):
    t = _call(stream=0.013, wide=0.014, span=0.010, busy=0.006)
    assert t.charged(method) == t.measure(method)


def test_the_default_method_and_a_bad_name():
    assert EnvConfig().timing is DEFAULT_TIMING is EVENTS
    assert EnvConfig(timing="kernels").timing is KERNELS
    with pytest.raises(UserError, match="timing method 'wall': choose events, kernels, span"):
        timing_method("wall")
    with pytest.raises(UserError, match="choose events, kernels, span"):
        EnvConfig(timing="cupti")


def test_a_call_whose_host_work_is_well_above_its_gpu_work_is_launch_bound():
    # Softsign at 16 x 16384: three 2 µs kernels, 25 µs of Python and launches
    assert is_launch_bound(launch_ms=0.025, busy_ms=0.006)
    # ReLU at 4096 x 393216: one 4 ms kernel, its launch 10 µs
    assert not is_launch_bound(launch_ms=0.010, busy_ms=4.0)
    # a forward that waits for its own result (host time holds the GPU's): not launch-bound
    assert not is_launch_bound(launch_ms=1.01, busy_ms=1.0)
