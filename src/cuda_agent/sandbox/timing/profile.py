"""Timing a candidate against eager and torch.compile, in the same run, on the same inputs.

Every timed call gets an input set nobody has seen before (so memoizing outputs cannot help), its
output is compared with the eager output of that set, and the times the candidate's process
reports are cross-checked (cross_check.py). Baselines are timed the way the candidate is: fresh
sets, L2 flushed, each output released before the next call; and interleaved with it, set by set
(interleave.py), so that what drifts during a run (the GPU's clocks, the host's load) moves every
side alike instead of the speed-ups.
"""

from __future__ import annotations

import resource
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from cuda_agent.sandbox.check.inputs import nbytes
from cuda_agent.sandbox.config import EnvConfig
from cuda_agent.sandbox.outcome import Failure
from cuda_agent.sandbox.retry import timed_again_if_disputed
from cuda_agent.sandbox.timing.baselines import BaselineRecord
from cuda_agent.sandbox.timing.call import CallTime, L2Flusher, median_and_spread, spin_up
from cuda_agent.sandbox.timing.cross_check import CONTESTED_WAIT_MS, cross_check, device_wait_ms
from cuda_agent.sandbox.timing.gpu_lock import gpu_lock
from cuda_agent.sandbox.timing.interleave import Candidate, Refill, Trusted, interleaved
from cuda_agent.sandbox.timing.method import DEFAULT_TIMING, TimingMethod, is_launch_bound
from cuda_agent.sandbox.verdict import MethodTimes, Status


@dataclass(frozen=True)
class CandidateRun:
    """The candidate's side of a timing: its process and what verification left for it."""

    process: Any  # a CandidateProcess (its requests, its layers)
    warm_sets: list  # verification's first input sets, the warm-up of every side
    expected: list  # their reference outputs
    poison_bytes: int  # GPU memory filled with NaN before each call
    own_kernels: frozenset[str]  # the solution's kernels: each timed call's trace must show one


@dataclass(frozen=True)
class TimingJob:
    """What one timing needs: the reference, fresh input sets, the settings, the GPU."""

    ref: Any  # a Reference (its model, its torch.compile copy)
    draw: Callable[[], list]  # a fresh input set from a secret seed
    config: EnvConfig
    device: Any
    cached: BaselineRecord | None = None  # torch.compile's cached timing; None: timed here
    candidate: CandidateRun | None = None  # None: the baselines alone
    release: Callable[[], None] | None = None  # frees what a section cached (baselines only)


@dataclass
class ProfileResult:
    eager_ms: float
    eager_spread: float
    compile_ms: float
    compile_spread: float
    compile_first_call_s: float
    timed_calls: int
    distinct_sets: int = 0  # input buffers; fewer than timed_calls: refilled between calls
    candidate_ms: float | None = None
    candidate_spread: float | None = None
    max_abs_error: float | None = None
    timing_checks: dict[str, float] | None = None  # the cross-checks' figures (see TimingChecks)
    lock_wait_s: float = 0.0  # waiting for another process's timing on the same GPU
    host_preemptions: int = 0  # times the host took the CPU from the timing thread
    failure: Failure | None = None  # when the candidate failed during timing
    wall_clock_only: bool = False  # the failure is the parent's clock's dispute alone
    busy_host: bool = False  # ... and the candidate's main thread's waits for a CPU explain it
    device_wait_ms: float = 0.0  # the reference's calls' wait for the device (cross_check.py)
    method: TimingMethod = DEFAULT_TIMING  # what eager_ms, compile_ms and candidate_ms are
    by_method: dict[str, MethodTimes] = field(default_factory=dict)  # every method's medians
    eager_launch_ms: float | None = None  # eager's host time to issue a call (median)
    launch_bound: bool = False  # that time is well above eager's GPU busy time (method.py)

    @property
    def contested(self) -> bool:
        """Other work shared the GPU while this was timed: its times are less certain."""
        return self.device_wait_ms > CONTESTED_WAIT_MS


def profile_candidate(job: TimingJob) -> ProfileResult:
    """Baselines (re-timed eager; torch.compile from `job.cached` unless compiled here) and, when
    `job.candidate` is given, the candidate on the same fresh input sets. torch.compile's first
    call runs first, holding the GPU's lock shared: mostly CPU-bound, but its kernels and inductor's
    benchmarks of kernel configurations must not overlap another process's timing (with eight
    workers on one GPU, 91 of 216 baselines spread over 5 %, against 1 of 34 timed by one worker
    alone). Everything timed runs holding the lock exclusively.

    `job.release` (baselines only: no candidate holds any of this process's GPU memory) frees
    what each section cached before it ends, and the example input of the first call is not kept
    across the wait for the exclusive lock: sets of up to `timing_memory_gb` left cached would
    leave the next timer short, and so would seven workers each waiting for their turn with a
    level-1 example and its first call's buffers (20-25 GB each: 55 of 228 baselines of a
    KernelBench sweep with eight workers on one GPU ran out of memory)."""
    ref, cached, release, device = job.ref, job.cached, job.release, job.device
    vsets = job.candidate.warm_sets if job.candidate is not None else []
    with gpu_lock(device, exclusive=False):
        if cached is None or ref.compiled is not None:
            ref.ensure_compiled(vsets[0] if vsets else job.draw())
        if release is not None:
            release()
    with gpu_lock(device, exclusive=True) as waited:
        example = vsets[0] if vsets else job.draw()
        result = timed_again_if_disputed(partial(_timed, job, example))
        del example
        if release is not None:
            release()
    result.lock_wait_s = waited
    return result


def _timed(job: TimingJob, example: list) -> ProfileResult:
    ref, draw, config, cached, run = job.ref, job.draw, job.config, job.cached, job.candidate
    cand = run.process if run is not None else None
    vsets, refs = (run.warm_sets, run.expected) if run is not None else ([], [])
    per_set = nbytes(example) + 3 * nbytes(refs[0] if refs else ref(*example))
    fit = int(config.timing_memory_gb * 2**30 // max(per_set, 1))
    distinct = max(1, min(config.timed_calls, fit))  # input sets that fit in memory
    n = max(config.min_timed_calls, distinct)  # calls; beyond `distinct`, sets are refilled
    sets = [draw() for _ in range(distinct)]
    refill = Refill(draw, sets) if n > distinct else None
    warm = (vsets or [example])[: config.warmup_calls]
    flush = L2Flusher(job.device)
    compiled = ref.compiled is not None
    sides = {"eager": Trusted(ref, sets, flush)}
    if compiled:
        sides["compile"] = Trusted(ref.run_compiled, sets, flush)
    if cand is not None:
        expected = [ref(*inputs) for inputs in sets]  # untimed, for comparing
        sides["candidate"] = Candidate(
            cand, sets, expected, run.poison_bytes, config, ref, refill, set(run.own_kernels)
        )
    spin_up(flush, config.spin_up_ms)
    for side in sides.values():
        side.warm_up(warm)
    preempted = _preemptions()
    failure, n = interleaved(sides, n, distinct, refill)
    preempted = _preemptions() - preempted
    if failure is not None:  # the candidate's: its verdict needs no baseline (none may be timed)
        nan = float("nan")
        return ProfileResult(nan, 0.0, nan, 0.0, 0.0, n, distinct_sets=distinct, failure=failure)
    method = TimingMethod(config.timing)
    eager = sides["eager"].times
    eager_ms, eager_spread = median_and_spread([t.measure(method) for t in eager])
    if compiled:
        compile_times = sides["compile"].times
        compile_ms, compile_spread = median_and_spread([t.measure(method) for t in compile_times])
        compile_by = {
            m: statistics.median(t.measure(m) for t in compile_times) for m in TimingMethod
        }
        first_call = ref.compile_first_call_s
    else:
        record = cached.for_method(method)
        compile_ms, compile_spread = record.compile_ms, record.compile_spread
        compile_by = {TimingMethod(m): v for m, v in record.compile_by_method.items()}
        first_call = cached.compile_first_call_s
    launch_ms = statistics.median(t.launch_ms for t in eager)
    eager_busy = statistics.median(t.measure(TimingMethod.KERNELS) for t in eager)
    result = ProfileResult(
        eager_ms, eager_spread, compile_ms, compile_spread, first_call, n, distinct_sets=distinct,
        host_preemptions=preempted, device_wait_ms=device_wait_ms(eager), method=method,
        eager_launch_ms=launch_ms, launch_bound=is_launch_bound(launch_ms, eager_busy),
    )  # fmt: skip
    side = sides.get("candidate")
    result.by_method = _by_method(eager, compile_by, side.times if side is not None else None)
    if cand is None:
        return result
    result.candidate_ms, result.candidate_spread = median_and_spread(
        [t.charged(method) for t in side.times]
    )
    result.max_abs_error = side.worst
    checks = cross_check(side.times, side.pings, side.unreported, sides["eager"].times, side.waits)
    result.timing_checks = {**checks.figures(), "host_preemptions": float(preempted)}
    violations = checks.violations()
    result.wall_clock_only = checks.wall_clock_disputed and len(violations) == 1
    result.busy_host = result.wall_clock_only and checks.busy_host
    if violations:
        result.failure = Failure(
            Status.VIOLATION,
            "the timing cross-checks failed: " + "; ".join(v.message for v in violations),
            violations=tuple(violations),
            timing_checks=result.timing_checks,
        )
    return result


def _by_method(eager: list[CallTime], compile_by: dict, candidate: list[CallTime] | None):
    """Every method's medians and speed-ups, the candidate charged as `CallTime.charged` says
    (trusted sides need no allowance: torch.compile's wrapper runs 0.27-0.33 ms on the host
    before its first kernel, no more charged than a candidate's first launch)."""
    out = {}
    for m in TimingMethod:
        e = statistics.median(t.measure(m) for t in eager)
        c = compile_by.get(m, float("nan"))
        if candidate is None:
            out[m.value] = MethodTimes(eager_ms=e, compile_ms=c)
            continue
        ms = statistics.median(t.charged(m) for t in candidate)
        out[m.value] = MethodTimes(
            eager_ms=e, compile_ms=c, candidate_ms=ms,
            speedup_vs_eager=e / ms, speedup_vs_compile=c / ms,
        )  # fmt: skip
    return out


def _preemptions() -> int:
    """Involuntary context switches of this thread so far: how often the host took the CPU
    from the timing thread (on a loaded host, launches wait and launch-bound times inflate)."""
    try:
        return resource.getrusage(resource.RUSAGE_THREAD).ru_nivcsw
    except (AttributeError, OSError):  # RUSAGE_THREAD is Linux-only
        return 0
