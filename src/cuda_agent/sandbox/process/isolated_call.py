"""run_isolated: call a function in a confined child process, with a timeout and a memory limit.

For code the harness did not write but must execute (synthesized programs, a model's output):
it never runs in the caller's process.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cuda_agent.sandbox.process.confinement import apply_confinement
from cuda_agent.sandbox.process.watch import (
    Exit,
    forkserver_context,
    kill_tree,
    start_process,
    wait_for_message,
)


@dataclass(frozen=True)
class IsolatedResult:
    ok: bool
    value: Any = None
    error: str | None = None
    timed_out: bool = False
    seconds: float = 0.0

    def error_line(self) -> str:
        """The error's first line (at most 300 characters), for a one-line report."""
        lines = (self.error or "").strip().splitlines()
        return lines[0][:300] if lines else "no answer"


def run_isolated(
    fn: Callable,
    args: tuple = (),
    kwargs: dict | None = None,
    *,
    timeout_s: float = 60.0,
    memory_mb: int | None = 8192,
    cwd: str | Path | None = None,
    preload: tuple[str, ...] = (),
) -> IsolatedResult:
    """`fn(*args, **kwargs)` in a confined child; `fn` must be importable (module level).
    `preload`: modules the fork server imports once, when this call is the one that starts it
    (see `forkserver_context`), so that children do not import them each."""
    ctx = forkserver_context(preload)
    own_dir = cwd is None
    workdir = Path(cwd) if cwd is not None else Path(tempfile.mkdtemp(prefix="cuda-agent-run-"))
    receiver, sender = ctx.Pipe(duplex=False)
    proc = ctx.Process(
        target=_child_main,
        args=(sender, fn, args, kwargs or {}, str(workdir)),
        daemon=True,
    )
    start = time.monotonic()
    try:
        start_process(proc)
        sender.close()
        msg = wait_for_message(proc, receiver, timeout_s, memory_mb)
        seconds = time.monotonic() - start
        if isinstance(msg, Exit):
            return IsolatedResult(
                False,
                error=f"the child {msg.detail}",
                timed_out=msg.kind == "timeout",
                seconds=seconds,
            )
        status, payload = msg
        if status == "ok":
            return IsolatedResult(True, value=payload, seconds=seconds)
        return IsolatedResult(False, error=payload, seconds=seconds)
    finally:
        kill_tree(proc)
        receiver.close()
        if own_dir:
            shutil.rmtree(workdir, ignore_errors=True)


def _child_main(conn, fn, args, kwargs, workdir: str) -> None:
    import tempfile as _tempfile

    os.setsid()
    _init_cuda()
    apply_confinement(Path(workdir))
    _tempfile.tempdir = None  # recomputed from the scrubbed TMPDIR
    try:
        value = fn(*args, **kwargs)
    except BaseException as err:  # report everything, including SystemExit from the code run
        tb = traceback.format_exception(type(err), err, err.__traceback__, limit=-4)
        conn.send(("error", f"{type(err).__name__}: {err}\n{''.join(tb)[-3000:]}"))
        return
    conn.send(("ok", value))


def _init_cuda() -> None:
    """Create the CUDA context (where there is a GPU) before confinement: the driver's
    initialisation opens files that the confined process may no longer open."""
    import torch

    if os.path.exists("/dev/nvidiactl") and torch.cuda.is_available():
        torch.empty(1, device="cuda")
