"""Synthesis throughput: a fixed number of candidates through every stage, yield per stage,
accepted tasks per GPU-hour, and the extrapolation to a 6,000-task dataset.

    python benchmarks/synth_throughput.py --device cuda --workers 16 --candidates 300 --out DIR

All workers share the one GPU: each child gets a slice of its memory, timings are taken under a
file lock so they never overlap, and torch.compile (the slow stage) runs only for candidates
that passed the cheap ones. One-time setup (mining the catalog, tracing KernelBench) is timed
apart: it is cached for later runs. Writes DIR/synth_throughput.json and .md.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from pathlib import Path

from cuda_agent.synth import Pipeline, SynthConfig, default_cache_dir

TARGET = 6000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--candidates", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--cache-dir", type=Path, default=default_cache_dir())
    parser.add_argument("--kernelbench", type=Path, default=None)
    args = parser.parse_args()

    cfg = SynthConfig(
        n=args.candidates,
        out=args.out / "run",
        device=args.device,
        workers=args.workers,
        seed=args.seed,
        kernelbench=args.kernelbench,
        cache_dir=args.cache_dir,
    )
    start = time.monotonic()
    pipeline = Pipeline(cfg)
    setup_s = time.monotonic() - start
    start = time.monotonic()
    result = pipeline.run(candidates=args.candidates)
    run_s = time.monotonic() - start
    record = summarize(cfg, result, setup_s, run_s)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "synth_throughput.json").write_text(json.dumps(record, indent=2) + "\n")
    (args.out / "synth_throughput.md").write_text(markdown(record))
    print(markdown(record))


def summarize(cfg: SynthConfig, result, setup_s: float, run_s: float) -> dict:
    summary = result.summary
    accepted = len(result.accepted)
    gpus = 1  # every worker shares one device
    per_hour = accepted / (run_s / 3600) / gpus if run_s > 0 else 0.0
    yield_ = accepted / len(result.ids) if result.ids else 0.0
    return {
        "device": cfg.device,
        "workers": cfg.workers,
        "candidates": len(result.ids),
        "accepted": accepted,
        "yield": yield_,
        "funnel": summary["funnel"],
        "stage_seconds": result.seconds,
        "setup_seconds": setup_s,
        "run_seconds": run_s,
        "accepted_per_gpu_hour": per_hour,
        "extrapolation": {
            "tasks": TARGET,
            "candidates_needed": math.ceil(TARGET / yield_) if yield_ else None,
            "gpu_hours": TARGET / per_hour if per_hour else None,
        },
        "share_3_plus_ops": summary["share_3_plus_ops"],
        "invariants": summary["invariants"],
        "window_ms": list(cfg.window),
    }


def markdown(r: dict) -> str:
    lines = [
        f"# Synthesis throughput ({r['device']}, {r['workers']} workers on one device)",
        "",
        f"{r['candidates']} candidates through every stage in {r['run_seconds']:.0f} s "
        f"(setup, cached afterwards: {r['setup_seconds']:.0f} s); {r['accepted']} accepted "
        f"(yield {r['yield']:.1%}), **{r['accepted_per_gpu_hour']:.0f} accepted tasks per "
        "GPU-hour**.",
        "",
        "| stage | in | passed | yield | seconds | rejected (why) |",
        "| --- | ---: | ---: | ---: | ---: | --- |",
    ]
    for f in r["funnel"]:
        share = f"{f['passed'] / f['in']:.0%}" if f["in"] else "—"
        secs = r["stage_seconds"].get(f["stage"])
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
        f"{r['window_ms'][0]}–{r['window_ms'][1]} ms.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
