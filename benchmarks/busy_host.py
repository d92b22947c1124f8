"""Verdicts on a busy host: an honest kernel and the patched-clock cheat, each evaluated while
CPU-bound processes hold the host's cores.

The parent's wall clock is the one check on the times a candidate's process reports, and a busy
host stretches round trips too. An honest kernel must never be called a violation for it (at
worst, when its own process was kept off the CPU on both timing passes, it gets no verdict:
harness_error), and the patched clock must never earn a reward.

    python benchmarks/busy_host.py --out busy_host.jsonl [--reps 3] [--hogs-per-core 0,0.5,1,2]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import torch

from cuda_agent.sandbox import EnvConfig, Environment, Stage, read_solution
from cuda_agent.task import load_task

REPO = Path(__file__).parent.parent
CASES = {  # name: (task, solution folder, what it must get)
    "honest elementwise_chain": (
        "elementwise_chain",
        "tests/sandbox/solutions/elementwise_chain",
        "ok, or harness_error; never violation",
    ),
    "cheat c3_patch_timer_hidden": (
        "tests/sandbox/tasks/scale_gelu.py",
        "tests/sandbox/cheats/c3_patch_timer_hidden",
        "reward <= 1",
    ),
}
FIGURES = (
    "unreported_ms",
    "unreported_low_ms",
    "unexplained_low_ms",
    "parent_wait_ms",
    "child_wait_ms",
    "timed_passes",
    "host_preemptions",
)


def _hogs(n: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--cache", type=Path, default=None)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--hogs-per-core", default="0,0.5,1,2")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("busy_host needs a CUDA GPU", file=sys.stderr)
        return 2
    cores = os.cpu_count() or 1
    levels = [float(x) for x in args.hogs_per_core.split(",")]
    cache = args.cache or Path(tempfile.mkdtemp(prefix="busy-host-"))
    cases = {
        name: (load_task(REPO / t if t.endswith(".py") else t), read_solution(REPO / s), rule)
        for name, (t, s, rule) in CASES.items()
    }
    bad = 0
    with Environment(EnvConfig(cache_dir=cache)) as env, args.out.open("a") as out:
        env.warm_up().join()
        for task, solution, _ in cases.values():  # builds and baselines, outside the figures
            env.evaluate(task, solution, Stage.PROFILE)
        for level in levels:
            hogs = _hogs(round(level * cores))
            time.sleep(1.0)
            try:
                for rep in range(args.reps):
                    for name, (task, solution, rule) in cases.items():
                        start = time.perf_counter()
                        v = env.evaluate(task, solution, Stage.PROFILE)
                        checks = v.timing_checks or {}
                        honest = name.startswith("honest")
                        held = (
                            v.status.value in ("ok", "harness_error") if honest else v.reward <= 1
                        )
                        bad += not held
                        row = {
                            "case": name,
                            "hogs": len(hogs),
                            "cores": cores,
                            "rep": rep,
                            "status": v.status.value,
                            "reward": v.reward,
                            "candidate_ms": v.candidate_ms,
                            "seconds": round(time.perf_counter() - start, 2),
                            "held": held,
                            "rule": rule,
                            "message": v.message[:600],
                            **{k: checks.get(k) for k in FIGURES},
                            "gpu": torch.cuda.get_device_name(),
                            "date": datetime.now(UTC).isoformat(timespec="seconds"),
                            "commit": os.environ.get("CUDA_AGENT_COMMIT", "unknown"),
                        }
                        out.write(json.dumps(row) + "\n")
                        out.flush()
                        figures = " ".join(
                            f"{k} {checks[k]:.3f}" for k in FIGURES if checks.get(k) is not None
                        )
                        print(f"{len(hogs):3d} hogs  {name:28s} {v.status.value:13s} "
                              f"reward {v.reward:2d}  {figures}", flush=True)  # fmt: skip
            finally:
                for hog in hogs:
                    hog.kill()
                for hog in hogs:
                    hog.wait()
    print(f"{bad} evaluation(s) broke their rule")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
