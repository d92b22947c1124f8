"""Timing a candidate against eager and torch.compile, in the same run, on the same inputs.

Every timed call gets an input set nobody has seen before (so memoizing outputs cannot help), its
output is compared with the eager output of that set, and the times the candidate's process
reports are cross-checked: against the event recorded after a device-wide synchronize (work left
on other streams), against the host clock around the call, and against the parent's own wall
clock for the round trip.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from cuda_agent.sandbox.compare import compare
from cuda_agent.sandbox.inputs import nbytes
from cuda_agent.sandbox.reference import time_calls
from cuda_agent.sandbox.timing import CallTime, L2Flusher, median_and_spread
from cuda_agent.sandbox.verdict import Status

_PINGS = 5


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
    failure: dict | None = None  # verdict fields when the candidate failed during timing


def profile_candidate(cand, ref, draw, vsets, refs, poison, config, cached, device):
    """Baselines (re-timed eager; torch.compile from `cached` unless compiled here) and, when
    `cand` is given, the candidate on the same fresh input sets."""
    example = vsets[0] if vsets else draw()
    per_set = nbytes(example) + 3 * nbytes(refs[0] if refs else ref(*example))
    fit = int(config.timing_memory_gb * 2**30 // max(per_set, 1))
    distinct = max(1, min(config.timed_calls, fit))  # fresh input sets that fit in memory
    n = max(config.min_timed_calls, distinct)  # calls; sets repeat only when memory is short
    sets = [draw() for _ in range(distinct)]
    warm = (vsets or [example])[: config.warmup_calls]
    flush = L2Flusher(device)
    eager_outs, eager_t = time_calls(ref, sets, warm, flush)
    eager_ms, eager_spread = median_and_spread([t.stream_ms for t in eager_t])
    if cached is None or ref.compiled is not None:
        first_call = ref.ensure_compiled(example)
        _, compile_t = time_calls(ref.run_compiled, sets, warm, flush)
        compile_ms, compile_spread = median_and_spread([t.stream_ms for t in compile_t])
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
    pings = [cand.timed_request("ping", poison)[1] * 1e3 for _ in range(_PINGS)]
    times: list[CallTime] = []
    walls: list[float] = []
    worst = 0.0
    for i in range(n):
        index = i % distinct
        reply, wall = cand.timed_request("call", {"index": index, "poison_bytes": poison})
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
        walls.append(wall * 1e3)
        del reply
    result.candidate_ms, result.candidate_spread = median_and_spread([t.stream_ms for t in times])
    result.max_abs_error = worst
    violations = timing_violations(times, walls, pings, eager_t)
    if violations:
        result.failure = {
            "status": Status.VIOLATION,
            "violations": violations,
            "message": "the timing cross-checks failed (see violations)",
        }
    return result


def timing_violations(
    times: list[CallTime], walls_ms: list[float], pings_ms: list[float], trusted: list[CallTime]
) -> list[str]:
    """What the candidate's reported times contradict (thresholds leave room for honest jitter)."""
    med = statistics.median
    found = []
    stream = med(t.stream_ms for t in times)
    sync_cost = med(t.wide_ms - t.stream_ms for t in trusted)
    escaped = med(t.wide_ms - t.stream_ms for t in times) - sync_cost
    if escaped > max(0.02, 0.1 * stream):
        found.append(
            f"about {escaped:.3f} ms of GPU work per call was still running when forward returned "
            "(a stream the caller does not wait on); join side streams before returning"
        )
    impossible = sum(t.wide_ms > t.host_ms + 0.05 for t in times)
    if impossible:
        found.append(
            f"the device timer reported more time than the host clock around the call "
            f"in {impossible} of {len(times)} calls: the timer was tampered with"
        )
    unexplained = med(w - t.host_ms for w, t in zip(walls_ms, times, strict=True)) - med(pings_ms)
    host = med(t.host_ms for t in times)
    if unexplained > max(0.25, 0.25 * host):
        found.append(
            f"the candidate process reported {unexplained:.3f} ms per call less than the "
            "parent's wall clock measured: its reported times are not real"
        )
    return found
