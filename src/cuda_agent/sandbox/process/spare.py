"""Candidate processes started ahead of need."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait

from cuda_agent.sandbox.process.candidate import CandidateProcess, discard


class SpareCandidate:
    """Candidate processes started ahead of need, `depth` of them.

    Starting one costs seconds (a CUDA context, the profiler's CUPTI start-up: 4-9 s on an
    H200's host), more than a round that edits one kernel takes to build (about 2 s). One spare
    started at the end of a round is ready by the next only when the caller thinks between
    rounds; with two, back-to-back rounds each take a process that has had two rounds to start.
    """

    def __init__(self, make: Callable[[], CandidateProcess], depth: int = 2):
        self._make = make
        self._depth = max(1, depth)
        self._executor = ThreadPoolExecutor(
            max_workers=self._depth, thread_name_prefix="cuda-agent-spare"
        )
        self._ready: deque[Future] = deque()

    def prepare(self, count: int | None = None) -> None:
        """Top up to `count` (default `depth`, at most `depth`) processes starting. When more
        than one is missing (the first round), the others start only after the first is up:
        starts side by side would slow the one the round waits for."""
        first = None
        while len(self._ready) < min(count or self._depth, self._depth):
            future = self._executor.submit(self._start_after, first)
            first = first or future
            self._ready.append(future)

    def _start_after(self, first: Future | None) -> CandidateProcess:
        if first is not None:
            wait([first])
        return self._make()

    def take(self) -> CandidateProcess:
        """The oldest prepared process (started now if none was); raises CandidateFailure."""
        if not self._ready:
            self._ready.append(self._executor.submit(self._make))
        return self._ready.popleft().result()

    def close(self) -> None:
        futures, self._ready = list(self._ready), deque()
        for future in futures:
            try:
                discard(future.result(timeout=120))
            except Exception:  # a spare that failed to start has nothing left to close
                pass
        self._executor.shutdown(wait=False)
