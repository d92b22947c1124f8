"""How long a thread waited for a CPU: the second figure of Linux's per-thread schedstat, the
nanoseconds it spent runnable but not running. The kernel keeps it, so no process can write it.

The parent's round trip to a candidate's process is its check on the times that process reports,
and a loaded host stretches that round trip whenever the parent's own thread is kept off a CPU:
that wait is the host's, not the candidate's, and is taken out. The candidate's main thread's
wait is never taken out (the candidate's own threads could make it): where it is as long as a
dispute, it only makes the dispute no verdict (harness_error) rather than a violation."""

from __future__ import annotations

OWN_THREAD = "/proc/thread-self/schedstat"  # the calling thread's (Linux 3.17 and later)


def waited_ns(path: str) -> int | None:
    """The wait recorded in one schedstat file, or None where there is none (not Linux, or the
    thread has exited)."""
    try:
        with open(path, "rb") as f:
            return int(f.read().split()[1])
    except (OSError, IndexError, ValueError):
        return None


def main_thread(pid: int) -> str:
    """The schedstat of a process's main thread."""
    return f"/proc/{pid}/task/{pid}/schedstat"


def wait_ms(before: int | None, after: int | None) -> float:
    """Milliseconds waited between two readings; 0 when either is missing."""
    if before is None or after is None:
        return 0.0
    return max(0, after - before) / 1e6
