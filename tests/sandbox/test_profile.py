"""The timing cross-checks on figures an honest call and each kind of lie would produce."""

from __future__ import annotations

from cuda_agent.sandbox.profile import cross_check
from cuda_agent.sandbox.timing import CallTime

TRUSTED = [CallTime(stream_ms=1.0, wide_ms=1.02, host_ms=1.05) for _ in range(12)]


def _calls(stream: float, gap: float, host_extra: float = 0.03, n: int = 12) -> list[CallTime]:
    return [CallTime(stream, stream + gap, stream + gap + host_extra) for _ in range(n)]


def _pings(gap: float = 0.02) -> list[CallTime]:
    return _calls(0.01, gap)


def test_honest_figures_pass_and_are_reported():
    checks = cross_check(_calls(0.32, 0.025), _pings(), [0.05] * 12, TRUSTED)
    assert checks.violations() == []
    figures = checks.figures()
    assert figures["candidate_ms"] == 0.32
    assert abs(figures["escaped_ms"] - 0.005) < 1e-9
    assert figures["unreported_ms"] == 0.05 and figures["device_over_host_calls"] == 0


def test_a_loaded_host_slows_the_call_and_its_ping_alike_and_passes():
    # seen on the H200 with three workers on one GPU: 0.069 ms after a 0.47 ms call, while the
    # reference's own calls, timed earlier on a quiet host, waited 0.019 ms
    checks = cross_check(_calls(0.47, 0.069), _pings(0.062), [0.03] * 12, TRUSTED)
    assert checks.violations() == []


def test_work_left_on_another_stream_is_escaped_time():
    # forward returns after 0.05 ms; the device is busy 2 ms longer
    [found] = cross_check(_calls(0.05, 2.0), _pings(), [0.0] * 12, TRUSTED).violations()
    assert "still running when forward returned" in found and "1.980 ms" in found


def test_escaped_work_shows_through_an_equally_loaded_ping():
    [found] = cross_check(_calls(0.05, 2.06), _pings(0.06), [0.0] * 12, TRUSTED).violations()
    assert "still running when forward returned" in found


def test_device_time_beyond_the_host_clock_is_tampering():
    calls = _calls(0.3, 0.02)
    calls[3] = CallTime(0.3, 5.0, 0.4)
    [found] = cross_check(calls, _pings(), [0.0] * 12, TRUSTED).violations()
    assert "1 of 12 calls" in found


def test_times_smaller_than_the_parents_clock_are_not_real():
    # the candidate reports 0.1 ms while the round trip, less a ping's, says 3 ms more
    [found] = cross_check(_calls(0.1, 0.02), _pings(), [3.0] * 12, TRUSTED).violations()
    assert "less than the parent's wall clock" in found


def test_jitter_below_the_thresholds_passes():
    checks = cross_check(_calls(0.4, 0.035), _pings(), [0.2] * 12, TRUSTED)
    assert checks.violations() == []
