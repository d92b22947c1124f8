"""The bash tool: a shell command in the workspace, in its own process group, with a timeout,
a scrubbed environment (no API keys or tokens of the harness reach it) and bounded output."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import ClassVar

from cuda_agent.agent.tools import ToolContext, ToolFailure, ToolOutput, schema
from cuda_agent.sandbox import confine_preexec, scrubbed_env

KILL_GRACE_S = 5.0
POLL_S = 0.2  # how soon a command notices that the run is stopping


class _BoundedCapture:
    """Reads a pipe to its end in a thread, keeping only `keep` bytes of head and of tail."""

    def __init__(self, stream, keep: int):
        self._stream, self._keep = stream, keep
        self.head, self.tail, self.total = b"", b"", 0
        self._thread = threading.Thread(target=self._drain, daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        for chunk in iter(lambda: self._stream.read1(65536), b""):
            self.total += len(chunk)
            room = self._keep - len(self.head)
            if room > 0:
                self.head += chunk[:room]
                chunk = chunk[room:]
            if chunk:
                self.tail = (self.tail + chunk)[-self._keep :]

    def join(self, timeout: float | None) -> bool:
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def text(self) -> str:
        head = self.head.decode(errors="replace")
        omitted = self.total - len(self.head) - len(self.tail)
        if not self.tail:
            return head
        middle = f"\n[... {omitted} bytes omitted ...]\n" if omitted > 0 else ""
        return head + middle + self.tail.decode(errors="replace")


def run_command(
    command: str,
    root: Path,
    timeout_s: float,
    keep_chars: int,
    stop: threading.Event | None = None,
) -> ToolOutput:
    """Run `command`; its process group is killed past `timeout_s`, once `stop` is set, or when
    this thread is interrupted (Ctrl-C), so nothing it started outlives the harness."""
    try:
        proc = subprocess.Popen(
            ["bash", "-c", command],
            cwd=root,
            env=scrubbed_env(root, {"TERM": "dumb", "PWD": str(root)}),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, so a timeout kills every child
            preexec_fn=confine_preexec(root),  # writes only in the workspace, no network
        )
    except OSError as err:
        raise ToolFailure(f"could not start bash: {err}") from None
    capture = _BoundedCapture(proc.stdout, keep_chars)
    try:
        ended = _wait(proc, timeout_s, stop)
    except BaseException:  # KeyboardInterrupt: the command's group goes with the harness
        _kill_group(proc.pid)
        proc.wait()
        raise
    # Background children may hold the pipe open after bash exits; they go with the group.
    if not capture.join(1.0 if ended == "exited" else 0):
        _kill_group(proc.pid)
        capture.join(KILL_GRACE_S)
    if ended != "exited":
        _kill_group(proc.pid)
        proc.wait()
    proc.stdout.close()
    output = capture.text().rstrip("\n")
    if ended == "stopped":
        note = "[stopped: the run is ending; the command and its children were killed]"
        return ToolOutput(f"{output}\n{note}".lstrip("\n"), ok=False)
    if ended == "timed_out":
        note = f"[timed out after {timeout_s:g} s; the command and its children were killed]"
        return ToolOutput(f"{output}\n{note}".lstrip("\n"), ok=False)
    note = f"[exit code {proc.returncode}]"
    return ToolOutput(f"{output}\n{note}".lstrip("\n"), ok=proc.returncode == 0)


def _wait(proc: subprocess.Popen, timeout_s: float, stop: threading.Event | None) -> str:
    """exited, timed_out or stopped."""
    deadline = time.monotonic() + timeout_s
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return "timed_out"
        try:
            proc.wait(timeout=min(left, POLL_S))
            return "exited"
        except subprocess.TimeoutExpired:
            if stop is not None and stop.is_set():
                return "stopped"


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


class Bash:
    name: ClassVar[str] = "bash"
    description: ClassVar[str] = (
        "Run a bash command in the workspace folder (e.g. nvidia-smi, nvcc --version, a "
        "torch.profiler script on model.py). Output is stdout and stderr together, shortened "
        "to its head and tail when long. Use the compile, verify and profile tools to evaluate "
        "the solution."
    )
    parameters: ClassVar[dict] = schema(
        {
            "command": ("string", "The command line, run with bash -c in the workspace"),
            "timeout": ("integer", "Seconds before it is killed (default and maximum: the budget)"),
        },
        required=("command",),
    )

    def run(self, ctx: ToolContext, command: str, timeout: int | None = None) -> ToolOutput:
        limit = ctx.bash_timeout_s if timeout is None else max(1, min(timeout, ctx.bash_timeout_s))
        return run_command(command, ctx.root, limit, ctx.output_chars // 2, ctx.stop)
