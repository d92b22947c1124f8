"""One run at a time in a run folder: a second process is refused, naming the holder; the lock
goes with its holder, however that process ends."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from cuda_agent.bench import run_lock
from cuda_agent.errors import UserError

HOLD = """
import sys
from pathlib import Path
from cuda_agent.bench import run_lock
with run_lock(Path(sys.argv[1])):
    print("held", flush=True)
    sys.stdin.read()
"""


@pytest.fixture
def holder(tmp_path):
    """Another process holding tmp_path/run until the test kills it."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(tmp_path / "run")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout.readline().strip() == "held"
    yield proc
    proc.kill()
    proc.wait()


def test_a_second_run_is_refused_naming_the_holder(tmp_path, holder):
    with pytest.raises(UserError, match=f"another run is using this folder \\(pid {holder.pid}\\)"):
        with run_lock(tmp_path / "run"):
            pass


def test_a_killed_holder_releases_the_folder(tmp_path, holder):
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    with run_lock(tmp_path / "run"):
        with pytest.raises(UserError, match=f"pid {os.getpid()}"):
            with run_lock(tmp_path / "run"):  # held again, now by this process
                pass
