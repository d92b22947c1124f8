"""`python -m MODULE ARGS` run inside this process, for the veRL entry points a stage launches
(`verl.trainer.main_ppo`, `verl.model_merger`) once veRL is imported here anyway.

A new interpreter would import torch, transformers and veRL again before doing the same work:
about 13 s a launch on a GPU host, paid by each PPO-type stage and each merge. The module runs as
`__main__` with `sys.argv` set, as the interpreter would run it, so the printed command is still
exactly what ran and a user can run it by hand.
"""

from __future__ import annotations

import os
import runpy
import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO


def module_of(command: list[str]) -> str | None:
    """The module of a `[this interpreter, -m, MODULE, ...]` command, else None."""
    if len(command) >= 3 and command[0] == sys.executable and command[1] == "-m":
        return command[2]
    return None


def run_module_command(command: list[str]) -> int:
    """Run `[sys.executable, "-m", MODULE, *args]` here; its exit status: 0 when the module
    returns, SystemExit's code, or 1 after printing an exception's traceback."""
    module = module_of(command)
    if module is None:
        raise ValueError(f"not a `python -m MODULE` command of this interpreter: {command[:3]}")
    saved = sys.argv
    sys.argv = [module, *command[3:]]  # runpy sets argv[0] to the module's file
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as exit_:
        return _status(exit_.code)
    except Exception:  # the module's own failure, reported as the interpreter would
        traceback.print_exc()
        return 1
    finally:
        sys.argv = saved
        sys.stdout.flush()
        sys.stderr.flush()
    return 0


@contextmanager
def output_to(out: TextIO) -> Iterator[None]:
    """Send this process's stdout and stderr to `out` for a while: Python's streams (which a
    caller may have replaced) and the file descriptors C code writes to."""
    for stream in (sys.stdout, sys.stderr, out):
        stream.flush()
    saved_fds = os.dup(1), os.dup(2)
    saved_streams = sys.stdout, sys.stderr
    # line-buffered on the same file: Python's lines and C's writes keep their order
    lines = open(out.fileno(), "w", buffering=1, closefd=False)  # noqa: SIM115
    try:
        os.dup2(out.fileno(), 1)
        os.dup2(out.fileno(), 2)
        sys.stdout = sys.stderr = lines
        yield
    finally:
        lines.flush()
        sys.stdout, sys.stderr = saved_streams
        for fd, copy in zip((1, 2), saved_fds, strict=True):
            os.dup2(copy, fd)
            os.close(copy)
        lines.close()


def _status(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)  # sys.exit("message"): the interpreter prints it, exits 1
    return 1
