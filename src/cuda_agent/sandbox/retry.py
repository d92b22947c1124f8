"""When an evaluation, or part of one, is tried again: the whole policy, case by case.

Every case tries once more, never more. A second try of an evaluation or of untimed GPU work
holds the GPU's lock exclusively ("alone"): no other process then holds a set of timing inputs or
starts GPU work, and workers sharing a GPU each free what a section cached before leaving it, so
the try has the GPU's memory to itself but for weights and compiled graphs.

HARNESS_OUT_OF_MEMORY    The harness ran out of GPU memory holding a task's inputs and reference
                         outputs, or filling memory with NaN before a call in the candidate's
                         process: harness_error, then the evaluation again alone.
CANDIDATE_OUT_OF_MEMORY  The candidate's code ran out of GPU memory while other evaluations
                         shared the GPU: harness_error, then the evaluation again alone, where
                         running out is the candidate's runtime error. (A KernelBench softmax
                         with 6 GB outputs ran out beside two other evaluations.)
BUSY_HOST                The host kept the candidate's process off the CPU for as long as its
                         reported times fall short of the parent's clock, on both timing passes
                         (see WALL_CLOCK_DISPUTE): harness_error, then the evaluation again alone.
BASELINE_OUT_OF_MEMORY   Timing the baselines, or torch.compile's first call, ran out of GPU
                         memory: that work again alone. (Eight workers compiling KernelBench's
                         level-1 problems side by side, inputs up to 8 GB and inductor's copies
                         beside them, ran out 42 times in 77.)
WALL_CLOCK_DISPUTE       On a timing pass the parent's wall clock alone disputes the candidate's
                         reported times: a second timing pass. A patched clock is disputed on
                         every pass, a busy host rarely on two.

A harness_error verdict is no verdict on the candidate: the bench runner evaluates it again
after every other evaluation, and a rerun redoes it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, TypeVar

import torch

from cuda_agent.sandbox.outcome import Failure
from cuda_agent.sandbox.timing.gpu_lock import gpu_lock
from cuda_agent.sandbox.verdict import Status, Verdict

if TYPE_CHECKING:
    from cuda_agent.sandbox.timing.profile import ProfileResult

T = TypeVar("T")


def evaluate_again_alone(attempt: Callable[[bool], Verdict], device) -> Verdict:
    """HARNESS_OUT_OF_MEMORY, CANDIDATE_OUT_OF_MEMORY, BUSY_HOST: `attempt(alone)` once beside
    others, and once more alone when that gave harness_error."""
    verdict = attempt(False)
    if verdict.status == Status.HARNESS_ERROR:
        with gpu_lock(device, exclusive=True):
            verdict = attempt(True)
    return verdict


def evaluate_alone(attempt: Callable[[bool], Verdict], device) -> tuple[Verdict, float]:
    """An evaluation admitted only alone (admission.py): `attempt(True)` holding the GPU's lock
    exclusively; the verdict and the seconds waited for the lock."""
    with gpu_lock(device, exclusive=True) as waited:
        return attempt(True), waited


def blame_out_of_memory(failure: Failure, out_of_memory: bool, alone: bool) -> Failure:
    """CANDIDATE_OUT_OF_MEMORY: the candidate's own out-of-memory is its runtime error only on
    the try that held the GPU alone; beside others it is harness_error (tried again alone)."""
    if not (out_of_memory and failure.status == Status.RUNTIME_ERROR):
        return failure
    if alone:
        message = f"ran out of GPU memory with no other evaluation running: {failure.message}"
        return replace(failure, message=message)
    return replace(
        failure,
        status=Status.HARNESS_ERROR,
        message="the candidate ran out of GPU memory while other evaluations shared the GPU "
        f"(not yet a verdict: it is tried again holding the GPU alone): {failure.message}",
    )


def harness_out_of_memory(err: torch.cuda.OutOfMemoryError) -> Failure:
    """HARNESS_OUT_OF_MEMORY in the harness's own process."""
    return Failure(
        Status.HARNESS_ERROR,
        f"the harness ran out of GPU memory holding this task's inputs and "
        f"reference outputs (not a verdict on the candidate; evaluate it again with "
        f"fewer evaluations sharing the GPU): {str(err).splitlines()[0]}",
    )


def again_alone_if_out_of_memory(work: Callable[[], T], device, release: Callable[[], None]) -> T:
    """BASELINE_OUT_OF_MEMORY: `work()`; when it runs out of GPU memory, again holding the GPU's
    lock exclusively, after `release` has handed back what this process cached."""
    try:
        return work()
    except torch.cuda.OutOfMemoryError:
        release()
        with gpu_lock(device, exclusive=True):
            try:
                return work()
            finally:
                release()


def timed_again_if_disputed(timed: Callable[[], ProfileResult]) -> ProfileResult:
    """WALL_CLOCK_DISPUTE, and BUSY_HOST where the second pass shows the host's load explains
    the dispute: the result of the last timing pass."""
    result = timed()
    if not result.wall_clock_only:
        return result
    first = result.timing_checks
    result = timed()
    if result.timing_checks is not None:
        result.timing_checks["timed_passes"] = 2.0
    if result.busy_host:
        result.failure = _busy_host(result.timing_checks)
    elif result.wall_clock_only:
        result.failure = replace(
            result.failure,
            message=result.failure.message
            + (
                f" (as on a first timing pass: median {first['unreported_ms']:.3f}, "
                f"lower quartile {first['unreported_low_ms']:.3f} ms)"
            ),
        )
    return result


def _busy_host(figures: dict[str, float]) -> Failure:
    """BUSY_HOST: the host kept the candidate's process off the CPU for as long as its calls'
    reported times fall short of the parent's clock, on both timing passes."""
    return Failure(
        Status.HARNESS_ERROR,
        "the host was too busy to confirm the candidate's times: on two timing "
        f"passes its calls took at least {figures['unreported_low_ms']:.3f} ms longer by the "
        "parent's clock than they reported, while its main thread waited "
        f"{figures['child_wait_ms']:.3f} ms for a CPU (beyond a no-op call's); not a verdict on "
        "the candidate: evaluate it again with fewer processes busy on this host",
        timing_checks=figures,
    )
