"""Timed sections never share their GPU, across every process of this host.

Several evaluation workers may share a GPU (`--gpus 0,0`): torch.compile's first call and the
builds run side by side, but a timing taken while another process runs kernels on the same GPU
measures the contention, not the code. So GPU work takes a reader-writer lock on a file named
by the GPU's UUID: a timed section (drawing the timing sets, eager, torch.compile and candidate
calls) holds it exclusively; other GPU work (the reference's weights going to the GPU,
torch.compile's first call, verification, the null-kernel battery, loading a candidate, freeing
cached memory) holds it shared, so it overlaps anything but a timing. A second file is a turnstile
that gives a waiting timer precedence over newly arriving shared holders, so timers are never
starved. Only one process at a time therefore holds the memory of a full set of timing inputs.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import torch

_held = threading.local()  # the mode this thread holds; flock is not re-entrant across files


def lock_path(device: torch.device) -> Path:
    """The lock file of `device`: by UUID where torch reports one (the same GPU under any
    CUDA_VISIBLE_DEVICES numbering), else by visible index."""
    uuid = getattr(torch.cuda.get_device_properties(device), "uuid", None)
    name = str(uuid) if uuid else f"{os.environ.get('CUDA_VISIBLE_DEVICES', 'all')}-{device.index}"
    folder = Path(tempfile.gettempdir()) / "cuda-agent-gpu-locks"
    folder.mkdir(parents=True, exist_ok=True)
    return folder / f"gpu-{name.replace('/', '_')}.lock"


def gpu_lock(device: torch.device, exclusive: bool):
    """Hold the GPU's lock (exclusive for timing, shared otherwise); yields seconds waited."""
    return rw_lock(lock_path(device), exclusive)


def lock_files(path: Path) -> tuple[Path, Path]:
    """The files of the reader-writer lock on `path`: `path` and its turnstile, created when
    missing (a confined process cannot create them: call this before confining it)."""
    files = (path, path.with_name(path.name + ".turnstile"))
    for file in files:
        if not file.exists():
            file.touch(exist_ok=True)
    return files


@contextmanager
def rw_lock(path: Path, exclusive: bool) -> Iterator[float]:
    """A reader-writer lock between processes on `path` (see `lock_files`).

    Inside a section of the same or a stronger mode it is a no-op; asking for exclusive inside
    shared is a programming error (it would wait on itself)."""
    held = getattr(_held, "mode", None)
    if held == "exclusive" or (held == "shared" and not exclusive):
        yield 0.0
        return
    if held == "shared":
        raise RuntimeError("exclusive GPU lock requested inside a shared section")
    start = time.perf_counter()
    path, turnstile = lock_files(path)
    # read-only: a confined child (Landlock: writes only in its folder) may take the lock too
    with open(turnstile, "rb") as gate, open(path, "rb") as lock:
        fcntl.flock(gate, fcntl.LOCK_EX)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        finally:
            fcntl.flock(gate, fcntl.LOCK_UN)
        _held.mode = "exclusive" if exclusive else "shared"
        try:
            yield time.perf_counter() - start
        finally:
            _held.mode = None
            fcntl.flock(lock, fcntl.LOCK_UN)
