"""An honest kernel timed while another process computes on the same GPU (a training job, another
user's): its verdict is no violation, and it says the GPU was shared."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cuda_agent.sandbox import EnvConfig, Environment, Stage, Status, read_solution
from cuda_agent.task import load_task

pytestmark = pytest.mark.gpu
CHAIN = Path(__file__).parent / "solutions" / "elementwise_chain"
# the other process: fp32 matrix products back to back until it is killed or its time is up
_BUSY = """
import sys, time, torch
x = torch.randn(4096, 4096, device="cuda")
(x @ x).sum().item()
print("busy", flush=True)
end = time.time() + float(sys.argv[1])
while time.time() < end:
    for _ in range(8):
        y = x @ x
    torch.cuda.synchronize()
"""


def test_an_honest_kernel_timed_beside_another_processs_gpu_work(tmp_path):
    cache = Path(os.environ.get("CUDA_AGENT_TEST_CACHE") or tmp_path / "cache")
    task, solution = load_task("elementwise_chain"), read_solution(CHAIN)
    with Environment(EnvConfig(cache_dir=cache)) as env:
        env.warm_up().join()
        assert env.evaluate(task, solution, Stage.VERIFY).status == Status.OK  # built unloaded
        busy = subprocess.Popen(
            [sys.executable, "-c", _BUSY, "300"], stdout=subprocess.PIPE, text=True
        )
        try:
            assert busy.stdout.readline().strip() == "busy"
            verdict = env.evaluate(task, solution, Stage.PROFILE)
        finally:
            busy.kill()
            busy.wait()
    path = os.environ.get("CUDA_AGENT_GPU_REPORT")
    if path:
        with open(path, "a") as fh:
            row = {"test": "foreign_gpu_work", "verdict": verdict.model_dump(mode="json")}
            fh.write(json.dumps(row) + "\n")
    assert verdict.status == Status.OK, verdict.message
    assert verdict.correct and verdict.reward >= 1
    assert any("other work shared the GPU" in n for n in verdict.notes), verdict.timing_checks
