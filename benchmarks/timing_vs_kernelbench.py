"""Our speed-ups beside KernelBench's and a profiler's, on the same tasks, files and GPU.

The tasks are KernelBench level-1 problems (elementwise, reductions, normalisations) at two sizes:
small (16 x 16384 and the like: launch-bound, as KernelBench's problems were before they were
enlarged and as public corpora still hold them) and large (about 1 GiB of input). Each is solved
by an honest single-file submission in one of several launch shapes: one kernel; two kernels (a
copy then the op in place, or statistics then the op); a fill first (`torch::zeros`, an ATen fill
kernel, or `cudaMemsetAsync`) (`_timing_cases.py`, `_timing_ops.cu`).

1. `cuda-agent bench` over them with `--timing events`: every verdict carries the three methods'
   speed-ups over eager (`timings`) and whether the task is launch-bound; then the small tasks
   once more, in a second run (how far our own figure repeats).
2. In one process (`_kernelbench_timing.py`): KernelBench's `eval_kernel_against_ref` with its
   `cuda_event` timing (its `ref_runtime / runtime`), a `torch.profiler` kernel sum of the
   reference and the submission, and the second measures: KernelBench's loop again (mean and
   median), with cuda-agent's read flush in place of its write flush, and the kernel sum after
   the read flush.
3. Each task's row: our `events` speed-up beside KernelBench's (the same method), our `kernels`
   speed-up beside the profiler's, our `span`, and the pairs (`PAIRS`) that tell a difference's
   causes apart: each side against its own repeat, mean against median, write flush against read
   flush; the relative difference of each pair, and whether it is within the goal (5 %).

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


def _ours(work: Path, gpus: str, cache: Path, tasks: Path, solutions: Path, run: Path) -> None:
    cmd = [sys.executable, "-m", "cuda_agent", "bench", "--tasks", str(tasks)]
    cmd += ["--solutions", str(solutions), "--out", str(run)]
    cmd += ["--gpus", gpus, "--timing", "events"]
    env = {**os.environ, "CUDA_AGENT_CACHE": str(cache)}
    if subprocess.run(cmd, cwd=REPO, env=env).returncode != 0:
        sys.exit("error: cuda-agent bench failed; its output is above (a rerun resumes it)")


def _small_only(work: Path, cases: list[dict]) -> tuple[Path, Path]:
    """The small tasks and their submissions in folders of their own, for the second run."""
    tasks, solutions = work / "tasks_small", work / "solutions_small"
    for folder in (tasks, solutions):
        folder.mkdir(parents=True, exist_ok=True)
    for c in cases:
        if c["size"] == "small":
            for src, dst in ((work / "tasks", tasks), (work / "solutions", solutions)):
                (dst / f"{c['task']}.py").write_text((src / f"{c['task']}.py").read_text())
    return tasks, solutions


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


def _speedup(theirs: dict, variant: str, stat: str) -> float | None:
    ref, cand = theirs.get(f"{variant}_ref") or {}, theirs.get(f"{variant}_candidate") or {}
    return _ratio(ref.get(stat), cand.get(stat))


# Each pair: (name, ours or an anchor, the anchor it is held against). The first two are the
# benchmark's goal; the rest tell a difference's causes apart on the same GPU in the same run.
PAIRS = (
    ("events_vs_kernelbench", "ours_events", "kernelbench"),
    ("kernels_vs_profiler", "ours_kernels", "profiler"),
    ("ours_again_vs_ours", "ours_events_again", "ours_events"),
    ("kernelbench_again_vs_kernelbench", "kernelbench_again", "kernelbench"),
    ("kernelbench_median_vs_mean", "kernelbench_again_median", "kernelbench_again"),
    (
        "kernelbench_read_flush_vs_write",
        "kernelbench_read_flush_median",
        "kernelbench_again_median",
    ),
    ("events_vs_kernelbench_read_flush", "ours_events", "kernelbench_read_flush_median"),
    ("kernels_vs_profiler_read_flush", "ours_kernels", "profiler_read_flush"),
)


def _row(case: dict, verdict: dict | None, again: dict | None, theirs: dict | None) -> dict:
    row = dict(case)
    timings = (verdict or {}).get("timings") or {}
    row["ours_status"] = (verdict or {}).get("status", "missing")
    for method in ("events", "kernels", "span"):
        row[f"ours_{method}"] = (timings.get(method) or {}).get("speedup_vs_eager")
        for side in ("eager", "candidate"):
            row[f"ours_{side}_{method}_ms"] = (timings.get(method) or {}).get(f"{side}_ms")
    again_timings = (again or {}).get("timings") or {}
    row["ours_events_again"] = (again_timings.get("events") or {}).get("speedup_vs_eager")
    row["launch_bound"] = (verdict or {}).get("launch_bound")
    row["eager_launch_ms"] = (verdict or {}).get("eager_launch_ms")
    row["input_distribution"] = (verdict or {}).get("input_distribution")
    theirs = theirs or {}
    row["kernelbench_correct"] = theirs.get("correct")
    row["kernelbench_error"] = theirs.get("error")
    row["diagnostics_error"] = theirs.get("diagnostics_error")
    row["kernelbench"] = _ratio(theirs.get("ref_runtime_ms"), theirs.get("runtime_ms"))
    row["kernelbench_ref_ms"] = theirs.get("ref_runtime_ms")
    row["kernelbench_candidate_ms"] = theirs.get("runtime_ms")
    row["kernelbench_ref_stats"] = theirs.get("ref_runtime_stats")
    row["kernelbench_candidate_stats"] = theirs.get("runtime_stats")
    for variant in ("events_again", "events_read_flush"):
        for side in ("ref", "candidate"):
            row[f"kernelbench_{variant}_{side}"] = theirs.get(f"{variant}_{side}")
    row["kernelbench_again"] = _speedup(theirs, "events_again", "mean")
    row["kernelbench_again_median"] = _speedup(theirs, "events_again", "median")
    row["kernelbench_read_flush_median"] = _speedup(theirs, "events_read_flush", "median")
    for flush in ("", "_read_flush"):
        ref_ms = theirs.get(f"profiler{flush}_ref_ms")
        cand_ms = theirs.get(f"profiler{flush}_candidate_ms")
        row[f"profiler{flush}_ref_ms"], row[f"profiler{flush}_candidate_ms"] = ref_ms, cand_ms
        row[f"profiler{flush}"] = _ratio(ref_ms, cand_ms)
    for pair, ours, anchor in PAIRS:
        row[pair] = _difference(row[ours], row[anchor])
        row[f"{pair}_within_goal"] = None if row[pair] is None else abs(row[pair]) <= GOAL
    return row


def _verdicts(run: Path) -> dict[str, dict]:
    return {r["task"]["name"]: r["verdict"] for r in _read_jsonl(run / "results.jsonl")}


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
    """Counts over the tasks both sides measured, per size: within the goal, per pair."""
    out: dict = {"tasks": len(rows), "launch_bound": [r["task"] for r in rows if r["launch_bound"]]}
    for size in ("small", "large"):
        out[size] = {
            pair: _counts([r for r in rows if r["size"] == size], pair) for pair, *_ in PAIRS
        }
    return out


def _counts(rows: list[dict], pair: str) -> dict:
    measured = [r for r in rows if r[pair] is not None]
    return {
        "measured": len(measured),
        "within_goal": sum(r[f"{pair}_within_goal"] for r in measured),
        "outside": {r["task"]: round(r[pair], 4) for r in measured if not r[f"{pair}_within_goal"]},
        "median_abs": _median([abs(r[pair]) for r in measured]),
    }


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
    cache, work = args.cache or args.work / "cache", args.work
    _ours(work, args.gpus, cache, work / "tasks", work / "solutions", work / "run")
    # the small tasks once more, on fresh processes and inputs: how far our own figure repeats
    _ours(work, args.gpus, cache, *_small_only(work, cases), work / "run_again")
    _theirs(work, src, cases, args.trials, args.calls)
    verdicts, again = _verdicts(work / "run"), _verdicts(work / "run_again")
    theirs = {r["task"]: r for r in _read_jsonl(work / "kernelbench.jsonl")}
    rows = [
        _row(c, verdicts.get(c["task"]), again.get(c["task"]), theirs.get(c["task"])) for c in cases
    ]
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
