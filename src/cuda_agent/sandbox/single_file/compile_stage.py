"""The compile stage of a single-file submission, on any machine, a GPU or none.

The submission's sources can be computed when it runs, so they are only known by running it: a
confined child process (CPU only, no GPU work) imports the file with its builders hooked and
constructs the entry point from the task's init inputs; each extension it asks for is guarded and
built by the parent. Where the GPU libraries are missing the extensions are compiled but not
linked, and the child gets a stand-in whose functions stop the run when called. Calls that only
forward makes are not reached here; the verdict says so.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

from cuda_agent.sandbox.outcome import Failure
from cuda_agent.sandbox.process.confinement import apply_confinement
from cuda_agent.sandbox.process.messages import BuildRequest
from cuda_agent.sandbox.process.watch import (
    Exit,
    forkserver_context,
    kill_tree,
    start_process,
    wait_for_message,
)
from cuda_agent.sandbox.single_file.child_load import EntryPointMissing, asker, import_entry
from cuda_agent.sandbox.single_file.extensions import ExtensionBuilder, ExtensionRefused
from cuda_agent.sandbox.single_file.hook import ExtensionNotLinked
from cuda_agent.sandbox.verdict import Status

_KINDS = ("done", "invalid", "error")


@dataclass(frozen=True)
class Constructed:
    """The child imported the file and built the entry point (or stopped where an unlinked
    extension was called: `stopped` says where)."""

    stopped: str | None = None


def compile_in_child(
    entry_text: str,
    entry_point: str,
    init_inputs: list,
    builder: ExtensionBuilder,
    workdir: Path,
    timeout_s: float,
    memory_mb: int,
) -> Constructed | Failure:
    """Import and construct in a confined child; the parent's build time is not counted
    against `timeout_s`."""
    workdir.mkdir(parents=True, exist_ok=True)
    entry = workdir / "model_new.py"
    entry.write_text(entry_text)
    ctx = forkserver_context()
    conn, child_end = ctx.Pipe(duplex=True)
    proc = ctx.Process(
        target=_child_main,
        args=(child_end, str(workdir), str(entry), entry_point, init_inputs),
        daemon=True,
    )
    try:
        start_process(proc)
        child_end.close()
        left = timeout_s
        while True:
            mark = time.monotonic()
            msg = wait_for_message(proc, conn, left, memory_mb)
            left -= time.monotonic() - mark
            if isinstance(msg, Exit):
                status = Status.TIMEOUT if msg.kind == "timeout" else Status.RUNTIME_ERROR
                return Failure(status, f"importing the submission: the process {msg.detail}"
                               + _log_tail(workdir))  # fmt: skip
            if isinstance(msg, BuildRequest):
                try:
                    conn.send(builder(msg))
                except ExtensionRefused as err:
                    return err.failure
                continue
            if not (isinstance(msg, tuple) and len(msg) == 2 and msg[0] in _KINDS):
                message = "the submission's process sent a malformed answer"
                return Failure(Status.RUNTIME_ERROR, message)
            kind, detail = msg[0], str(msg[1]) if msg[1] is not None else None
            if kind == "done":
                return Constructed(detail)
            status = Status.INVALID if kind == "invalid" else Status.RUNTIME_ERROR
            return Failure(status, f"importing the submission: {detail}")
    finally:
        kill_tree(proc)
        conn.close()


def _child_main(conn, workdir: str, entry: str, entry_point: str, init_inputs: list) -> None:
    os.setsid()
    root = Path(workdir)
    log = os.open(root / "child.log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(log, 1)
    os.dup2(log, 2)
    apply_confinement(root, no_processes=True)
    tempfile.tempdir = None
    sys.dont_write_bytecode = True
    sys.path[:] = [p for p in sys.path if p not in ("", ".", workdir)]
    try:
        cls = import_entry(entry, entry_point, asker(conn))
        try:
            cls(*init_inputs)
        except ExtensionNotLinked as err:
            conn.send(("done", f"{entry_point}(...) called an extension: {err}"))
            return
        except TypeError as err:
            conn.send(("invalid", f"{entry_point}(*get_init_inputs()) failed: {err}"))
            return
        conn.send(("done", None))
    except EntryPointMissing as err:
        conn.send(("invalid", str(err)))
    except BaseException as err:  # SystemExit from the submission is an error, not an exit
        frames = [f for f in traceback.extract_tb(err.__traceback__) if f.filename == entry]
        where = "".join(f"  model_new.py:{f.lineno} in {f.name}: {f.line}\n" for f in frames[-4:])
        conn.send(("error", f"{type(err).__name__}: {str(err)[:2000]}\n{where}".rstrip()))


def _log_tail(workdir: Path, keep: int = 1500) -> str:
    try:
        text = (workdir / "child.log").read_text(errors="replace").strip()
    except OSError:
        return ""
    return f"\n--- output of the submission's process (tail) ---\n{text[-keep:]}" if text else ""
