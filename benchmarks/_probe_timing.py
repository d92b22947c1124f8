"""Why does one fused kernel time slower in our harness than in a CUDA-Agent-style loop? (probe)

On the H200 (2026-12-03) eager elementwise_chain (four kernels) timed alike in both (1.05 ms),
torch.compile's single fused kernel did not (ours 0.376–0.458 ms, the reference loop 0.315), nor
the candidate's single kernel (0.306–0.344 against 0.283). This times torch.compile's graph and a
hand-fused torch function in one process under each difference between the two methods, one at
a time, and prints a JSON line per variant (medians of 20 calls, ms):

- loop: the reference loop's way: one input, no L2 flush, events, a synchronize after each call
- flush: the same, with our L2 flush (a read) before each call
- fresh: a fresh input set per call, no flush
- ours: `timed_call`, a fresh input set per call and the flush (what the harness does)
- ours_same: `timed_call` on one input set
- queued: fresh sets and the flush, the start event recorded behind the flush without a
  synchronize in between (launch latency hidden behind the flush, as triton's do_bench does)
- idle, idle_spun: `ours` after the GPU idled 3 s (as while a round builds), without and with
  `spin_up` (100 ms of reads) first: do clocks that dropped explain a slow first stretch?

    python benchmarks/_probe_timing.py [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

CALLS, SETS = 20, 12


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    import torch

    from cuda_agent.sandbox.timing import L2Flusher, spin_up, timed_call

    device = torch.device("cuda", 0)
    flush = L2Flusher(device)
    sets = [torch.randn(8192, 16384, device=device) for _ in range(SETS)]

    def chain(x):
        return torch.clamp(torch.nn.functional.gelu(x * 1.7 + 0.3), -0.5, 2.0)

    compiled = torch.compile(chain)
    fns = {"eager": chain, "compile": compiled}

    def events(fn, x, do_flush, sync_before=True):
        if do_flush:
            flush()
        if sync_before:
            torch.cuda.synchronize()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn(x)
        b.record()
        torch.cuda.synchronize()
        return a.elapsed_time(b)

    variants = {
        "loop": lambda fn, i: events(fn, sets[0], False),
        "flush": lambda fn, i: events(fn, sets[0], True),
        "fresh": lambda fn, i: events(fn, sets[i % SETS], False),
        "ours": lambda fn, i: timed_call(fn, [sets[i % SETS]], flush)[1].stream_ms,
        "ours_same": lambda fn, i: timed_call(fn, [sets[0]], flush)[1].stream_ms,
        "queued": lambda fn, i: events(fn, sets[i % SETS], True, sync_before=False),
    }
    with torch.no_grad():
        for fn in fns.values():
            for x in sets[:5]:
                fn(x)
        torch.cuda.synchronize()
        rows = []
        for repeat in range(2):
            for name, variant in variants.items():
                row = {"variant": name, "repeat": repeat}
                for label, fn in fns.items():
                    row[label] = round(statistics.median(variant(fn, i) for i in range(CALLS)), 4)
                rows.append(row)
                print(json.dumps(row), flush=True)
            for name, spun in (("idle", False), ("idle_spun", True)):
                row = {"variant": name, "repeat": repeat}
                for label, fn in fns.items():
                    time.sleep(3.0)
                    if spun:
                        spin_up(flush, 100.0)
                    times = [timed_call(fn, [sets[i % SETS]], flush)[1].stream_ms
                             for i in range(CALLS)]  # fmt: skip
                    row[label] = round(statistics.median(times), 4)
                    row[f"{label}_first3"] = [round(x, 4) for x in times[:3]]
                rows.append(row)
                print(json.dumps(row), flush=True)
    if args.out:
        args.out.write_text("".join(json.dumps(r) + "\n" for r in rows))


if __name__ == "__main__":
    main()
