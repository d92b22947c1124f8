"""Timing a candidate against eager and torch.compile, in the same run, on the same inputs.

Every timed call gets an input set nobody has seen before (so memoizing outputs cannot help), its
output is compared with the eager output of that set, and the times the candidate's process
reports are cross-checked: against the event recorded after a device-wide synchronize (work left
on other streams), against the host clock around the call, and against the parent's own wall
clock for the round trip, each beside a no-op call made next to it by the harness itself.
Baselines are timed the way the candidate is: fresh sets, L2 flushed, each output released before
the next call.
"""

from __future__ import annotations

import random
import statistics
from dataclasses import dataclass

from cuda_agent.sandbox.compare import compare
from cuda_agent.sandbox.gpu_lock import gpu_lock
from cuda_agent.sandbox.inputs import nbytes
from cuda_agent.sandbox.reference import time_calls
from cuda_agent.sandbox.timing import CallTime, L2Flusher, median_and_spread
from cuda_agent.sandbox.verdict import Status

_coin = random.SystemRandom()


@dataclass
class ProfileResult:
    eager_ms: float
    eager_spread: float
    compile_ms: float
    compile_spread: float
    compile_first_call_s: float
    timed_calls: int
    distinct_sets: int = 0  # fewer than timed_calls only when the sets do not fit in memory
    candidate_ms: float | None = None
    candidate_spread: float | None = None
    max_abs_error: float | None = None
    timing_checks: dict[str, float] | None = None  # the cross-checks' figures (see TimingChecks)
    lock_wait_s: float = 0.0  # waiting for another process's timing on the same GPU
    failure: dict | None = None  # verdict fields when the candidate failed during timing


def profile_candidate(cand, ref, draw, vsets, refs, poison, config, cached, device):
    """Baselines (re-timed eager; torch.compile from `cached` unless compiled here) and, when
    `cand` is given, the candidate on the same fresh input sets. torch.compile's first call runs
    first; everything timed runs holding the GPU's timing lock."""
    example = vsets[0] if vsets else draw()
    if cached is None or ref.compiled is not None:
        ref.ensure_compiled(example)  # CPU-bound for seconds: outside the lock
    with gpu_lock(device, exclusive=True) as waited:
        result = _timed(cand, ref, draw, example, vsets, refs, poison, config, cached, device)
    result.lock_wait_s = waited
    return result


def _timed(cand, ref, draw, example, vsets, refs, poison, config, cached, device):
    per_set = nbytes(example) + 3 * nbytes(refs[0] if refs else ref(*example))
    fit = int(config.timing_memory_gb * 2**30 // max(per_set, 1))
    distinct = max(1, min(config.timed_calls, fit))  # fresh input sets that fit in memory
    n = max(config.min_timed_calls, distinct)  # calls; sets repeat only when memory is short
    sets = [draw() for _ in range(distinct)]
    warm = (vsets or [example])[: config.warmup_calls]
    flush = L2Flusher(device)
    eager_outs = [ref(*inputs) for inputs in sets] if cand is not None else []  # for comparing
    eager_t = time_calls(ref, sets, warm, flush)
    eager_ms, eager_spread = median_and_spread([t.stream_ms for t in eager_t])
    if ref.compiled is not None:
        compile_t = time_calls(ref.run_compiled, sets, warm, flush)
        compile_ms, compile_spread = median_and_spread([t.stream_ms for t in compile_t])
        first_call = ref.compile_first_call_s
    else:
        compile_ms, compile_spread = cached.compile_ms, cached.compile_spread
        first_call = cached.compile_first_call_s
    result = ProfileResult(
        eager_ms, eager_spread, compile_ms, compile_spread, first_call, n, distinct_sets=distinct
    )
    if cand is None:
        return result

    cand.request("store_sets", sets)
    cand.request("warmup", warm)
    times: list[CallTime] = []
    pings: list[CallTime] = []
    unreported: list[float] = []  # per call: round trip beyond the reported time, less a ping's
    worst = 0.0
    for i in range(n):
        index = i % distinct
        # A ping (the same request with the harness's own no-op as forward) next to every call,
        # in an order the candidate cannot predict: the pair's difference cancels pipe, pickling,
        # allocator and host-scheduling costs as they are at that moment (other processes load
        # the host), and leaves what the candidate's own call did.
        ping_first = _coin.random() < 0.5
        if ping_first:
            ping = cand.timed_request("ping", poison)
        reply, wall = cand.timed_request("call", {"index": index, "poison_bytes": poison})
        if not ping_first:
            ping = cand.timed_request("ping", poison)
        check = compare(eager_outs[index], reply["output"], config.atol, config.rtol)
        if not check.ok:
            result.failure = {
                "status": Status.MISMATCH,
                "max_abs_error": check.max_abs_error,
                "message": f"timed call {i + 1} of {n} (a fresh input set): {check.reason}",
            }
            return result
        worst = max(worst, check.max_abs_error or 0.0)
        times.append(reply["time"])
        ping_time, ping_wall = ping[0]["time"], ping[1]
        pings.append(ping_time)
        unreported.append(
            (wall * 1e3 - reply["time"].host_ms) - (ping_wall * 1e3 - ping_time.host_ms)
        )
        del reply, ping
    result.candidate_ms, result.candidate_spread = median_and_spread([t.stream_ms for t in times])
    result.max_abs_error = worst
    checks = cross_check(times, pings, unreported, eager_t)
    result.timing_checks = checks.figures()
    violations = checks.violations()
    if violations:
        result.failure = {
            "status": Status.VIOLATION,
            "violations": violations,
            "timing_checks": result.timing_checks,
            "message": "the timing cross-checks failed: " + "; ".join(violations),
        }
    return result


@dataclass(frozen=True)
class TimingChecks:
    """The figures the candidate's reported times are checked against (medians, ms)."""

    candidate_ms: float  # events around the call on the current stream
    sync_gap_ms: float  # device time from the call's end event to the one after a device sync
    ping_sync_gap_ms: float  # the same gap for the paired no-op calls
    escaped_ms: float  # median over pairs of (call's gap - its ping's gap)
    trusted_sync_gap_ms: float  # the gap in the trusted process's eager calls (for reference)
    host_ms: float  # host clock around the call, synchronize included
    device_over_host_calls: int  # calls whose device time exceeded the host clock around them
    calls: int
    unreported_ms: float  # parent's round trip minus host_ms, beyond a paired no-op call's

    def violations(self) -> list[str]:
        """What the reported times contradict (thresholds leave room for honest jitter)."""
        found = []
        if self.escaped_ms > max(0.02, 0.1 * self.candidate_ms):
            found.append(
                f"about {self.escaped_ms:.3f} ms of GPU work per call was still running when "
                f"forward returned (a {self.sync_gap_ms:.3f} ms wait for the device after a "
                f"{self.candidate_ms:.3f} ms call, against {self.ping_sync_gap_ms:.3f} ms after a "
                "no-op): a stream the caller does not wait on; join side streams before returning"
            )
        if self.device_over_host_calls:
            found.append(
                "the device timer reported more time than the host clock around the call in "
                f"{self.device_over_host_calls} of {self.calls} calls: the timer was tampered with"
            )
        if self.unreported_ms > max(0.25, 0.25 * self.host_ms):
            found.append(
                f"the candidate process reported {self.unreported_ms:.3f} ms per call less than "
                "the parent's wall clock measured: its reported times are not real"
            )
        return found

    def figures(self) -> dict[str, float]:
        return {
            "candidate_ms": self.candidate_ms,
            "sync_gap_ms": self.sync_gap_ms,
            "ping_sync_gap_ms": self.ping_sync_gap_ms,
            "escaped_ms": self.escaped_ms,
            "trusted_sync_gap_ms": self.trusted_sync_gap_ms,
            "host_ms": self.host_ms,
            "device_over_host_calls": self.device_over_host_calls,
            "unreported_ms": self.unreported_ms,
        }


def cross_check(
    times: list[CallTime],
    pings: list[CallTime],
    unreported_ms: list[float],
    trusted: list[CallTime],
) -> TimingChecks:
    """The candidate's timed calls against their paired no-op calls and the parent's clock."""
    med = statistics.median

    def gap(t: CallTime) -> float:
        return t.wide_ms - t.stream_ms

    return TimingChecks(
        candidate_ms=med(t.stream_ms for t in times),
        sync_gap_ms=med(gap(t) for t in times),
        ping_sync_gap_ms=med(gap(p) for p in pings),
        escaped_ms=med(gap(t) - gap(p) for t, p in zip(times, pings, strict=True)),
        trusted_sync_gap_ms=med(gap(t) for t in trusted),
        host_ms=med(t.host_ms for t in times),
        device_over_host_calls=sum(t.wide_ms > t.host_ms + 0.05 for t in times),
        calls=len(times),
        unreported_ms=med(unreported_ms),
    )
