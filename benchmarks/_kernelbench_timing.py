"""The anchors of benchmarks/timing_vs_kernelbench.py, in one process on the GPU: for each task,
KernelBench's own `eval_kernel_against_ref` (5 correctness trials, its `cuda_event` timing of
`trials` calls, the mean reported, reference and submission alike), a `torch.profiler` kernel
sum (the GPU activities each call launched, kernels, copies and fills, summed and averaged over
`calls` calls, each after the 256 MiB L2 flush KernelBench's timing writes), and the second
measures that tell a difference's causes apart: KernelBench's loop again on the same models and
inputs, its mean and its median, with its write flush and with cuda-agent's read flush, and the
kernel sum after the read flush. One JSON line per task, written as it is measured; a rerun
skips the tasks already written.

    python benchmarks/_kernelbench_timing.py KERNELBENCH_SRC CASES.json OUT.jsonl BUILD_DIR \
        [--trials 100] [--calls 30]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import traceback
from pathlib import Path

import torch
from _kernelbench_entry import enter_kernelbench
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile, record_function

FLUSH_BYTES = 256 * 2**20
MARK = "timed_call"


def kernel_sum_ms(model, inputs: list, calls: int, flush) -> float:
    """The mean over `calls` calls of the GPU time of the activities each one launched, each
    call after `flush()` and a wait for it. The GPU is idle when a call's mark opens and when it
    closes, so the activities that start inside a mark are that call's, whatever launched them
    (ATen, an extension's own launches, a fill)."""
    with torch.no_grad():
        for _ in range(3):
            model(*inputs)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for _ in range(calls):
                flush()
                torch.cuda.synchronize()
                with record_function(MARK):
                    model(*inputs)
                    torch.cuda.synchronize()
    events = prof.events()
    marks = sorted(
        (e.time_range.start, e.time_range.end)
        for e in events
        if e.name == MARK and e.device_type == DeviceType.CPU
    )
    if len(marks) != calls:
        raise RuntimeError(f"the profile holds {len(marks)} marked calls, expected {calls}")
    gpu = [e for e in events if e.device_type == DeviceType.CUDA and e.name != MARK]
    per_call = [
        sum(e.time_range.elapsed_us() for e in gpu if lo <= e.time_range.start <= hi)
        for lo, hi in marks
    ]
    if min(per_call) <= 0:
        raise RuntimeError("a marked call has no GPU activity in the profile")
    return sum(per_call) / calls / 1000.0


class Flushes:
    """The two ways to empty L2 before a timed call: KernelBench's (it writes 256 MiB, leaving
    dirty lines the call's own accesses then write back) and cuda-agent's (it reads, leaving clean
    lines). Both are queued without a wait, ahead of the call, as KernelBench's timing queues its
    own; the profiler's kernel sum waits for either before each call."""

    def __init__(self):
        from cuda_agent.sandbox.timing.call import L2Flusher

        self._write_buf = torch.empty(FLUSH_BYTES // 8, dtype=torch.int64, device="cuda")
        self.read = L2Flusher(torch.device("cuda"))

    def write(self) -> None:
        self._write_buf.fill_(42)


def events_ms(model, inputs: list, trials: int, flush=None) -> dict:
    """KernelBench's own `cuda_event` loop (3 warm-up calls, one discarded trial, `trials` timed)
    over the same inputs, its flush replaced by `flush` when one is given; the mean it reports
    and the median of the same trials."""
    from kernelbench import timing

    kept = timing.clear_l2_cache
    if flush is not None:
        timing.clear_l2_cache = lambda device=None: flush()
    try:
        with torch.no_grad():
            times = timing.time_execution_with_cuda_event(
                model, inputs, num_trials=trials, verbose=False, device=torch.device("cuda")
            )
    finally:
        timing.clear_l2_cache = kept
    return {"mean": statistics.fmean(times), "median": statistics.median(times)}


# Each a second measure of the same models on the same inputs, after KernelBench's evaluation:
# the same loop again (how far KernelBench's figure repeats), and with the read flush; the
# submission before the reference, as KernelBench's evaluation times them.
VARIANTS = ("events_again", "events_read_flush")


def diagnostics(reference, candidate, inputs: list, trials: int, calls: int) -> dict:
    flushes = Flushes()
    row = {}
    for side, model in (("candidate", candidate), ("ref", reference)):
        row[f"events_again_{side}"] = events_ms(model, inputs, trials)
        row[f"events_read_flush_{side}"] = events_ms(model, inputs, trials, flushes.read)
    for side, model in (("ref", reference), ("candidate", candidate)):
        row[f"profiler_{side}_ms"] = kernel_sum_ms(model, inputs, calls, flushes.write)
        row[f"profiler_read_flush_{side}_ms"] = kernel_sum_ms(model, inputs, calls, flushes.read)
    return row


def _on_gpu(values: list) -> list:
    return [v.cuda() if isinstance(v, torch.Tensor) else v for v in values]


def measure(case: dict, build: str, trials: int, calls: int) -> dict:
    from kernelbench.eval import (
        eval_kernel_against_ref,
        load_custom_model,
        load_original_model_and_inputs,
    )

    ref, sub = Path(case["ref"]).read_text(), Path(case["submission"]).read_text()
    start = time.perf_counter()
    result = eval_kernel_against_ref(
        ref, sub, num_correct_trials=5, num_perf_trials=trials, measure_performance=True,
        timing_method="cuda_event", build_dir=build, verbose=False,
    )  # fmt: skip
    row = {  # KernelBench's timing reports milliseconds
        "kernelbench_seconds": round(time.perf_counter() - start, 3),
        "compiled": bool(result and result.compiled),
        "correct": bool(result and result.correctness),
        "runtime_ms": getattr(result, "runtime", None),
        "ref_runtime_ms": getattr(result, "ref_runtime", None),
        "excessive_speedup": bool(result and result.metadata.get("excessive_speedup")),
        # mean, std, min and max of the timed calls: a mean far above the min is a few slow calls
        "runtime_stats": _stats(getattr(result, "runtime_stats", None)),
        "ref_runtime_stats": _stats(getattr(result, "ref_runtime_stats", None)),
    }
    if not row["correct"]:
        return row
    try:
        model_cls, get_init_inputs, get_inputs = load_original_model_and_inputs(ref, {})
        new_cls = load_custom_model(sub, {}, build)
        torch.manual_seed(42)
        init = get_init_inputs()
        reference, candidate = model_cls(*init).cuda(), new_cls(*init).cuda()
        inputs = _on_gpu(get_inputs())
        row.update(diagnostics(reference, candidate, inputs, trials, calls))
        del reference, candidate, inputs
    except Exception as err:  # KernelBench's figures stand without the second measures
        row["diagnostics_error"] = _one_line(err)
    torch.cuda.empty_cache()
    return row


def _stats(stats: dict | None) -> dict | None:
    keep = ("mean", "std", "min", "max", "num_trials")
    return {k: stats[k] for k in keep if k in stats} if stats else None


def _one_line(err: Exception) -> str:
    last = traceback.format_exception_only(err)[-1].strip()
    return f"{type(err).__name__}: {last}"[:500]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("src", help="a KernelBench checkout's src folder")
    ap.add_argument("cases", type=Path, help="JSON list of {task, ref, submission}")
    ap.add_argument("out", type=Path)
    ap.add_argument("build", help="KernelBench's build folder, shared by every task")
    ap.add_argument("--trials", type=int, default=100)
    ap.add_argument("--calls", type=int, default=30)
    args = ap.parse_args()
    enter_kernelbench(args.src)
    done = set()
    if args.out.exists():
        done = {json.loads(line)["task"] for line in args.out.read_text().splitlines() if line}
    cases = [c for c in json.loads(args.cases.read_text()) if c["task"] not in done]
    with args.out.open("a") as out:
        for n, case in enumerate(cases, 1):
            try:
                row = measure(case, args.build, args.trials, args.calls)
            except Exception as err:  # one task's failure is that task's row, not the run's end
                row = {"error": _one_line(err)}
            out.write(json.dumps({"task": case["task"], **row}) + "\n")
            out.flush()
            print(f"[kernelbench {n}/{len(cases)}] {case['task']}: {row}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
