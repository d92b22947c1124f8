"""Child processes forked from a warm, torch-preloaded server, watched for time and memory.

A fresh Python pays ~5.5 s to import torch and reach CUDA; a child forked from a server that
already imported torch (and never touched CUDA) reaches it in ~0.5 s. multiprocessing's
forkserver is that server; `torch.multiprocessing` registers the reductions that move CUDA
tensors between processes over CUDA IPC.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from dataclasses import dataclass

import psutil
import torch.multiprocessing as tmp

from cuda_agent.sandbox.process.fork_server import PRELOAD


def forkserver_context(preload: tuple[str, ...] = ()):
    """The forkserver context; `preload` adds modules the server imports once for every child.
    The server starts on first use (or earlier: `fork_server.start_early`) and keeps the list it
    started with (one per process)."""
    ctx = tmp.get_context("forkserver")
    ctx.set_forkserver_preload([*PRELOAD, *preload])
    return ctx


def start_process(proc) -> None:
    """proc.start(), without the child re-importing the parent's __main__ (multiprocessing does
    that so pickled functions from __main__ resolve; ours never come from there, and re-running a
    CLI script or pytest in every child costs time and can fail outright, e.g. for `python -`)."""
    main = sys.modules["__main__"]
    saved = {k: main.__dict__.pop(k) for k in ("__file__",) if k in main.__dict__}
    spec = getattr(main, "__spec__", None)
    main.__spec__ = None
    try:
        proc.start()
    finally:
        main.__spec__ = spec
        main.__dict__.update(saved)


@dataclass
class Exit:
    """Why waiting on a child stopped, when it was not a message."""

    kind: str  # "timeout" | "memory" | "died"
    detail: str


def wait_for_message(proc, conn, timeout_s: float, memory_mb: int | None):
    """The child's next message, or an Exit saying why none came (the child is killed then)."""
    stopped = wait_ready(proc, conn, timeout_s, memory_mb)
    if stopped is not None:
        return stopped
    try:
        return conn.recv()
    except (EOFError, OSError):
        return _died(proc)


def wait_ready(proc, conn, timeout_s: float, memory_mb: int | None) -> Exit | None:
    """Block until the child's next message can be read (None) or it cannot come (an Exit)."""
    deadline = time.monotonic() + timeout_s
    while True:
        if conn.poll(0.05):
            return None
        if not proc.is_alive():
            if conn.poll(0):
                return None
            return _died(proc)
        if memory_mb is not None and _rss_mb(proc.pid) > memory_mb:
            kill_tree(proc)
            return Exit("memory", f"used more than {memory_mb} MiB of host memory and was killed")
        if time.monotonic() > deadline:
            kill_tree(proc)
            return Exit("timeout", f"did not answer within {timeout_s:.0f} s and was killed")


def _died(proc) -> Exit:
    proc.join(timeout=5)
    code = proc.exitcode
    if code is not None and code < 0:
        name = signal.Signals(-code).name if -code in signal.Signals._value2member_map_ else code
        return Exit("died", f"was killed by signal {name}")
    return Exit("died", f"exited with status {code} before answering")


def _rss_mb(pid: int) -> float:
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
        return sum(p.memory_info().rss for p in procs) / 2**20
    except psutil.Error:
        return 0.0


def kill_tree(proc) -> None:
    """SIGKILL the child and everything it started."""
    if proc.pid is None:
        return
    try:
        children = psutil.Process(proc.pid).children(recursive=True)
    except psutil.Error:
        children = []
    for p in [*children]:
        try:
            p.kill()
        except psutil.Error:
            pass
    try:
        os.kill(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, TypeError):
        pass
    proc.join(timeout=10)
