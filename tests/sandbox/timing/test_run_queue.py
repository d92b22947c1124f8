"""Reading a thread's wait for a CPU from Linux's schedstat."""

import os
import subprocess
import sys
import time

import pytest

from cuda_agent.sandbox.timing import run_queue

linux_only = pytest.mark.skipif(
    not os.path.exists(run_queue.OWN_THREAD), reason="no per-thread schedstat (not Linux)"
)


def test_missing_readings_count_as_no_wait(tmp_path):
    assert run_queue.waited_ns(str(tmp_path / "none")) is None
    (tmp_path / "odd").write_text("12\n")
    assert run_queue.waited_ns(str(tmp_path / "odd")) is None
    assert run_queue.wait_ms(None, 5_000_000) == 0.0 and run_queue.wait_ms(1, None) == 0.0
    assert run_queue.wait_ms(1_000_000, 3_500_000) == 2.5


@linux_only
def test_a_thread_kept_off_the_cpu_by_busier_processes_has_waited():
    hogs = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"])
        for _ in range(3 * (os.cpu_count() or 1))
    ]
    try:
        time.sleep(0.2)
        before = run_queue.waited_ns(run_queue.OWN_THREAD)
        end = time.perf_counter() + 0.5
        while time.perf_counter() < end:  # runnable all along, sharing the cores with the hogs
            pass
        waited = run_queue.wait_ms(before, run_queue.waited_ns(run_queue.OWN_THREAD))
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    assert waited > 50.0  # of 500 ms, beside three busy processes a core


@linux_only
def test_another_process_main_thread_is_read_by_pid():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(5)"])
    try:
        assert run_queue.waited_ns(run_queue.main_thread(child.pid)) is not None
    finally:
        child.kill()
        child.wait()
    assert run_queue.waited_ns(run_queue.main_thread(child.pid)) is None
