"""Verdicts of workers sharing one GPU against one worker alone, on the same files and GPU.

1. `cuda-agent bench --stage compile` over the stored solutions: every build is cached, so
   neither run below pays for one and their wall times compare evaluation alone.
2. `cuda-agent bench --gpus 0` (one worker) and `--gpus 0,0,0` (three workers on the same GPU,
   `--packed`), each into its own run folder.
3. Per task, both verdicts side by side: status, reward, speed-up over eager, whether the packed
   verdict waited for GPU memory or for another evaluation's timing to end. A task agrees
   when both runs give the same status; a reward that differs is listed with both speed-ups
   (a speed-up on a milestone's edge can cross it from one timing to the next, packed or not).

Writes one JSON line per task, then a summary: the counts, the tasks that differ, both runs'
wall times, the GPU, commit and date. Exit status 1 when a status differs.

    python benchmarks/packed_workers.py --tasks SPEC --solutions DIR --work DIR --out FILE.jsonl \
        [--levels 1,2] [--ids 1-10] [--packed 0,0,0] [--cache DIR]

Every step resumes: a rerun with the same --work skips the verdicts already stored.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from _run_facts import run_facts

REPO = Path(__file__).parent.parent


def _bench(args, gpus: str, stage: str, run: Path) -> float:
    """One `cuda-agent bench` run into `run`; its wall seconds."""
    cmd = [sys.executable, "-m", "cuda_agent", "bench", "--tasks", args.tasks]
    cmd += ["--solutions", str(args.solutions), "--out", str(run), "--gpus", gpus]
    cmd += ["--stage", stage, "--no-report"]
    for flag, value in (("--levels", args.levels), ("--ids", args.ids)):
        if value:
            cmd += [flag, value]
    env = {**os.environ, "CUDA_AGENT_CACHE": str(args.cache or args.work / "cache")}
    start = time.perf_counter()
    if subprocess.run(cmd, cwd=REPO, env=env).returncode != 0:
        sys.exit(f"error: cuda-agent bench into {run} failed; its output is above")
    return round(time.perf_counter() - start, 1)


def _verdicts(run: Path) -> dict[str, dict]:
    path = run / "results.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines() if line]
    return {r["task"]["name"]: r["verdict"] for r in rows}


def _side(verdict: dict | None) -> dict:
    v = verdict or {}
    seconds = v.get("seconds") or {}
    return {
        "status": v.get("status", "missing"),
        "reward": v.get("reward"),
        "speedup_vs_eager": v.get("speedup_vs_eager"),
        "gpu_memory_wait_s": seconds.get("gpu_memory_wait"),
        # waited for another evaluation's timing to end before its own began
        "timing_lock_wait_s": seconds.get("timing_lock_wait"),
    }


def compare(alone: dict[str, dict], packed: dict[str, dict]) -> list[dict]:
    rows = []
    for task in sorted(set(alone) | set(packed)):
        a, p = _side(alone.get(task)), _side(packed.get(task))
        rows.append(
            {
                "task": task,
                "alone": a,
                "packed": p,
                "same_status": a["status"] == p["status"],
                "same_reward": a["reward"] == p["reward"],
            }
        )
    return rows


def summarize(rows: list[dict], walls: dict[str, float]) -> dict:
    return {
        "tasks": len(rows),
        "same_status": sum(r["same_status"] for r in rows),
        "same_reward": sum(r["same_reward"] for r in rows),
        "status_differs": {
            r["task"]: [r["alone"]["status"], r["packed"]["status"]]
            for r in rows
            if not r["same_status"]
        },
        "reward_differs": {
            r["task"]: {
                "rewards": [r["alone"]["reward"], r["packed"]["reward"]],
                "speedups": [r["alone"]["speedup_vs_eager"], r["packed"]["speedup_vs_eager"]],
            }
            for r in rows
            if r["same_status"] and not r["same_reward"]
        },
        "packed_waited_for_memory": sum(bool(r["packed"]["gpu_memory_wait_s"]) for r in rows),
        "wall_s": walls,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", required=True, help="cuda-agent bench's --tasks")
    ap.add_argument("--solutions", type=Path, required=True, help="stored solutions")
    ap.add_argument("--work", type=Path, required=True, help="the three run folders")
    ap.add_argument("--out", type=Path, required=True, help="JSON lines: per task, a summary")
    ap.add_argument("--levels", default=None)
    ap.add_argument("--ids", default=None)
    ap.add_argument("--packed", default="0,0,0", help="the packed run's --gpus")
    ap.add_argument("--cache", type=Path, default=None, help="default: WORK/cache")
    args = ap.parse_args()
    if not args.solutions.is_dir():
        sys.exit(f"error: --solutions {args.solutions}: no such folder")
    facts = run_facts()
    if facts["gpu"] is None:
        sys.exit("error: this benchmark evaluates kernels on a CUDA GPU, and torch sees none here")
    walls = {"builds": _bench(args, "0", "compile", args.work / "builds")}
    walls["alone"] = _bench(args, "0", "profile", args.work / "alone")
    walls["packed"] = _bench(args, args.packed, "profile", args.work / "packed")
    rows = compare(_verdicts(args.work / "alone"), _verdicts(args.work / "packed"))
    summary = summarize(rows, walls)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w") as out:
        for row in rows:
            out.write(json.dumps({**facts, **row}) + "\n")
        out.write(json.dumps({**facts, "packed": args.packed, "summary": summary}) + "\n")
    print(json.dumps(summary, indent=1))
    return 0 if summary["same_status"] == summary["tasks"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
