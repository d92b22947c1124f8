"""One edit–compile–verify–profile round: a CUDA-Agent-style loop against ours, side by side.

The CUDA-Agent-style loop rebuilds everything with torch's extension loader and runs
verification and profiling each in a fresh process, re-running torch.compile every round, and
times as the published workdir does (_reference_loop/profile_step.py). Ours is
cuda_agent.sandbox.Environment. Both run on the same honest kernels after editing one .cu file;
each case records both sides' rewards, round by round, and our candidate's time over the loop's.

    python benchmarks/env_round.py --out results.json [--rounds 4] [--case TASK=SOLUTION_DIR ...]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import torch

from cuda_agent.sandbox import EnvConfig, Environment, Stage, create_workspace, read_solution
from cuda_agent.sandbox.reward import milestone_reward
from cuda_agent.task import load_task

HERE = Path(__file__).parent
REPO = HERE.parent
DEFAULT_CASES = [
    "elementwise_chain=tests/sandbox/solutions/elementwise_chain",
    "scaled_softmax=tests/fixtures/solutions/scaled_softmax",
    "row_sum_squares=tests/fixtures/solutions/row_sum_squares",
]


def _edit(work: Path, i: int) -> None:
    cu = sorted((work / "kernels").glob("*.cu"))[0]
    cu.write_text(cu.read_text() + f"\n// round {i}\n")


def _workspace(task, solution_dir: Path, root: Path) -> Path:
    work = create_workspace(task, root)
    read_solution(solution_dir).write_to(work)
    return work


def reference_round(work: Path, build: Path) -> dict:
    out = {}
    for step in ("compile", "verify", "profile"):
        start = time.perf_counter()
        proc = subprocess.run(
            [
                sys.executable,
                str(HERE / "_reference_loop" / f"{step}_step.py"),
                str(work),
                str(build),
            ],
            capture_output=True,
            text=True,
            timeout=900,
        )
        out[f"{step}_s"] = time.perf_counter() - start
        if proc.returncode != 0:
            raise RuntimeError(f"{step} failed: {proc.stderr[-2000:]}")
        if step == "verify":
            out["correct"] = proc.stdout.strip().endswith("correct")
        if step == "profile":
            out.update(json.loads(proc.stdout.strip().splitlines()[-1]))
    out["round_s"] = out["compile_s"] + out["verify_s"] + out["profile_s"]
    # the loop's own figures under the same reward rule as ours
    out["reward"] = milestone_reward(
        out["correct"],
        out["eager_ms"] / out["candidate_ms"],
        out["compile_ms"] / out["candidate_ms"],
    )
    return out


def our_rounds(task, work: Path, rounds: int, cache: Path) -> dict:
    """First round with an empty baseline cache, a cold round in a new process (machine caches
    and baselines on disk), then rounds that each edit one kernel."""
    env = Environment(EnvConfig(cache_dir=cache))
    start = time.perf_counter()
    first = env.evaluate(task, read_solution(work), Stage.PROFILE)
    first_s = time.perf_counter() - start
    print(f"  first round {first_s:.1f} s {first.status.value} {first.seconds}", flush=True)
    if first.status.value != "ok":
        print(f"  first round's message: {first.message}", flush=True)
    _edit(work, -1)
    proc = subprocess.run(
        [sys.executable, str(HERE / "_cold_round.py"), task.name, str(work), str(cache)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    cold = (
        json.loads(proc.stdout.strip().splitlines()[-1])
        if proc.returncode == 0
        else {"error": proc.stderr[-2000:]}
    )
    times, verdicts = [], []
    for i in range(rounds):
        _edit(work, i)
        start = time.perf_counter()
        v = env.evaluate(task, read_solution(work), Stage.PROFILE)
        times.append(time.perf_counter() - start)
        verdicts.append(json.loads(v.model_dump_json()))
        print(
            f"  round {i}: {times[-1]:.2f} s {v.status.value} ms eager {v.eager_ms} compile "
            f"{v.compile_ms} candidate {v.candidate_ms} {v.seconds}",
            flush=True,
        )
    spread, spread_vs_compile = (
        _spread([v[key] for v in verdicts if v[key]])
        for key in ("speedup_vs_eager", "speedup_vs_compile")
    )
    return {
        "first_round_empty_baseline_cache_s": first_s,
        "cold_process_round": cold,
        "first_status": first.status.value,
        "round_s": times,
        "median_round_s": statistics.median(times),
        "verdicts": verdicts,
        "speedup_spread": spread,
        "speedup_vs_compile_spread": spread_vs_compile,
    }


def _spread(values: list[float]) -> float | None:
    """(max - min) / median over the rounds."""
    return (max(values) - min(values)) / statistics.median(values) if values else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--reference-rounds", type=int, default=2)
    parser.add_argument("--case", action="append", default=None)
    parser.add_argument(
        "--cache",
        type=Path,
        default=None,
        help="machine-level cache (PCH, objects); a fresh one when omitted",
    )
    args = parser.parse_args()
    cache = args.cache or Path(tempfile.mkdtemp(prefix="cuda-agent-bench-cache-"))
    results = {
        "gpu": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "commit": os.environ.get("CUDA_AGENT_COMMIT", "unknown"),
        "cases": [],
    }
    for spec in args.case or DEFAULT_CASES:
        name, rel = spec.split("=", 1)
        task, solution_dir = load_task(name), REPO / rel
        root = Path(tempfile.mkdtemp(prefix="cuda-agent-bench-"))
        ours = our_rounds(task, _workspace(task, solution_dir, root / "ours"), args.rounds, cache)
        work = _workspace(task, solution_dir, root / "theirs")
        theirs = []
        for i in range(args.reference_rounds):
            _edit(work, i)
            theirs.append(reference_round(work, root / f"build{i}"))
            print(f"  reference loop round {i}: {json.dumps(theirs[-1])}", flush=True)
        last = ours["verdicts"][-1]
        ours_ms = last["candidate_ms"]
        loop_ms = statistics.median(r["candidate_ms"] for r in theirs) if theirs else None
        rewards = {
            "ours": [v["reward"] for v in ours["verdicts"]],
            "reference_loop": [r["reward"] for r in theirs],
        }
        case = {
            "task": name,
            "ours": ours,
            "reference_loop": theirs,
            "reference_median_round_s": (
                statistics.median(r["round_s"] for r in theirs) if theirs else None
            ),
            # one reward over every round of both sides (-1 exactly where a side fails)
            "same_verdict": (
                len({*rewards["ours"], *rewards["reference_loop"]}) == 1 if theirs else None
            ),
            "rewards": rewards,
            "candidate_ms": {
                "ours": ours_ms,
                # the same calls' events, which include the launch
                "ours_events": (last.get("timing_checks") or {}).get("events_ms"),
                "reference_loop": loop_ms,
            },
            "candidate_ours_over_loop": ours_ms / loop_ms - 1 if ours_ms and loop_ms else None,
        }
        results["cases"].append(case)
        print(
            f"{name}: ours median round {ours['median_round_s']:.2f} s "
            f"(cold process {ours['cold_process_round'].get('seconds', float('nan')):.1f} s), "
            f"reference loop {case['reference_median_round_s']} s; candidate "
            f"{ours_ms:.3f} vs {loop_ms} ms; rewards {rewards}",
            flush=True,
        )
        shutil.rmtree(root, ignore_errors=True)
        args.out.write_text(json.dumps(results, indent=1))  # after each case: a cut run keeps it


if __name__ == "__main__":
    main()
