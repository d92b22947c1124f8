"""Synthesis throughput: a fixed number of candidates through every stage, yield per stage,
accepted tasks per GPU-hour, and the extrapolation to a 6,000-task dataset.

    python benchmarks/synth_throughput.py --device cuda --workers 14 --candidates 300 \\
        --time-limit-s 270 --out DIR

All workers share the one GPU: running a program holds its lock shared, timing holds it alone.
Candidates stream through the stages (compose and the eager filters in batches per child,
torch.compile only for those that passed every cheaper stage), each stage of each candidate
under a hard cap. One-time setup (mining the catalog, tracing KernelBench) is timed apart and
counted inside the time limit; it is cached in --cache-dir for later runs on the same install.

--time-limit-s bounds the whole script: no candidate is taken up in the last --drain-s seconds,
and at the limit the jobs in flight are cut (their candidates count as unfinished). While it
runs, DIR/synth_throughput.partial.json is rewritten every few seconds from the run's journals,
so a run killed from outside still leaves its numbers; at the end DIR/synth_throughput.json and
.md hold the record. `--summarize DIR` rebuilds the partial record from DIR's journals.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import threading
import time
from collections import Counter
from pathlib import Path

from cuda_agent.synth import STAGES, Pipeline, SynthConfig, default_cache_dir, open_journals

TARGET = 6000


def main() -> None:
    start = time.monotonic()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--candidates", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--cache-dir", type=Path, default=default_cache_dir())
    parser.add_argument("--kernelbench", type=Path, default=None)
    parser.add_argument("--window", default=None, help="eager window LO,HI ms (default: device's)")
    parser.add_argument("--time-limit-s", type=float, default=None)
    parser.add_argument("--drain-s", type=float, default=45.0)
    parser.add_argument("--eager-cap-s", type=float, default=45.0)
    parser.add_argument("--compile-cap-s", type=float, default=120.0)
    parser.add_argument("--summarize", action="store_true", help="only rebuild from --out")
    args = parser.parse_args()
    if args.summarize:
        print(json.dumps(partial(args.out / "run", None), indent=2))
        return

    window = tuple(float(x) for x in args.window.split(",")) if args.window else None
    cfg = SynthConfig(
        n=args.candidates,
        out=args.out / "run",
        device=args.device,
        workers=args.workers,
        seed=args.seed,
        window_ms=window,
        kernelbench=args.kernelbench,
        cache_dir=args.cache_dir,
        eager_timeout_s=args.eager_cap_s,
        compile_timeout_s=args.compile_cap_s,
    )
    args.out.mkdir(parents=True, exist_ok=True)
    deadline = start + args.time_limit_s if args.time_limit_s else None
    stop = threading.Event()
    writer = threading.Thread(target=_keep_writing, args=(args.out, start, stop), daemon=True)
    writer.start()
    pipeline = Pipeline(cfg)
    setup_s = time.monotonic() - start
    run_start = time.monotonic()
    result = pipeline.run(candidates=args.candidates, deadline=deadline, drain_s=args.drain_s)
    run_s = time.monotonic() - run_start
    stop.set()
    writer.join()
    record = summarize(cfg, result, setup_s, run_s, time.monotonic() - start, args)
    (args.out / "synth_throughput.json").write_text(json.dumps(record, indent=2) + "\n")
    (args.out / "synth_throughput.md").write_text(markdown(record))
    print(markdown(record))


def summarize(cfg: SynthConfig, result, setup_s: float, run_s: float, total_s: float,
              args) -> dict:  # fmt: skip
    summary = result.summary
    accepted = len(result.accepted)
    resolved = len(result.resolved)
    per_hour = accepted / (run_s / 3600) if run_s > 0 else 0.0  # every worker shares one GPU
    yield_ = accepted / resolved if resolved else 0.0
    return {
        "device": cfg.device,
        "workers": cfg.workers,
        "candidates_asked": args.candidates,
        "candidates_composed": len(result.ids),
        "candidates_through_every_stage": resolved,
        "candidates_unfinished": len(result.unfinished),
        "accepted": accepted,
        "yield": yield_,
        "funnel": summary["funnel"],
        "worker_seconds": result.seconds,
        "setup_seconds": setup_s,
        "run_seconds": run_s,
        "total_seconds": total_s,
        "time_limit_s": args.time_limit_s,
        "caps_s": {"eager": args.eager_cap_s, "compile": args.compile_cap_s},
        "accepted_per_gpu_hour": per_hour,
        "accepted_per_gpu_hour_with_setup": accepted / (total_s / 3600) if total_s else 0.0,
        "extrapolation": {
            "tasks": TARGET,
            "candidates_needed": math.ceil(TARGET / yield_) if yield_ else None,
            "gpu_hours": TARGET / per_hour if per_hour else None,
        },
        "share_3_plus_ops": summary["share_3_plus_ops"],
        "invariants": summary["invariants"],
        "window_ms": list(cfg.window),
        "notes": result.notes,
    }


def markdown(r: dict) -> str:
    lines = [
        f"# Synthesis throughput ({r['device']}, {r['workers']} workers on one device)",
        "",
        f"{r['candidates_through_every_stage']} of {r['candidates_asked']} candidates went "
        f"through every stage ({r['candidates_composed']} composed, "
        f"{r['candidates_unfinished']} unfinished) in {r['run_seconds']:.0f} s of run "
        f"(setup {r['setup_seconds']:.0f} s; {r['total_seconds']:.0f} s in all); "
        f"{r['accepted']} accepted (yield {r['yield']:.1%}), "
        f"**{r['accepted_per_gpu_hour']:.0f} accepted tasks per GPU-hour** "
        f"({r['accepted_per_gpu_hour_with_setup']:.0f} with the setup).",
        "",
        "| stage | in | passed | yield | worker-s | rejected (why) |",
        "| --- | ---: | ---: | ---: | ---: | --- |",
    ]
    for f in r["funnel"]:
        share = f"{f['passed'] / f['in']:.0%}" if f["in"] else "—"
        secs = r["worker_seconds"].get(f["stage"])
        why = ", ".join(f"{k}: {v}" for k, v in f["rejected"].items()) or "—"
        secs_text = f"{secs:.0f}" if secs is not None else ""
        lines.append(
            f"| {f['stage']} | {f['in']} | {f['passed']} | {share} | {secs_text} | {why} |"
        )
    ext = r["extrapolation"]
    if ext["gpu_hours"]:
        lines += [
            "",
            f"Extrapolated to {ext['tasks']:,} tasks: about {ext['candidates_needed']:,} "
            f"candidates and {ext['gpu_hours']:.1f} GPU-hours.",
        ]
    inv = r["invariants"]
    lines += [
        "",
        f"Invariants of the accepted tasks: {inv['duplicate_sources']} + "
        f"{inv['duplicate_signatures']} duplicates, {inv['label_mismatches']} label mismatches, "
        f"{inv['kernelbench_signature_matches']} KernelBench signature matches; "
        f"{r['share_3_plus_ops']:.0%} with 3 or more operators. Eager window "
        f"{r['window_ms'][0]}–{r['window_ms'][1]} ms; caps per candidate: eager "
        f"{r['caps_s']['eager']:.0f} s, compile {r['caps_s']['compile']:.0f} s; time limit "
        f"{r['time_limit_s'] or 'none'}.",
        *[f"\nNote: {n}" for n in r["notes"]],
        "",
    ]
    return "\n".join(lines)


def partial(run_dir: Path, start: float | None) -> dict:
    """What the journals say so far: per stage in/passed/rejected, accepted, verdicts, elapsed."""
    records = {stage: j.records for stage, j in open_journals(run_dir).items()}
    funnel = []
    final: set[int] = set()
    for stage in STAGES:
        recs = records[stage].values()
        final.update(r["id"] for r in recs if not r.get("ok") or stage == "compile")
        funnel.append({"stage": stage, "in": len(recs), "passed": sum(bool(r.get("ok"))
                       for r in recs), "rejected": dict(Counter(r.get("reason") for r in recs
                                                                if not r.get("ok")))})  # fmt: skip
    accepted = sum(bool(r.get("ok")) for r in records["compile"].values())
    stamps = [r["at"] for recs in records.values() for r in recs.values() if "at" in r]
    return {
        "elapsed_s": None if start is None else time.monotonic() - start,
        "journal_span_s": max(stamps) - min(stamps) if stamps else 0.0,
        "composed": len(records["compose"]),
        "through_every_stage": len(final),
        "accepted": accepted,
        "funnel": funnel,
    }


def _keep_writing(out: Path, start: float, stop: threading.Event) -> None:
    path = out / "synth_throughput.partial.json"
    while True:
        stopping = stop.wait(5.0)
        try:
            data = json.dumps(partial(out / "run", start), indent=2) + "\n"
            tmp = path.with_suffix(".tmp")
            tmp.write_text(data)
            tmp.replace(path)
        except OSError:
            pass
        if stopping:
            return


if __name__ == "__main__":
    main()
