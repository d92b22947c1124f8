"""A service worker ends with the bench that started it, even one killed with -9 while the
worker is busy with a build (which would otherwise run on for a minute)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid

from tests.agent.test_bash import alive, gone
from tests.bench.conftest import FIXTURES, GOOD

BENCH = """
import sys, threading, time
from pathlib import Path
from cuda_agent.bench.workers import LocalWorker
from cuda_agent.sandbox import EnvConfig, Stage, read_solution, solution_from_files
from cuda_agent.task import load_task
cache, logs, fixture, token = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4]
files = {p: t + f"// {token}\\n" if p.endswith(".cu") else t
         for p, t in read_solution(fixture).files.items()}  # not in the build cache
worker = LocalWorker("w", EnvConfig(cache_dir=cache, build_timeout_s=1800), None, logs)
worker.wait_ready()
job = (load_task(fixture.name), solution_from_files(files), Stage.COMPILE)
threading.Thread(target=worker.call, args=("build", job, 1800), daemon=True).start()
time.sleep(2)  # the build is under way
print(worker.pid, flush=True)
time.sleep(1800)
"""


def test_a_killed_bench_takes_its_busy_worker_with_it(tmp_path, env_config):
    args = [env_config.cache_dir, tmp_path, FIXTURES / GOOD[0], uuid.uuid4().hex]
    bench = subprocess.Popen(
        [sys.executable, "-c", BENCH, *map(str, args)], stdout=subprocess.PIPE, text=True
    )
    try:
        worker = int(bench.stdout.readline())
        assert alive(worker)
        os.kill(bench.pid, signal.SIGKILL)
        bench.wait()
        assert gone(worker), (tmp_path / "w.log").read_text()[-2000:]
    finally:
        bench.kill()
        bench.wait()
