"""Our speed-ups beside KernelBench's and a profiler's, on the same tasks, files and GPU.

The tasks are KernelBench level-1 problems (elementwise, reductions, normalisations) at two sizes:
small (16 x 16384 and the like: launch-bound, as KernelBench's problems were before they were
enlarged and as public corpora still hold them) and large (about 1 GiB of input). Each is solved
by an honest single-file submission in one of several launch shapes: one kernel; two kernels (a
copy then the op in place, or statistics then the op); a fill first (`torch::zeros`, an ATen fill
kernel, or `cudaMemsetAsync`) (`_timing_cases.py`, `_timing_ops.cu`).

1. `cuda-agent bench` over them with `--timing events`: every verdict carries the three methods'
   speed-ups over eager (`timings`) and whether the task is launch-bound.
2. In one process (`_kernelbench_timing.py`): KernelBench's `eval_kernel_against_ref` with its
   `cuda_event` timing (its `ref_runtime / runtime`), then a `torch.profiler` kernel sum of the
   reference and the submission.
3. Each task's row: our `events` speed-up beside KernelBench's (the same method), our `kernels`
   speed-up beside the profiler's, and our `span`; the relative difference of each pair, and
   whether it is within the goal (5 %).

    python benchmarks/timing_vs_kernelbench.py --kernelbench CHECKOUT --work DIR --out FILE.jsonl \
        [--gpus 0,0] [--cache DIR] [--trials 100] [--calls 30]

Both steps resume: a rerun with the same --work skips the tasks already measured.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from _kernelbench_entry import kernelbench_src
from _run_facts import run_facts
from _timing_cases import write_cases

REPO = Path(__file__).parent.parent
GOAL = 0.05  # relative difference between our speed-up and the anchor of the same method


def _level1(given: Path) -> Path:
    level1 = given / "KernelBench" / "level1"
    if not level1.is_dir():
        sys.exit(f"error: --kernelbench {given}: no KernelBench/level1 there; give a checkout")
    return level1


def _ours(work: Path, gpus: str, cache: Path) -> None:
    cmd = [sys.executable, "-m", "cuda_agent", "bench", "--tasks", str(work / "tasks")]
    cmd += ["--solutions", str(work / "solutions"), "--out", str(work / "run")]
    cmd += ["--gpus", gpus, "--timing", "events"]
    env = {**os.environ, "CUDA_AGENT_CACHE": str(cache)}
    if subprocess.run(cmd, cwd=REPO, env=env).returncode != 0:
        sys.exit("error: cuda-agent bench failed; its output is above (a rerun resumes it)")


def _theirs(work: Path, src: Path, rows: list[dict], trials: int, calls: int) -> None:
    cases = [
        {
            "task": r["task"],
            "ref": str(work / "tasks" / f"{r['task']}.py"),
            "submission": str(work / "solutions" / f"{r['task']}.py"),
        }
        for r in rows
    ]
    (work / "kernelbench_cases.json").write_text(json.dumps(cases))
    cmd = [sys.executable, str(Path(__file__).with_name("_kernelbench_timing.py")), str(src)]
    cmd += [str(work / "kernelbench_cases.json"), str(work / "kernelbench.jsonl")]
    cmd += [str(work / "kernelbench-build"), "--trials", str(trials), "--calls", str(calls)]
    if subprocess.run(cmd, cwd=REPO).returncode != 0:
        sys.exit("error: the KernelBench driver failed; its output is above (a rerun resumes it)")


def _ratio(a, b) -> float | None:
    return a / b if a and b else None


def _difference(ours: float | None, anchor: float | None) -> float | None:
    return ours / anchor - 1.0 if ours and anchor else None


def _row(case: dict, verdict: dict | None, theirs: dict | None) -> dict:
    row = dict(case)
    timings = (verdict or {}).get("timings") or {}
    row["ours_status"] = (verdict or {}).get("status", "missing")
    for method in ("events", "kernels", "span"):
        row[f"ours_{method}"] = (timings.get(method) or {}).get("speedup_vs_eager")
    row["launch_bound"] = (verdict or {}).get("launch_bound")
    row["eager_launch_ms"] = (verdict or {}).get("eager_launch_ms")
    row["input_distribution"] = (verdict or {}).get("input_distribution")
    for side in ("eager", "candidate"):
        row[f"ours_{side}_events_ms"] = (timings.get("events") or {}).get(f"{side}_ms")
    theirs = theirs or {}
    row["kernelbench_correct"] = theirs.get("correct")
    row["kernelbench_error"] = theirs.get("error")
    row["profiler_error"] = theirs.get("profiler_error")
    row["kernelbench"] = _ratio(theirs.get("ref_runtime_ms"), theirs.get("runtime_ms"))
    row["kernelbench_ref_ms"] = theirs.get("ref_runtime_ms")
    row["kernelbench_candidate_ms"] = theirs.get("runtime_ms")
    row["kernelbench_ref_stats"] = theirs.get("ref_runtime_stats")
    row["kernelbench_candidate_stats"] = theirs.get("runtime_stats")
    row["profiler_ref_ms"] = theirs.get("profiler_ref_ms")
    row["profiler_candidate_ms"] = theirs.get("profiler_candidate_ms")
    row["profiler"] = _ratio(theirs.get("profiler_ref_ms"), theirs.get("profiler_candidate_ms"))
    row["events_vs_kernelbench"] = _difference(row["ours_events"], row["kernelbench"])
    row["kernels_vs_profiler"] = _difference(row["ours_kernels"], row["profiler"])
    for pair in ("events_vs_kernelbench", "kernels_vs_profiler"):
        row[f"{pair}_within_goal"] = None if row[pair] is None else abs(row[pair]) <= GOAL
    return row


def _read_jsonl(path: Path) -> list[dict]:
    return (
        [json.loads(line) for line in path.read_text().splitlines() if line]
        if path.exists()
        else []
    )


def _fmt(value, pattern="{:.2f}x") -> str:
    return "-" if value is None else pattern.format(value)


def _table(rows: list[dict]) -> str:
    head = (
        "| task | shape | launch-bound | events | KernelBench | diff | kernels | profiler | diff "
        "| span |\n| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
    )
    lines = [head]
    for r in rows:
        lines.append(
            f"| {r['task']} | {r['shape']} | {'yes' if r['launch_bound'] else 'no'} "
            f"| {_fmt(r['ours_events'])} | {_fmt(r['kernelbench'])} "
            f"| {_fmt(r['events_vs_kernelbench'], '{:+.1%}')} | {_fmt(r['ours_kernels'])} "
            f"| {_fmt(r['profiler'])} | {_fmt(r['kernels_vs_profiler'], '{:+.1%}')} "
            f"| {_fmt(r['ours_span'])} |"
        )
    return "\n".join(lines)


def summarize(rows: list[dict]) -> dict:
    """Counts over the tasks both sides measured: within the goal, per pair and size."""
    out: dict = {"tasks": len(rows), "launch_bound": [r["task"] for r in rows if r["launch_bound"]]}
    for pair in ("events_vs_kernelbench", "kernels_vs_profiler"):
        measured = [r for r in rows if r[pair] is not None]
        out[pair] = {
            "measured": len(measured),
            "within_goal": sum(r[f"{pair}_within_goal"] for r in measured),
            "outside": {
                r["task"]: round(r[pair], 4) for r in measured if not r[f"{pair}_within_goal"]
            },
            "median_abs": _median([abs(r[pair]) for r in measured]),
        }
    return out


def _median(values: list[float]) -> float | None:
    if not values:
        return None
    s = sorted(values)
    mid = len(s) // 2
    return round(s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2, 4)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernelbench", type=Path, required=True, help="a KernelBench checkout")
    ap.add_argument("--work", type=Path, required=True, help="tasks, submissions and run folders")
    ap.add_argument(
        "--out", type=Path, required=True, help="one JSON line per task, then a summary"
    )
    ap.add_argument(
        "--gpus",
        default="0,0",
        help="cuda-agent bench's workers (four on one 80 GB card ran out of memory)",
    )
    ap.add_argument(
        "--cache", type=Path, default=None, help="cuda-agent's cache (default: WORK/cache)"
    )
    ap.add_argument("--trials", type=int, default=100, help="KernelBench's timed calls per side")
    ap.add_argument("--calls", type=int, default=30, help="profiled calls per side")
    args = ap.parse_args()
    level1, src = _level1(args.kernelbench), kernelbench_src(args.kernelbench)
    facts = run_facts()
    if facts["gpu"] is None:
        sys.exit("error: this benchmark times kernels on a CUDA GPU, and torch sees none here")
    cases = write_cases(level1, args.work / "tasks", args.work / "solutions")
    _ours(args.work, args.gpus, args.cache or args.work / "cache")
    _theirs(args.work, src, cases, args.trials, args.calls)
    verdicts = {
        r["task"]["name"]: r["verdict"] for r in _read_jsonl(args.work / "run" / "results.jsonl")
    }
    theirs = {r["task"]: r for r in _read_jsonl(args.work / "kernelbench.jsonl")}
    rows = [_row(c, verdicts.get(c["task"]), theirs.get(c["task"])) for c in cases]
    summary = summarize(rows)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w") as out:
        for row in rows:
            out.write(json.dumps({**facts, **row}) + "\n")
        out.write(json.dumps({**facts, "summary": summary}) + "\n")
    print(_table(rows))
    print(json.dumps(summary, indent=1))
    # a task either side could not measure fails the run: its row says which and why
    return 0 if all(r["ours_events"] and r["kernelbench"] and r["profiler"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
