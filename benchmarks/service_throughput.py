"""Evaluations per GPU-hour: the evaluation service against a one-process loop, same solutions.

    python benchmarks/service_throughput.py --tasks builtin --solutions tests/fixtures/solutions \
        [--repeat 3] [--gpus 0,1] [--mode local|ray] [--out service_throughput.jsonl]

Both sides evaluate every stored solution `--repeat` times at stage profile. Each evaluation
gets its own variant of the solution (a comment naming the side and repetition is appended to
every .cu file), so every one pays a real nvcc build and link, as after an agent edits a kernel.
Neither side pays what it would share with the other: the eager/torch.compile baselines (cached
per task and GPU) are timed first, and each side warms up untimed (a compile of every unvaried
solution: the toolchain, the precompiled torch header, the objects of unvaried files).
Prints one JSON object (and appends it to --out): wall time and evaluations per GPU-hour of each
side, their ratio, and whether the verdicts agree.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from datetime import UTC, datetime
from pathlib import Path

import torch

from cuda_agent.bench import EvaluationService, Job, ServiceConfig
from cuda_agent.sandbox import Environment, Solution, Stage, read_solution, solution_from_files
from cuda_agent.task import load_tasks


def variant(solution: Solution, tag: str) -> Solution:
    """The same solution with different bytes in each .cu file: a cache miss, the same code."""
    files = {
        path: text + f"\n// throughput variant {tag}\n" if path.endswith(".cu") else text
        for path, text in solution.files.items()
    }
    return solution_from_files(files, where=f"variant {tag}")


def loop_side(pairs, repeat: int) -> tuple[float, list]:
    verdicts = []
    with Environment() as env:
        for task, solution in pairs:  # untimed warm-up, as the service side's
            env.evaluate(task, solution, Stage.COMPILE)
        start = time.perf_counter()
        for rep in range(repeat):
            for task, solution in pairs:
                verdicts.append(env.evaluate(task, variant(solution, f"loop-{rep}"), Stage.PROFILE))
        return time.perf_counter() - start, verdicts


def service_side(pairs, repeat: int, config: ServiceConfig) -> tuple[float, list, int]:
    jobs = [
        Job(task, variant(solution, f"service-{rep}"), Stage.PROFILE, key=f"{task.name}#{rep}")
        for rep in range(repeat)
        for task, solution in pairs
    ]
    with EvaluationService(config) as service:
        list(service.map(Job(t, s, Stage.COMPILE, key=t.name) for t, s in pairs))  # untimed
        start = time.perf_counter()
        done = {job.id: v for job, v in service.map(jobs)}
        wall = time.perf_counter() - start
        gpus = service.gpu_workers
    return wall, [done[j.id] for j in jobs], gpus


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", default="builtin")
    parser.add_argument("--solutions", type=Path, required=True)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--gpus", default=None, help="GPU ids for the service, e.g. 0,1")
    parser.add_argument("--mode", default="local", choices=("local", "ray"))
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()

    tasks = load_tasks(args.tasks)
    pairs = [
        (t, read_solution(args.solutions / t.name))
        for t in tasks
        if (args.solutions / t.name).is_dir()
    ]
    if not pairs:
        raise SystemExit(f"no solution folder in {args.solutions} matches a task of {args.tasks}")
    gpus = tuple(args.gpus.split(",")) if args.gpus else None
    config = ServiceConfig(mode=args.mode, gpus=gpus)

    # The baselines are cached per task and GPU: time them once, before either side.
    with EvaluationService(ServiceConfig(mode="local", gpus=gpus, compile_workers=0)) as warm:
        failed = [
            t.name for t, r in warm.baselines([t for t, _ in pairs]) if isinstance(r, Exception)
        ]
    print(f"baselines of {len(pairs)} tasks ready ({len(failed)} failed)", flush=True)
    loop_wall, loop_verdicts = loop_side(pairs, args.repeat)
    print(f"one-process loop: {len(loop_verdicts)} evaluations in {loop_wall:.1f} s", flush=True)
    service_wall, service_verdicts, service_gpus = service_side(pairs, args.repeat, config)
    print(f"service: {len(service_verdicts)} evaluations in {service_wall:.1f} s", flush=True)

    n = len(pairs) * args.repeat
    loop_rate = n / (loop_wall / 3600)
    service_rate = n / (service_wall / 3600) / service_gpus
    agree = [a.status == b.status for a, b in zip(loop_verdicts, service_verdicts, strict=True)]
    ratios = [
        b.speedup_vs_eager / a.speedup_vs_eager
        for a, b in zip(loop_verdicts, service_verdicts, strict=True)
        if a.speedup_vs_eager and b.speedup_vs_eager
    ]
    result = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        "torch_version": torch.__version__,
        "mode": args.mode,
        "tasks": [t.name for t, _ in pairs],
        "evaluations_per_side": n,
        "baseline_failures": failed,
        "loop": {
            "wall_s": round(loop_wall, 2),
            "gpus": 1,
            "evaluations_per_gpu_hour": round(loop_rate, 1),
        },
        "service": {
            "wall_s": round(service_wall, 2),
            "gpus": service_gpus,
            "evaluations_per_gpu_hour": round(service_rate, 1),
            "evaluations_per_hour": round(service_rate * service_gpus, 1),
        },
        "per_gpu_ratio": round(service_rate / loop_rate, 3),
        "same_status": sum(agree),
        "speedup_ratio_median": round(statistics.median(ratios), 4) if ratios else None,
        "statuses": sorted({v.status.value for v in loop_verdicts + service_verdicts}),
    }
    line = json.dumps(result)
    print(line)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        with args.out.open("a") as fh:
            fh.write(line + "\n")


if __name__ == "__main__":
    main()
