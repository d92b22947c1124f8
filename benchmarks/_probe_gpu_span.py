"""How does recording the GPU's activity (CUPTI, through torch's profiler) around one call
disturb the call's events, and do the recorded times line up with the host clock? (probe)

One 512 MiB negation and elementwise_chain's eager reference, timed in fresh processes, four
ways per call in an order drawn per call:

- plain: timed_call's events, no recording
- outside: a recording session opened after the L2 flush, around the call
- inside: a session opened before the flush (the flush is its first activity), around the call
- kept: one session left open across every call of the process (no per-call start)

For each: the events' time (start event to end event), the recorded GPU span, and where the
recorded activities lie against the host clock (time.time_ns) taken around the call.

On the H200 (2026-12-04, docs/data/probe_gpu_span_h200_2026-12-04.jsonl, 4 processes): the
span of a 512 MiB negation 0.2490–0.2497 ms and of the five-kernel chain 0.3537–0.3548 ms in
every way and process. A session opened right before the call (outside) delays its first
launch by 0.38–0.50 ms (CUPTI's own set-up on the first CUDA call), which a flush inside the
session absorbs (inside: events within 1–4 % of plain ones). Records before the call ended
10–110 µs before the host's mark, the call's began 24–72 µs after it: the records are on the
host's clock. The trace's start lay 80–95 µs before the profiler's start returned (`--dump`),
and about one call in 60 had one record end 20–50 ms late (hence gpu_work's cut at the host's
end of the call).

    python benchmarks/_probe_gpu_span.py --out FILE.jsonl [--processes 4] [--calls 20]
    python benchmarks/_probe_gpu_span.py --dump [--calls 60]   # the real timed_call, raw records
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))


def _worker(calls: int) -> dict:
    import torch
    from torch.autograd import DeviceType, _disable_profiler

    from cuda_agent.sandbox.timing import gpu_work
    from cuda_agent.sandbox.timing.call import L2Flusher

    device = torch.device("cuda", 0)
    flush = L2Flusher(device)
    x = torch.randn(128 << 20, device=device)
    a, b = torch.randn(4096, 8192, device=device), torch.randn(4096, 8192, device=device)

    def chain(u, v):
        return torch.relu(u * 2.0 + v).sigmoid() * 3.0

    fns = {"neg": lambda: torch.neg(x), "chain": lambda: chain(a, b)}
    gpu_work.start_recording_once()
    sync = torch.cuda.synchronize
    Event = torch.cuda.Event

    def events(fn):
        s, e = Event(enable_timing=True), Event(enable_timing=True)
        before = time.time_ns()
        s.record()
        fn()
        e.record()
        sync()
        return s.elapsed_time(e), before, time.time_ns()

    def gpu_rows(result):
        return sorted(
            (e.start_ns(), e.start_ns() + e.duration_ns(), e.name())
            for e in result.events()
            if e.device_type() == DeviceType.CUDA and not e.is_user_annotation()
        )

    rows = {f"{f}/{w}": [] for f in fns for w in ("plain", "outside", "inside", "kept")}
    kept_pending = []
    for _ in range(calls):
        for fname in random.sample(list(fns), len(fns)):
            fn = fns[fname]
            for way in random.sample(["plain", "outside", "inside"], 3):
                if way == "inside":
                    enter = time.time_ns()
                    rec = gpu_work._start() or True
                    flush()
                    sync()
                else:
                    flush()
                    sync()
                    enter = time.time_ns()
                    rec = way == "outside" and (gpu_work._start() or True)
                ms, before, after = events(fn)
                if not rec:
                    rows[f"{fname}/plain"].append({"events_ms": ms})
                    continue
                result = _disable_profiler()
                acts = gpu_rows(result)
                mine = [r for r in acts if r[0] >= before]
                rows[f"{fname}/{way}"].append(
                    {
                        "events_ms": ms,
                        "span_ms": (max(r[1] for r in mine) - mine[0][0]) / 1e6 if mine else None,
                        "first_after_before_us": (mine[0][0] - before) / 1e3 if mine else None,
                        "last_before_after_us": (after - max(r[1] for r in mine)) / 1e3
                        if mine
                        else None,
                        "earlier_end_before_us": [
                            (before - r[1]) / 1e3 for r in acts if r[0] < before
                        ],
                        "trace_start_after_enter_us": (result.trace_start_ns() - enter) / 1e3,
                        "activities": len(acts),
                    }
                )
    # kept: one session open across calls
    gpu_work._start()
    for _ in range(calls):
        for fname, fn in fns.items():
            flush()
            sync()
            ms, before, after = events(fn)
            kept_pending.append((fname, ms, before, after))
    result = _disable_profiler()
    acts = gpu_rows(result)
    for fname, ms, before, after in kept_pending:
        mine = [r for r in acts if before <= r[0] <= after]
        rows[f"{fname}/kept"].append(
            {
                "events_ms": ms,
                "span_ms": (max(r[1] for r in mine) - mine[0][0]) / 1e6 if mine else None,
                "first_after_before_us": (mine[0][0] - before) / 1e3 if mine else None,
            }
        )
    summary = {}
    for key, vals in rows.items():
        s = {"events_ms": statistics.median(v["events_ms"] for v in vals)}
        spans = [v["span_ms"] for v in vals if v.get("span_ms") is not None]
        if spans:
            s["span_ms"] = statistics.median(spans)
            s["span_min_max"] = [min(spans), max(spans)]
            s["lead_us"] = statistics.median(
                v["first_after_before_us"]
                for v in vals
                if v.get("first_after_before_us") is not None
            )
        if vals and "trace_start_after_enter_us" in vals[0]:
            s["trace_start_after_enter_us"] = [
                min(v["trace_start_after_enter_us"] for v in vals),
                max(v["trace_start_after_enter_us"] for v in vals),
            ]
            s["tail_us"] = statistics.median(
                v["last_before_after_us"] for v in vals if v["last_before_after_us"] is not None
            )
            ends = [e for v in vals for e in v["earlier_end_before_us"]]
            s["earlier_activity_end_before_us"] = [min(ends), max(ends)] if ends else None
            s["activities"] = sorted({v["activities"] for v in vals})
        summary[key] = s
    return summary


def _dump(calls: int) -> dict:
    """The real timed_call, `calls` times on elementwise-like work, plus one raw recording's
    every GPU-side record (name, kind, start and end against the mark) and the trace's start
    against the host clock around the profiler's start."""
    import torch
    from torch.autograd import DeviceType, _disable_profiler

    from cuda_agent.sandbox.timing import gpu_work
    from cuda_agent.sandbox.timing.call import L2Flusher, timed_call

    device = torch.device("cuda", 0)
    flush = L2Flusher(device)
    a, b = torch.randn(4096, 8192, device=device), torch.randn(4096, 8192, device=device)

    def chain(u, v):
        return torch.relu(u * 2.0 + v).sigmoid() * 3.0

    gpu_work.start_recording_once()
    rows = [timed_call(chain, [a, b], flush)[1] for _ in range(calls)]
    spans = [r.gpu_ms for r in rows]
    med = statistics.median(spans)
    before = time.time_ns()
    gpu_work._start()
    enabled = time.time_ns()
    flush()
    torch.cuda.synchronize()
    mark = time.time_ns()
    chain(a, b)
    torch.cuda.synchronize()
    result = _disable_profiler()
    records = [
        [e.name()[:60], (e.start_ns() - mark) / 1e3, e.duration_ns() / 1e3]
        for e in result.events()
        if e.device_type() == DeviceType.CUDA
    ]
    return {
        "gpu_ms_median": med,
        "gpu_ms_min_max": [min(spans), max(spans)],
        "outliers": [[r.gpu_ms, list(r.kernels)] for r in rows if r.gpu_ms > 1.5 * med],
        "events_ms_median": statistics.median(r.stream_ms for r in rows),
        "kernels": list(rows[0].kernels),
        "trace_start_after_before_enable_us": (result.trace_start_ns() - before) / 1e3,
        "trace_start_after_enabled_us": (result.trace_start_ns() - enabled) / 1e3,
        "records": records,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path)
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--worker", action="store_true")
    parser.add_argument("--dump", action="store_true", help="the real timed_call and raw records")
    args = parser.parse_args()
    if args.dump:
        print(json.dumps(_dump(args.calls)))
        return
    if args.worker:
        print(json.dumps(_worker(args.calls)))
        return
    with args.out.open("w") as out:
        for p in range(args.processes):
            proc = subprocess.run(
                [sys.executable, __file__, "--worker", "--calls", str(args.calls)],
                capture_output=True,
                text=True,
                check=False,
            )
            line = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else "{}"
            if proc.returncode:
                print(proc.stderr[-3000:])
            row = {"process": p, **json.loads(line)}
            out.write(json.dumps(row) + "\n")
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
