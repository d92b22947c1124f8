"""The bash tool's command never outlives the run: Ctrl-C in the harness, or the run stopping,
kills its whole process group (real processes, real signals)."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from cuda_agent.agent.bash import run_command

BACKGROUND = "sleep 600 & echo $! > sleep.pid; wait"
HARNESS = f"""
import sys
from pathlib import Path
from cuda_agent.agent.bash import run_command
run_command({BACKGROUND!r}, Path(sys.argv[1]), 600, 1000)
"""


def alive(pid: int) -> bool:
    """Running (a zombie, killed and not yet reaped, is not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def started_pid(root: Path, deadline_s: float = 60.0) -> int:
    """The background sleep's pid, once the command has written it."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        text = (root / "sleep.pid").read_text().strip() if (root / "sleep.pid").exists() else ""
        if text:
            return int(text)
        time.sleep(0.05)
    raise AssertionError("the command never started")


def gone(pid: int, deadline_s: float = 10.0) -> bool:
    end = time.monotonic() + deadline_s
    while alive(pid) and time.monotonic() < end:
        time.sleep(0.05)
    return not alive(pid)


def test_ctrl_c_in_the_harness_kills_the_command_and_its_children(tmp_path):
    harness = subprocess.Popen([sys.executable, "-c", HARNESS, str(tmp_path)])
    try:
        sleeper = started_pid(tmp_path)
        harness.send_signal(signal.SIGINT)
        harness.wait(timeout=60)
        assert gone(sleeper)
    finally:
        harness.kill()
        harness.wait()


def test_a_stopping_run_kills_the_running_command(tmp_path):
    stop = threading.Event()
    result = {}
    thread = threading.Thread(
        target=lambda: result.update(out=run_command(BACKGROUND, tmp_path, 600, 1000, stop))
    )
    thread.start()
    sleeper = started_pid(tmp_path)
    stop.set()
    thread.join(timeout=60)
    assert not thread.is_alive() and "[stopped: the run is ending" in result["out"].content
    assert not result["out"].ok and gone(sleeper)
