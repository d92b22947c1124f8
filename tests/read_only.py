"""A really read-only folder for the tests of unwritable places, whoever runs them.

Mode bits stop other users only: root (CI runs as root) writes through chmod 0o555. For root
the folder is bind-mounted read-only onto itself (the kernel then refuses every write with
EROFS); for anyone else chmod 0o555 is real. Where neither works the test is skipped, saying
why."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@contextlib.contextmanager
def read_only(folder: Path) -> Iterator[Path]:
    """`folder` (created if missing; what is in it stays readable) read-only inside the block."""
    folder.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0:
        folder.chmod(0o555)
        try:
            yield folder
        finally:
            folder.chmod(0o755)
        return
    bind = ["mount", "--bind", str(folder), str(folder)]
    remount = ["mount", "-o", "remount,bind,ro", str(folder)]
    if subprocess.run(bind, capture_output=True).returncode != 0:
        pytest.skip("a read-only folder for root needs a bind mount; mount is not permitted here")
    try:
        if subprocess.run(remount, capture_output=True).returncode != 0:
            pytest.skip("a read-only folder for root needs a read-only remount; not permitted here")
        try:
            (folder / ".probe").write_text("")
        except OSError:
            yield folder
        else:
            pytest.skip("the read-only mount took writes")
    finally:
        subprocess.run(["umount", str(folder)], capture_output=True, check=False)
