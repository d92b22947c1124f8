"""The service's scheduler: a build queue served by CPU workers feeding a GPU queue served by one
worker per GPU, so a GPU only ever waits for work that is ready to run.

One thread per worker takes the next item of its queue and makes one call at a time. A worker
lost in a call (died, hung) is replaced by the worker itself and the call is tried once more on
the replacement; a second loss, or an exception inside the call, fails that item alone.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from cuda_agent.bench.store import failed_verdict
from cuda_agent.bench.workers import Worker, WorkerError, WorkerLost
from cuda_agent.sandbox import Solution, Stage, Status, Verdict
from cuda_agent.task import Task


@dataclass
class _Item:
    future: Future
    method: str
    args: tuple
    on_failure: Callable[[Exception], Any] | None = None  # a result standing in for a failure
    then_gpu: bool = False  # a build: a non-Verdict result goes on to the GPU queue
    running: bool = False  # the future was already marked running (the GPU half of a build)


@dataclass(frozen=True)
class WorkerStats:
    name: str
    role: str
    calls: int
    restarts: int
    pid: int | None


@dataclass
class _Counter:
    calls: dict[str, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, name: str) -> None:
        with self.lock:
            self.calls[name] = self.calls.get(name, 0) + 1


class Pipeline:
    """Futures for evaluations (build, then GPU) and for plain GPU calls (baselines, audit)."""

    def __init__(self, builders: list[Worker], evaluators: list[Worker], call_timeout_s: float):
        if not evaluators:
            raise ValueError("the pipeline needs at least one evaluation worker")
        self._builders, self._evaluators = builders, evaluators
        self._timeout = call_timeout_s
        self._build_q: queue.Queue[_Item | None] = queue.Queue()
        self._gpu_q: queue.Queue[_Item | None] = queue.Queue()
        self._counter = _Counter()
        self._build_threads = [self._thread(w, self._build_q) for w in builders]
        self._gpu_threads = [self._thread(w, self._gpu_q) for w in evaluators]
        self._closed = False

    def submit_evaluation(self, task: Task, solution: Solution, stage: Stage) -> Future:
        future: Future = Future()

        def failed(err: Exception) -> Verdict:
            return _service_failure(task, stage, err)

        if self._builders:
            item = _Item(future, "build", (task, solution, stage), failed, then_gpu=True)
            self._build_q.put(item)
        else:  # in-process: the one worker builds as part of its evaluation
            self._gpu_q.put(_Item(future, "evaluate", (task, solution, stage, None), failed))
        return future

    def submit_gpu(self, method: str, args: tuple) -> Future:
        future: Future = Future()
        self._gpu_q.put(_Item(future, method, args))
        return future

    @property
    def workers(self) -> tuple[list[Worker], list[Worker]]:
        """(build workers, GPU workers)."""
        return self._builders, self._evaluators

    def stats(self) -> list[WorkerStats]:
        return [
            WorkerStats(w.name, role, self._counter.calls.get(w.name, 0), w.restarts, w.pid)
            for role, group in (("build", self._builders), ("gpu", self._evaluators))
            for w in group
        ]

    def close(self, cancel_pending: bool = False) -> None:
        """Finish queued work (or cancel it), stop the threads, then the workers."""
        if self._closed:
            return
        self._closed = True
        if cancel_pending:  # stop now: drop what waits, end the calls in flight
            for q in (self._build_q, self._gpu_q):
                _cancel_all(q)
            for worker in self._builders + self._evaluators:
                worker.kill()
        for q, threads in ((self._build_q, self._build_threads), (self._gpu_q, self._gpu_threads)):
            for _ in threads:
                q.put(None)
            for t in threads:
                t.join()
        for worker in self._builders + self._evaluators:
            worker.close()

    def _thread(self, worker: Worker, q: queue.Queue) -> threading.Thread:
        thread = threading.Thread(
            target=self._serve, args=(worker, q), name=f"service-{worker.name}", daemon=True
        )
        thread.start()
        return thread

    def _serve(self, worker: Worker, q: queue.Queue) -> None:
        while (item := q.get()) is not None:
            if not item.running and not item.future.set_running_or_notify_cancel():
                continue  # cancelled while queued
            try:
                result = self._call(worker, item.method, item.args)
            except (WorkerLost, WorkerError) as err:
                if item.on_failure is None:
                    item.future.set_exception(err)
                else:
                    item.future.set_result(item.on_failure(err))
                continue
            if item.then_gpu and not isinstance(result, Verdict):
                task, solution, stage = item.args
                self._gpu_q.put(
                    _Item(
                        item.future,
                        "evaluate",
                        (task, solution, stage, result),
                        item.on_failure,
                        running=True,
                    )
                )
            else:
                item.future.set_result(result)

    def _call(self, worker: Worker, method: str, args: tuple) -> Any:
        try:
            result = worker.call(method, args, self._timeout)
        except WorkerLost:  # the worker replaced itself: once more, on the replacement
            result = worker.call(method, args, self._timeout)
        self._counter.add(worker.name)
        return result


def _service_failure(task: Task, stage: Stage, err: Exception) -> Verdict:
    """An evaluation the service could not finish. An exception out of the Environment is the
    harness's own failure (the candidate's are verdicts), so it is harness_error, with the
    exception's last line, not the worker's traceback."""
    if isinstance(err, WorkerLost):
        status = Status.TIMEOUT if err.timed_out else Status.RUNTIME_ERROR
        return failed_verdict(
            task,
            stage,
            status,
            f"the evaluation worker was lost twice: {str(err)[-2000:]}",
            service_error=True,
        )
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    last = (lines or [type(err).__name__])[-1][:500]
    return failed_verdict(
        task, stage, Status.HARNESS_ERROR, f"the harness failed: {last}", service_error=True
    )


def _cancel_all(q: queue.Queue) -> None:
    """Cancel what waits in `q`; a build's GPU half (already running) gets a failed result."""
    while True:
        try:
            item = q.get_nowait()
        except queue.Empty:
            return
        if item is None:
            continue
        if item.running:
            item.future.set_result(item.on_failure(WorkerError("the service was shut down")))
        else:
            item.future.cancel()
