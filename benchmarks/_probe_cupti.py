"""Does a finished torch.profiler session change what the harness's timer measures? (diagnostic)

The candidate process runs the profiler (kernel trace) before its timed calls. This measures, in
one fresh process, the timer's figures for a no-op call and a 0.3 ms elementwise call before any
profiler session, after one, and (in a second process) after one with TEARDOWN_CUPTI=1.

    python benchmarks/_probe_cupti.py [--out FILE]
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

    from cuda_agent.sandbox.timing import L2Flusher, timed_call

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
    args = parser.parse_args()
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
