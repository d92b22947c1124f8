"""Does a finished torch.profiler session change what the harness's timer measures? (diagnostic)

The candidate process runs the profiler (kernel trace) before its timed calls. This measures, in
one fresh process, the timer's figures for a no-op call and a 0.3 ms elementwise call before any
profiler session, after one, and (in a second process) after one with TEARDOWN_CUPTI=1.

`--startup` instead times each step of the profiler's start in fresh processes forked from a
fork server, as candidate processes are (4.4–6.1 s of each candidate process's start on the H200,
2026-12-03): importing torch.profiler, entering the session, one op, leaving it, reading its
events; then a second session in the same process.

    python benchmarks/_probe_cupti.py [--out FILE] [--startup]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))


def measure(label: str) -> dict:
    import torch

    from cuda_agent.sandbox.timing.call import L2Flusher, timed_call

    device = torch.device("cuda", 0)
    flush = L2Flusher(device)
    x = torch.randn(8192, 16384, device=device)

    def noop():
        return None

    def elementwise(t):
        return torch.clamp(torch.nn.functional.gelu(t * 1.7 + 0.3), -0.5, 2.0)

    row = {"phase": label}
    for name, fn, args in (("noop", noop, []), ("elementwise", elementwise, [x])):
        for _ in range(3):
            timed_call(fn, args, flush)
        times = [timed_call(fn, args, flush)[1] for _ in range(30)]
        med = statistics.median
        row[name] = {
            "stream_ms": med(t.stream_ms for t in times),
            "sync_gap_ms": med(t.wide_ms - t.stream_ms for t in times),
            "host_minus_wide_ms": med(t.host_ms - t.wide_ms for t in times),
        }
    return row


def profile_once() -> None:
    import torch
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        torch.ones(1, device="cuda").add_(1)
        torch.cuda.synchronize()
    prof.events()


def startup_steps(conn) -> None:
    """Seconds of each step of two profiler sessions in this fresh process."""
    import time

    import torch

    steps, last = {}, time.perf_counter()

    def mark(name: str) -> None:
        nonlocal last
        now = time.perf_counter()
        steps[name] = now - last
        last = now

    torch.cuda.set_device(0)
    torch.empty(1, device="cuda")
    mark("cuda_context")
    from torch.profiler import ProfilerActivity, profile

    mark("import_profiler")
    for session in ("first", "second"):
        prof = profile(activities=[ProfilerActivity.CUDA])
        prof.__enter__()
        mark(f"{session}_enter")
        torch.ones(1, device="cuda").add_(1)
        torch.cuda.synchronize()
        mark(f"{session}_op")
        prof.__exit__(None, None, None)
        mark(f"{session}_exit")
        prof.events()
        mark(f"{session}_events")
    conn.send(steps)
    conn.close()


def startup(processes: int = 3) -> list[dict]:
    import importlib

    from cuda_agent.sandbox.process.watch import forkserver_context, start_process

    ctx = forkserver_context()
    target = importlib.import_module("benchmarks._probe_cupti").startup_steps
    rows = []
    for p in range(processes):
        parent_end, child_end = ctx.Pipe()
        proc = ctx.Process(target=target, args=(child_end,))
        start_process(proc)
        child_end.close()
        rows.append({"process": p, "seconds": parent_end.recv()})
        proc.join(timeout=30)
        print(json.dumps(rows[-1]), flush=True)
    return rows


def phases() -> list[dict]:
    rows = [measure("before any profiler session")]
    profile_once()
    rows.append(measure("after one profiler session" + _teardown_note()))
    profile_once()
    rows.append(measure("after two profiler sessions" + _teardown_note()))
    return rows


def _teardown_note() -> str:
    return " (TEARDOWN_CUPTI=1)" if os.environ.get("TEARDOWN_CUPTI") == "1" else ""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path)
    parser.add_argument("--child", action="store_true")
    parser.add_argument("--startup", action="store_true")
    args = parser.parse_args()
    if args.startup:
        rows = startup()
        if args.out:
            args.out.write_text(json.dumps(rows, indent=1))
        return
    if args.child:
        print(json.dumps(phases()))
        return
    rows = phases()
    env = {**os.environ, "TEARDOWN_CUPTI": "1"}
    child = subprocess.run(
        [sys.executable, __file__, "--child"], env=env, capture_output=True, text=True, timeout=300
    )
    if child.returncode == 0:
        rows += json.loads(child.stdout.strip().splitlines()[-1])
    else:
        rows.append({"phase": "TEARDOWN_CUPTI=1 child failed", "stderr": child.stderr[-2000:]})
    for row in rows:
        print(json.dumps(row))
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
