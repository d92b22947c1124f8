"""The parent's handle on one candidate process: typed requests with deadlines, failures typed."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from cuda_agent.sandbox.outcome import Failure
from cuda_agent.sandbox.process.child import candidate_main
from cuda_agent.sandbox.process.messages import (
    Answer,
    BuildAnswer,
    BuildRequest,
    ChildError,
    ExtensionCall,
    Request,
    Stop,
)
from cuda_agent.sandbox.process.watch import Exit, kill_tree, start_process, wait_ready
from cuda_agent.sandbox.timing import run_queue
from cuda_agent.sandbox.verdict import Status
from cuda_agent.sandbox.violation import Check, Rule, Violation


@dataclass(frozen=True)
class RoundTrip:
    """One request as the parent saw it."""

    seconds: float  # from sending it until the reply could be read, by the parent's clock
    parent_wait_ms: float  # the parent's thread meanwhile runnable but kept off a CPU
    child_wait_ms: float  # the same for the candidate's main thread (reported, not trusted)


class CandidateFailure(Exception):
    """The candidate process failed a request: the Failure, and whether it ran out of GPU
    memory (whose fault that is, retry.py decides)."""

    compiled = True  # the extension was built before the process failed

    def __init__(self, status: Status, message: str, out_of_memory: bool = False):
        super().__init__(message)
        # a violation here is the GPU trace stopped: its first line names it
        violations: tuple[Violation, ...] = ()
        if status == Status.VIOLATION:
            first = message.splitlines()[0]
            violations = (
                Violation(rule=Rule.TRACE_TAMPERED, check=Check.RUNTIME_GUARD, message=first),
            )
        self.failure = Failure(status, message, violations)
        self.out_of_memory = out_of_memory


class CandidateProcess:
    def __init__(self, ctx, workdir: Path, device_index: int, timeout_s: float, memory_mb: int):
        self.workdir = workdir
        self.timeout_s = timeout_s
        self.memory_mb = memory_mb
        # answers a single-file submission's builds (BuildRequest) mid-request
        self.on_extension: Callable[[BuildRequest], BuildAnswer] | None = None
        began = time.time()
        self.conn, child_end = ctx.Pipe(duplex=True)
        self.proc = ctx.Process(
            target=candidate_main,
            args=(child_end, str(workdir), device_index),
            daemon=True,
        )
        start_process(self.proc)
        child_end.close()
        self._began = began
        self.layers: dict[str, bool] = {}
        self.startup_s: dict[str, float] = {}

    def wait_ready(self) -> None:
        """Wait for the process to finish its start (CUDA, the GPU trace, the confinement);
        raises CandidateFailure where it died or took longer than the request timeout."""
        # No memory watch while it starts: only harness code runs then, and the watch (a scan of
        # the process table every 50 ms) would hold the GIL in a thread beside another round's
        # timed calls while a spare starts.
        ready = self._receive("start", self.timeout_s, watch_memory=False)
        self.layers = ready.layers
        self.startup_s = _startup_steps(self._began, ready.stamps, time.time())

    def kill(self) -> None:
        """End the process at once, started or not (wait_ready then fails)."""
        kill_tree(self.proc)

    def request(self, request: Request, timeout_s: float | None = None) -> Answer:
        """Send one request; its answer, or CandidateFailure."""
        return self.timed_request(request, timeout_s)[0]

    def timed_request(self, request: Request, timeout_s: float | None = None):
        """(the answer, its RoundTrip)."""
        child = run_queue.main_thread(self.proc.pid)
        waits = run_queue.waited_ns(run_queue.OWN_THREAD), run_queue.waited_ns(child)
        try:
            self.conn.send(request)
        except (BrokenPipeError, OSError):
            raise self._failure(Exit("died", "closed its end of the pipe")) from None
        start = time.perf_counter()
        reply = self._receive(request.command, timeout_s or self.timeout_s, start)
        trip = RoundTrip(
            self._ready_after,
            run_queue.wait_ms(waits[0], run_queue.waited_ns(run_queue.OWN_THREAD)),
            run_queue.wait_ms(waits[1], run_queue.waited_ns(child)),
        )
        return reply, trip

    def _receive(
        self, step: str, timeout_s: float, start: float | None = None, watch_memory: bool = True
    ):
        start = start or time.perf_counter()
        memory_mb = self.memory_mb if watch_memory else None
        building = 0.0  # the parent's own build time, which the child's deadline does not count
        while True:
            left = timeout_s - (time.perf_counter() - start - building)
            stopped = wait_ready(self.proc, self.conn, max(0.0, left), memory_mb)
            self._ready_after = time.perf_counter() - start - building
            if stopped is None:
                try:
                    msg = self.conn.recv()
                except (EOFError, OSError):
                    stopped = Exit("died", "closed the pipe mid-answer")
            if stopped is not None:
                raise self._failure(stopped, step)
            if not isinstance(msg, BuildRequest):
                break
            mark = time.perf_counter()
            answer = self._extension(msg, step)
            building += time.perf_counter() - mark
            try:
                self.conn.send(answer)
            except (BrokenPipeError, OSError):
                raise self._failure(Exit("died", "closed its end of the pipe"), step) from None
        if isinstance(msg, ChildError):
            raise CandidateFailure(
                msg.kind.status,
                f"{step}: {msg.text}{self._log_tail()}",
                out_of_memory=msg.kind.out_of_memory,
            )
        return msg

    def _extension(self, call: BuildRequest, step: str) -> BuildAnswer:
        """The answer to a build asked for mid-request; the handler raises CandidateFailure to
        end the evaluation (a guard violation, a compile error)."""
        if self.on_extension is None:
            what = (
                f"torch.utils.cpp_extension.{call.api}"
                if isinstance(call, ExtensionCall)
                else "Triton's compiler"
            )
            raise CandidateFailure(
                Status.INVALID,
                f"{step}: calls {what}, which only a single-file submission may do; a "
                "workspace's kernels/ are built by the harness",
            )
        return self.on_extension(call)

    def _failure(self, stopped: Exit, step: str = "") -> CandidateFailure:
        status = Status.TIMEOUT if stopped.kind == "timeout" else Status.RUNTIME_ERROR
        where = f" during {step}" if step else ""
        return CandidateFailure(
            status, f"the candidate process {stopped.detail}{where}{self._log_tail()}"
        )

    def _log_tail(self, keep: int = 1500) -> str:
        try:
            text = (self.workdir / "child.log").read_text(errors="replace").strip()
        except OSError:
            return ""
        return f"\n--- output of the candidate process (tail) ---\n{text[-keep:]}" if text else ""

    def close(self) -> None:
        if self.proc.is_alive():
            try:
                self.conn.send(Stop())
                self.proc.join(timeout=2)
            except (BrokenPipeError, OSError):
                pass
        kill_tree(self.proc)
        self.conn.close()


def _startup_steps(began: float, stamps: dict, ready: float) -> dict[str, float]:
    """Seconds of each step of a process's start, from the child's wall-clock stamps: reaching
    the child's code (the fork server's own start, when it was not running yet), the CUDA
    context, the GPU trace's start, the confinement, and the answer reaching the parent."""
    steps, last = {}, began
    for step in ("fork", "cuda", "kernel_trace", "confinement"):  # each stamped at its end
        steps[step] = max(0.0, stamps[step] - last)
        last = stamps[step]
    steps["answer"] = max(0.0, ready - last)
    return steps


def discard(cand: CandidateProcess) -> None:
    """Stop a candidate process and remove its working folder."""
    cand.close()
    shutil.rmtree(cand.workdir, ignore_errors=True)
