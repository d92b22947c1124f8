"""Service workers: something that holds an Environment and runs `calls` on it, one at a time.

`InProcessWorker` holds it in this process; `LocalWorker` in a child interpreter started with
its GPU pinned by CUDA_VISIBLE_DEVICES before anything imports torch (Ray actors live in
`ray_workers`). A worker that dies or overruns its call is replaced and the call fails with
`WorkerLost`; an exception inside a call fails only that call, with `WorkerError`.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import replace
from multiprocessing import Pipe
from pathlib import Path
from typing import Any, Protocol

from cuda_agent.bench import calls
from cuda_agent.sandbox import EnvConfig, Environment

STARTUP_TIMEOUT_S = 600.0  # importing torch and warming an Environment on a busy host
POLL_S = 0.5


class WorkerLost(Exception):
    """The worker process died or overran its call (`timed_out`); it has been replaced."""

    def __init__(self, message: str, timed_out: bool = False):
        super().__init__(message)
        self.timed_out = timed_out


class WorkerError(Exception):
    """The call raised inside the worker (the text is its traceback); the worker lives on."""


class Worker(Protocol):
    name: str
    restarts: int
    pid: int | None  # the process holding the Environment, where this process can tell

    def call(self, method: str, args: tuple, timeout_s: float) -> Any: ...

    def close(self) -> None: ...

    def kill(self) -> None:
        """End the worker now (its call in flight fails); it is not replaced after this."""


class InProcessWorker:
    """The service's in-process mode: one Environment in this process, calls serialized."""

    def __init__(self, env_config: EnvConfig, name: str = "inprocess"):
        self.name = name
        self.restarts = 0
        self.pid = os.getpid()
        self._env = Environment(env_config)
        self._env.__enter__()
        self._env.warm_up()
        self._lock = threading.Lock()

    def call(self, method: str, args: tuple, timeout_s: float) -> Any:
        with self._lock:
            try:
                return calls.dispatch(self._env, method, args)
            except Exception as err:
                raise WorkerError(f"{type(err).__name__}: {err}") from err

    def close(self) -> None:
        self._env.__exit__(None, None, None)

    def kill(self) -> None:
        """A call in this process cannot be interrupted; it finishes, then close() follows."""


class LocalWorker:
    """One child interpreter owning one Environment, pinned to `device` (None: no GPU at all)."""

    def __init__(self, name: str, env_config: EnvConfig, device: str | None, log_dir: Path):
        self.name = name
        self.device = device
        self.restarts = 0
        self._config = replace(env_config, device_index=0) if device is not None else env_config
        self._log_path = log_dir / f"{name}.log"
        self._proc: subprocess.Popen | None = None
        self._conn = None
        self._ready = False
        self._killed = False
        self._launch()

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def call(self, method: str, args: tuple, timeout_s: float) -> Any:
        if not self._ready:
            self.wait_ready()
        if self._proc.poll() is not None:
            self._replace()
        try:
            self._conn.send((method, args))
            replied = self._wait(timeout_s)
            if replied:
                kind, value = self._conn.recv()
        except (EOFError, OSError):
            replied = False
        if not replied:
            code = self._proc.poll()
            tail = self._log_tail()
            self._replace()
            if code is None:
                raise WorkerLost(f"{self.name}: no answer within {timeout_s:.0f} s", True)
            raise WorkerLost(f"{self.name}: worker died (exit {code}){tail}")
        if kind == "error":
            raise WorkerError(value)
        return value

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if self._proc is not None:
            try:
                self._proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            self._proc = None

    def kill(self) -> None:
        """Stop the child at once, for good (a failed start, or a service torn down)."""
        self._killed = True
        self._stop_child()

    def _stop_child(self) -> None:
        """Kill the worker's process group: the worker and the compilers and candidates it
        started (it leads the group: start_new_session)."""
        if self._proc is not None and self._proc.poll() is None:
            try:
                os.killpg(self._proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self._proc.wait()

    def _wait(self, timeout_s: float) -> bool:
        """True once a reply (or EOF) is readable; False past the deadline or when the child
        is gone with nothing to read."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._conn.poll(POLL_S):
                return True
            if self._proc.poll() is not None:
                return self._conn.poll(0)  # a reply sent just before exiting, or EOF
        return False

    def _launch(self) -> None:
        parent, child = Pipe(duplex=True)
        env = dict(os.environ)
        env["CUDA_VISIBLE_DEVICES"] = self.device if self.device is not None else ""
        with self._log_path.open("ab") as log:
            self._proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "cuda_agent.bench.worker_main",
                    str(child.fileno()),
                    str(os.getpid()),  # the worker ends when this process is gone
                ],
                env=env,
                pass_fds=(child.fileno(),),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,  # a Ctrl-C in the terminal reaches the parent only;
                # the worker leads its own process group, which it kills if the parent dies
            )
        child.close()
        self._conn = parent
        self._ready = False
        parent.send(self._config)

    def wait_ready(self) -> None:
        """Block until the child has its Environment; WorkerLost if it fails to get there."""
        if not self._wait(STARTUP_TIMEOUT_S):
            self._proc.kill()
            raise WorkerLost(f"{self.name}: did not start within {STARTUP_TIMEOUT_S:.0f} s")
        try:
            kind, _ = self._conn.recv()
        except EOFError:
            raise WorkerLost(f"{self.name}: failed to start{self._log_tail()}") from None
        if kind != "ready":
            raise WorkerLost(f"{self.name}: failed to start")
        self._ready = True

    def _replace(self) -> None:
        if self._killed:
            raise WorkerLost(f"{self.name}: the service is shutting down")
        self._stop_child()
        if self._conn is not None:
            self._conn.close()
        self.restarts += 1
        self._launch()
        self.wait_ready()

    def _log_tail(self, lines: int = 12) -> str:
        try:
            text = self._log_path.read_text(errors="replace").strip().splitlines()[-lines:]
        except OSError:
            return ""
        return ("; last output:\n" + "\n".join(text)) if text else ""


def local_workers(
    env_config: EnvConfig, devices: list[str | None], compile_workers: int
) -> tuple[list[LocalWorker], list[LocalWorker], Path]:
    """Build workers (no GPU) and one evaluation worker per entry of `devices` (None: a worker
    without a GPU); their log folder. Builds target the first GPU's architecture unless the
    config names one.
    """
    log_dir = Path(tempfile.mkdtemp(prefix="cuda-agent-service-"))
    arch = env_config.arch
    if arch is None and devices[0] is not None and devices[0].isdigit():
        arch = calls.device_arch(int(devices[0]))
    build_config = replace(env_config, arch=arch)
    builders = [
        LocalWorker(f"build{i}", build_config, None, log_dir) for i in range(compile_workers)
    ]
    evaluators = [
        LocalWorker(f"gpu{i}" if d is None else f"gpu{i}-dev{d}", env_config, d, log_dir)
        for i, d in enumerate(devices)
    ]
    try:
        for worker in builders + evaluators:  # started together above: they warm up in parallel
            worker.wait_ready()
    except WorkerLost:
        for worker in builders + evaluators:
            worker.kill()
        raise
    return builders, evaluators, log_dir
