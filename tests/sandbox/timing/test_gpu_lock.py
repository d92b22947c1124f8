"""The GPU timing lock between processes: exclusive excludes everything, shared overlaps shared,
and a waiting timer goes before shared holders that arrive after it."""

from __future__ import annotations

import fcntl
import multiprocessing as mp
import time
from pathlib import Path

import pytest

from cuda_agent.sandbox.timing.gpu_lock import rw_lock

CTX = mp.get_context("fork")


def _hold(path: str, exclusive: bool, name: str, log: str, release, started=None) -> None:
    with rw_lock(Path(path), exclusive):
        with open(log, "a") as fh:
            fh.write(f"{name} in\n")
        if started is not None:
            started.set()
        release.wait(30)
        with open(log, "a") as fh:
            fh.write(f"{name} out\n")


def _start(path, exclusive, name, log, release, started=None):
    proc = CTX.Process(target=_hold, args=(str(path), exclusive, name, str(log), release, started))
    proc.start()
    return proc


def _lines(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def _wait_for(log: Path, line: str) -> None:
    deadline = time.monotonic() + 30
    while line not in _lines(log):
        assert time.monotonic() < deadline, f"{line!r} never happened: {_lines(log)}"
        time.sleep(0.02)


def _wait_until_gate_taken(lock: Path) -> None:
    """Until someone holds the turnstile: an exclusive request waiting behind a shared holder."""
    deadline = time.monotonic() + 30
    with open(lock.with_name(lock.name + ".turnstile"), "rb") as gate:
        while True:
            try:
                fcntl.flock(gate, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return
            fcntl.flock(gate, fcntl.LOCK_UN)
            assert time.monotonic() < deadline, "the timer never queued"
            time.sleep(0.02)


def test_shared_holders_overlap(tmp_path):
    lock, log = tmp_path / "gpu.lock", tmp_path / "log"
    release = CTX.Event()
    a = _start(lock, False, "a", log, release)
    b = _start(lock, False, "b", log, release)
    _wait_for(log, "a in")
    _wait_for(log, "b in")  # both inside at once
    release.set()
    a.join(30)
    b.join(30)
    assert a.exitcode == 0 and b.exitcode == 0


def test_exclusive_waits_for_shared_and_goes_before_later_shared(tmp_path):
    lock, log = tmp_path / "gpu.lock", tmp_path / "log"
    first_release, timer_release, late_release = CTX.Event(), CTX.Event(), CTX.Event()
    reader = _start(lock, False, "reader", log, first_release)
    _wait_for(log, "reader in")
    timer = _start(lock, True, "timer", log, timer_release)
    _wait_until_gate_taken(lock)  # the timer is now queued behind the reader
    late = _start(lock, False, "late", log, late_release)
    time.sleep(0.5)
    assert _lines(log) == ["reader in"], "nobody may join while a timer waits"
    first_release.set()
    _wait_for(log, "timer in")
    time.sleep(0.3)
    assert "late in" not in _lines(log), "a shared holder entered during the timing"
    timer_release.set()
    _wait_for(log, "late in")
    late_release.set()
    for proc in (reader, timer, late):
        proc.join(30)
        assert proc.exitcode == 0
    assert _lines(log) == [
        "reader in",
        "reader out",
        "timer in",
        "timer out",
        "late in",
        "late out",
    ]


def test_nested_sections_in_one_thread(tmp_path):
    lock = tmp_path / "gpu.lock"
    with rw_lock(lock, True), rw_lock(lock, False), rw_lock(lock, True):
        pass  # no self-deadlock: inner sections of a weaker or equal mode are free
    with rw_lock(lock, False):
        with pytest.raises(RuntimeError, match="inside a shared section"):
            with rw_lock(lock, True):
                pass
