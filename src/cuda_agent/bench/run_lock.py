"""A run folder held by one run at a time: an exclusive flock on RUN/run.lock for the run's
life. The operating system releases it when the process ends, however it ends (kill -9
included), so a stale lock never blocks a rerun; a second run meanwhile is refused, naming the
process that holds the folder."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from cuda_agent.errors import UserError

LOCK = "run.lock"


@contextlib.contextmanager
def run_lock(root: Path) -> Iterator[None]:
    """Hold `root` (created if new) for the duration of the block; UserError if a live process
    holds it already."""
    root.mkdir(parents=True, exist_ok=True)
    fd = os.open(root / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            raise UserError(
                f"{root}: another run is using this folder (pid {holder}); wait for it to end, "
                "or choose another --out"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the lock
