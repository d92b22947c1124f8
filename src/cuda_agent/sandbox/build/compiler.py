"""Running a compiler under a deadline, and the file locks that let processes share one cache."""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

_POLL_S = 0.1  # how soon a cancelled compile is killed


@dataclass(frozen=True)
class CompilerRun:
    returncode: int
    output: str
    timed_out: bool = False


def run_compiler(
    cmd: list[str], cwd: Path, deadline: float, cancel: threading.Event | None = None
) -> CompilerRun:
    """Run a compiler in its own process group; on the deadline, or once `cancel` is set, the
    whole group is killed (nvcc's cicc and ptxas included)."""
    env = {**os.environ, "LC_ALL": "C", "LANG": "C"}
    proc = subprocess.Popen(
        cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        errors="replace", start_new_session=True,
    )  # fmt: skip
    while True:
        left = max(0.1, deadline - time.monotonic())
        try:
            out, _ = proc.communicate(timeout=left if cancel is None else min(left, _POLL_S))
            return CompilerRun(proc.returncode, out)
        except subprocess.TimeoutExpired:
            cancelled = cancel is not None and cancel.is_set()
            if cancelled or time.monotonic() >= deadline:
                os.killpg(proc.pid, signal.SIGKILL)
                out, _ = proc.communicate()
                return CompilerRun(-signal.SIGKILL, out, timed_out=not cancelled)


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """An exclusive lock between processes and threads (flock on a file of our own)."""
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
