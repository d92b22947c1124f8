"""Candidate processes started ahead of need: how many, in which order, and none left behind."""

from __future__ import annotations

import itertools
import threading
import time

import pytest

from cuda_agent.sandbox.process.candidate import _startup_steps
from cuda_agent.sandbox.process.spare import SpareCandidate


class _Proc:
    def __init__(self, number: int, workdir, start_s: float = 0.0):
        self.number, self.workdir, self.closed = number, workdir, False
        self.start_s, self.killed = start_s, threading.Event()

    def wait_ready(self) -> None:
        if self.killed.wait(self.start_s):
            raise RuntimeError("the candidate process died during start")

    def kill(self) -> None:
        self.killed.set()

    def close(self) -> None:
        self.closed = True


def _maker(tmp_path):
    counter, made, lock = itertools.count(), [], threading.Lock()

    def make():
        with lock:
            proc = _Proc(next(counter), tmp_path / f"run{len(made)}")
            made.append(proc)
        proc.workdir.mkdir()
        return proc

    return make, made


def test_prepare_keeps_depth_processes_starting_and_take_hands_out_the_oldest(tmp_path):
    make, made = _maker(tmp_path)
    spare = SpareCandidate(make, depth=2)
    spare.prepare()
    spare.prepare()  # already two on the way: starts nothing more
    first = spare.take()
    assert first.number in (0, 1)  # one of the two started first
    spare.prepare()  # tops up to two again: a third process is made
    second = spare.take()
    assert second is not first
    deadline = time.monotonic() + 30
    while len(made) < 3 and time.monotonic() < deadline:  # its start runs on a pool thread
        time.sleep(0.01)
    assert len(made) == 3
    spare.close()  # stops the one still starting
    assert all(p.closed for p in made if p not in (first, second))
    assert not any(p.workdir.exists() for p in made if p not in (first, second))


def test_take_without_prepare_starts_one_now(tmp_path):
    make, made = _maker(tmp_path)
    spare = SpareCandidate(make, depth=3)
    proc = spare.take()
    assert proc.number == 0 and len(made) == 1
    spare.close()


def test_close_stops_a_process_still_starting_without_waiting_for_its_start(tmp_path):
    made = []

    def make():
        made.append(_Proc(len(made), tmp_path / f"run{len(made)}", start_s=30.0))
        made[-1].workdir.mkdir()
        return made[-1]

    spare = SpareCandidate(make, depth=1)
    spare.prepare()
    while not made:
        time.sleep(0.01)
    began = time.perf_counter()
    spare.close()
    assert time.perf_counter() - began < 5  # not the 30 s its start would take
    assert made[0].killed.is_set() and made[0].closed and not made[0].workdir.exists()
    spare.prepare()  # a closed spare starts nothing more
    assert len(made) == 1


def test_a_process_that_failed_to_start_raises_on_take_and_close_still_works(tmp_path):
    def make():
        raise RuntimeError("the candidate process died during start")

    spare = SpareCandidate(make, depth=2)
    spare.prepare()
    try:
        spare.take()
    except RuntimeError as err:
        assert "died during start" in str(err)
    else:
        raise AssertionError("take() returned although the start failed")
    spare.close()


def test_the_first_prepare_starts_one_process_at_a_time(tmp_path):
    running, peak, lock = [0], [0], threading.Lock()
    release = threading.Event()

    def make():
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        release.wait(5)
        with lock:
            running[0] -= 1
        return _Proc(0, tmp_path / "run")

    spare = SpareCandidate(make, depth=2)
    spare.prepare()
    time.sleep(0.2)  # time enough for a second start to begin, were it not held back
    release.set()
    spare.take()
    spare.close()
    assert peak[0] == 1


def test_prepare_can_ask_for_fewer_than_depth(tmp_path):
    make, made = _maker(tmp_path)
    spare = SpareCandidate(make, depth=2)
    spare.prepare(1)  # a warm-up: one process, in case the worker only times baselines
    spare.close()
    assert len(made) == 1


def test_startup_steps_split_the_start_at_the_childs_stamps():
    stamps = {"fork": 101.0, "cuda": 101.5, "kernel_trace": 104.5, "confinement": 104.6}
    steps = _startup_steps(100.0, stamps, 104.7)
    assert steps == pytest.approx(
        {"fork": 1.0, "cuda": 0.5, "kernel_trace": 3.0, "confinement": 0.1, "answer": 0.1}
    )
    assert sum(steps.values()) == pytest.approx(4.7)
