"""Candidate processes started ahead of need."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait

from cuda_agent.sandbox.process.candidate import CandidateProcess, discard


class SpareCandidate:
    """Candidate processes started ahead of need, `depth` of them.

    Starting one (a fork, a CUDA context, the GPU trace: about 0.25 s on an H100's host) takes
    longer on a host busy with builds and other evaluations; with two, back-to-back rounds each
    take a process that has had two rounds to start. `make` returns a process already started;
    its `wait_ready` waits for the start to finish.
    """

    def __init__(self, make: Callable[[], CandidateProcess], depth: int = 2):
        self._make = make
        self._depth = max(1, depth)
        self._executor = ThreadPoolExecutor(
            max_workers=self._depth, thread_name_prefix="cuda-agent-spare"
        )
        self._ready: deque[Future] = deque()
        self._lock = threading.Lock()
        self._starting: set[CandidateProcess] = set()
        self._closed = False

    def prepare(self, count: int | None = None) -> None:
        """Top up to `count` (default `depth`, at most `depth`) processes starting. When more
        than one is missing (the first round), the others start only after the first is up:
        starts side by side would slow the one the round waits for."""
        first = None
        while not self._closed and len(self._ready) < min(count or self._depth, self._depth):
            future = self._executor.submit(self._start_after, first)
            first = first or future
            self._ready.append(future)

    def _start_after(self, first: Future | None) -> CandidateProcess:
        if first is not None:
            wait([first])
        cand = self._make()
        with self._lock:
            self._starting.add(cand)
            closed = self._closed
        try:
            if closed:
                cand.kill()
            cand.wait_ready()
        except BaseException:
            discard(cand)
            raise
        finally:
            with self._lock:
                self._starting.discard(cand)
        return cand

    def take(self) -> CandidateProcess:
        """The oldest prepared process (started now if none was); raises CandidateFailure."""
        if not self._ready:
            self._ready.append(self._executor.submit(self._start_after, None))
        return self._ready.popleft().result()

    def close(self) -> None:
        """Stop every spare, those still starting at once (nobody will use them)."""
        with self._lock:
            self._closed = True
            starting = list(self._starting)
        futures, self._ready = list(self._ready), deque()
        for future in futures:
            future.cancel()
        for cand in starting:
            cand.kill()
        for future in futures:
            if future.cancelled():
                continue
            try:
                discard(future.result(timeout=120))
            except Exception:  # a spare that failed to start was discarded where it failed
                pass
        self._executor.shutdown(wait=False)
