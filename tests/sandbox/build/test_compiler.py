"""A compiler run ends at its deadline or as soon as it is cancelled, its whole process group
killed."""

from __future__ import annotations

import sys
import threading
import time

from cuda_agent.sandbox.build.compiler import run_compiler

SLOW = [sys.executable, "-c", "import time; time.sleep(60)"]


def test_a_cancelled_compile_is_killed_at_once(tmp_path):
    cancel = threading.Event()
    threading.Timer(0.3, cancel.set).start()
    start = time.monotonic()
    run = run_compiler(SLOW, tmp_path, time.monotonic() + 120, cancel)
    assert time.monotonic() - start < 5
    assert run.returncode < 0 and not run.timed_out


def test_a_compile_past_its_deadline_is_killed_and_says_so(tmp_path):
    start = time.monotonic()
    run = run_compiler(SLOW, tmp_path, time.monotonic() + 0.5, threading.Event())
    assert time.monotonic() - start < 5
    assert run.returncode < 0 and run.timed_out


def test_a_compile_that_finishes_is_not_cut_short(tmp_path):
    quick = [sys.executable, "-c", "import time; time.sleep(0.4); print('done')"]
    run = run_compiler(quick, tmp_path, time.monotonic() + 60, threading.Event())
    assert run.returncode == 0 and run.output.strip() == "done"
