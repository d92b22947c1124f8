"""The candidate's reported times against what it cannot control.

Each timed call of the candidate is checked against the event recorded after a device-wide
synchronize (work left on other streams), against the host clock around the call, and against
the parent's own wall clock for the round trip, each beside a no-op call the harness made next to
it in the same process. Thresholds leave room for honest jitter on a loaded host.

Work the candidate leaves running is told from other processes' work on the same GPU by the
reference's own calls, timed in the same pass: no work of theirs escapes, so a wait for the
device after them that matches the candidate's is the GPU's, not the candidate's. On an idle
H100 or H200 the reference's calls wait 0.02-0.10 ms; with veRL training on the same H100, 0.81 ms,
and an honest LayerNorm then read 0.068 ms beyond its no-op calls.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from cuda_agent.sandbox.timing.call import CallTime
from cuda_agent.sandbox.violation import Check, Rule, Violation

# Above this median wait for the device after the reference's calls, other work shared the GPU
# while it was timed (an idle GPU: 0.02-0.10 ms, above).
CONTESTED_WAIT_MS = 0.25


def contested_note(wait_ms: float) -> str:
    """The verdict's note for a pass timed while other work shared the GPU."""
    return (
        f"other work shared the GPU while this was timed: the reference's calls waited "
        f"{wait_ms:.3f} ms for the device, where an idle GPU takes at most "
        f"{CONTESTED_WAIT_MS} ms; times and speed-ups are less certain, and the task's baselines "
        "were not cached from this pass; time it again on an idle GPU"
    )


def device_wait_ms(times: list[CallTime]) -> float:
    """The median wait, on the device, from a call's end event to the event after a
    device-wide synchronize."""
    return statistics.median(t.wide_ms - t.stream_ms for t in times)


@dataclass(frozen=True)
class TimingChecks:
    """The figures the candidate's reported times are checked against (medians, ms)."""

    candidate_ms: float  # the calls charged by the span (CallTime.charged_ms), whatever the method
    gpu_ms: float  # the GPU's span of each call's work, from its trace
    events_ms: float  # events around the call on the current stream (launch included)
    untraced_ms: float  # the event window beyond the GPU's span (launch, host, untraced work)
    sync_gap_ms: float  # device time from the call's end event to the one after a device sync
    ping_sync_gap_ms: float  # the same gap for the paired no-op calls
    escaped_ms: float  # median over pairs of (call's gap - its ping's gap)
    trusted_sync_gap_ms: float  # the gap in the trusted process's eager calls (device_wait_ms)
    host_ms: float  # host clock around the call, synchronize included
    device_over_host_calls: int  # calls whose device time exceeded the host clock around them
    calls: int
    unreported_ms: float  # parent's round trip minus host_ms, beyond a paired no-op call's
    unreported_low_ms: float  # the lower quartile of the same (the check's figure)
    unexplained_low_ms: float  # the same, each call's less its main thread's extra wait for a CPU
    parent_wait_ms: float  # the parent's wait for a CPU in a call's round trip, beyond a ping's
    child_wait_ms: float  # the same for the candidate's main thread (not taken out)

    @property
    def wall_clock_disputed(self) -> bool:
        """Three in four calls took more than the reported time by the parent's clock.

        A patched clock under-reports every call alike, so even the calls least stretched by
        the host say so; a loaded host stretches some calls and not others. The median alone
        was not enough: an honest kernel on the H200, beside two workers building and starting
        processes, read a median 2.08 ms over, the patched-clock cheat 1.56 ms."""
        return self.unreported_low_ms > self._allowed_ms

    @property
    def busy_host(self) -> bool:
        """The dispute is no more than the candidate's main thread spent waiting for a CPU
        beyond its pings: the host, or the candidate's own threads, kept it off the CPU. That
        confirms no reported time, so it earns nothing, but it is no proof of a lie either."""
        return self.wall_clock_disputed and self.unexplained_low_ms <= self._allowed_ms

    @property
    def _allowed_ms(self) -> float:
        return max(0.5, 0.25 * self.host_ms)

    def violations(self) -> list[Violation]:
        """What the reported times contradict (thresholds leave room for honest jitter)."""
        found = []

        def contradicted(rule: Rule, message: str) -> None:
            found.append(Violation(rule=rule, check=Check.TIMING_CHECKS, message=message))

        allowed = max(0.02, 0.1 * self.candidate_ms)
        beyond_reference = self.sync_gap_ms - self.trusted_sync_gap_ms
        if self.escaped_ms > allowed and beyond_reference > allowed:
            contradicted(
                Rule.ESCAPED_WORK,
                f"about {self.escaped_ms:.3f} ms of GPU work per call was still running when "
                f"forward returned (a {self.sync_gap_ms:.3f} ms wait for the device after a "
                f"{self.candidate_ms:.3f} ms call, against {self.ping_sync_gap_ms:.3f} ms after a "
                f"no-op and {self.trusted_sync_gap_ms:.3f} ms after the reference's calls): a "
                "stream the caller does not wait on; join side streams before returning",
            )
        if self.device_over_host_calls:
            contradicted(
                Rule.DEVICE_OVER_HOST,
                "the device timer reported more time than the host clock around the call in "
                f"{self.device_over_host_calls} of {self.calls} calls: the timer was tampered with",
            )
        # honest verdicts' lower quartiles read -19 to -0.04 ms on an H200 whose host had half
        # its cores busy too; the patched clock's 1.39 to 1.47 ms: room on both sides
        if self.wall_clock_disputed:
            contradicted(
                Rule.UNREPORTED_TIME,
                f"the candidate process reported at least {self.unreported_low_ms:.3f} ms less "
                "than the parent's wall clock measured in three of every four calls (median "
                f"{self.unreported_ms:.3f} ms): its reported times are not real",
            )
        return found

    def figures(self) -> dict[str, float]:
        return {
            "candidate_ms": self.candidate_ms,
            "gpu_ms": self.gpu_ms,
            "events_ms": self.events_ms,
            "untraced_ms": self.untraced_ms,
            "sync_gap_ms": self.sync_gap_ms,
            "ping_sync_gap_ms": self.ping_sync_gap_ms,
            "escaped_ms": self.escaped_ms,
            "trusted_sync_gap_ms": self.trusted_sync_gap_ms,
            "host_ms": self.host_ms,
            "device_over_host_calls": self.device_over_host_calls,
            "unreported_ms": self.unreported_ms,
            "unreported_low_ms": self.unreported_low_ms,
            "unexplained_low_ms": self.unexplained_low_ms,
            "parent_wait_ms": self.parent_wait_ms,
            "child_wait_ms": self.child_wait_ms,
        }


def cross_check(
    times: list[CallTime],
    pings: list[CallTime],
    unreported_ms: list[float],
    trusted: list[CallTime],
    waits: list[tuple[float, float]] = (),
) -> TimingChecks:
    """The candidate's timed calls against their paired no-op calls and the parent's clock
    (`waits`: each call's (parent's, child's) wait for a CPU beyond its ping's)."""
    med = statistics.median

    def low(values: list[float]) -> float:
        return statistics.quantiles(values, n=4)[0] if len(values) > 1 else values[0]

    unexplained = [u - w[1] for u, w in zip(unreported_ms, waits, strict=True)] if waits else None

    def gap(t: CallTime) -> float:
        return t.wide_ms - t.stream_ms

    return TimingChecks(
        candidate_ms=med(t.charged_ms for t in times),
        gpu_ms=med(t.gpu_ms or 0.0 for t in times),
        events_ms=med(t.stream_ms for t in times),
        untraced_ms=med(t.wide_ms - (t.gpu_ms or 0.0) for t in times),
        sync_gap_ms=device_wait_ms(times),
        ping_sync_gap_ms=device_wait_ms(pings),
        escaped_ms=med(gap(t) - gap(p) for t, p in zip(times, pings, strict=True)),
        trusted_sync_gap_ms=device_wait_ms(trusted),
        host_ms=med(t.host_ms for t in times),
        device_over_host_calls=sum(t.wide_ms > t.host_ms + 0.05 for t in times),
        calls=len(times),
        unreported_ms=med(unreported_ms),
        unreported_low_ms=low(unreported_ms),
        unexplained_low_ms=low(unexplained or unreported_ms),
        parent_wait_ms=med([w[0] for w in waits]) if waits else 0.0,
        child_wait_ms=med([w[1] for w in waits]) if waits else 0.0,
    )
