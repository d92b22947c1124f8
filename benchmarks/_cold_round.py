"""One round in a brand-new process (torch import, fork server, reference model included), as
`cuda-agent eval` runs it: the fork server started first, beside this process's imports."""

import json
import sys
import time
from pathlib import Path

start = time.perf_counter()
from cuda_agent.sandbox.process.fork_server import start_early  # noqa: E402

start_early()
from cuda_agent.sandbox import EnvConfig, Environment, Stage, read_solution  # noqa: E402
from cuda_agent.task import load_task  # noqa: E402

task, work, cache = load_task(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
verdict = Environment(EnvConfig(cache_dir=cache)).evaluate(task, read_solution(work), Stage.PROFILE)
print(
    json.dumps(
        {
            "seconds": time.perf_counter() - start,
            "status": verdict.status.value,
            "stages": verdict.seconds,
            "message": verdict.message,
        }
    )
)
