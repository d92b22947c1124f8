"""Is a round's slow or fast stretch on the host or on the GPU? (probe)

`_probe_spread.py` (H200, 2026-12-03) found a candidate's 0.3 ms kernel timing at 0.29 ms in one
round and 0.31–0.32 ms in all 30 calls of another, with the switch sometimes mid-round, and
eager's calls in the parent switching the same way at other moments. A timed call's events
include the host's launch of the kernel (the GPU is idle from the start event until then), so
the host's state can move a call by the 5 % seen. This times one single-kernel call (a negation
of 512 MiB, about a candidate's elementwise kernel) in fresh processes forked like candidate
processes, on input sets shared by the parent over CUDA IPC, three ways per call, in an order
drawn per call:

- events: `timed_call` as the harness does (synchronize, start event, call, end event)
- queued: the start event queued behind a 2 ms GPU wait issued before the call, so the launch
  happens while the GPU is busy: the GPU's own time of the kernel, without the host's launch
- host_us: the host time of the call itself (launch path: Python, dispatcher, allocator)

half of the processes pinned to one CPU for the whole run. First, in as many processes, the host
time of each step of a launch path (a Python call, an allocation, a bare kernel launch, a
negation into a given output, one that allocates its output), the GPU idle before each. Prints
and writes one JSON line per process (medians, p10/p90), and the host's CPU facts.

On the H200's host (2026-12-03, data in docs/data/probe_launch_h200_2026-12-03.jsonl) the GPU's
own time was 0.2508–0.2530 ms in all 16 processes (0.2 % apart within a run), the timed call
0.2591–0.2793 ms (3–6 %): the host's launch took 10–28 µs, and even a Python no-op call took
0.29–0.61 µs, per process, pinned or not. The host's speed, not the GPU's, moves a call.

    python benchmarks/_probe_launch.py --out FILE.jsonl [--processes 8] [--calls 30]
"""

from __future__ import annotations

import argparse
import ctypes
import importlib
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

SETS = 12
_libc = ctypes.CDLL(None)  # sched_getcpu: os has it only from Python 3.13


def _child(conn, sets, calls: int, pin: int | None) -> None:
    import torch

    from cuda_agent.sandbox.timing.call import L2Flusher, timed_call

    if pin is not None:
        os.sched_setaffinity(0, {pin})
    device = torch.device("cuda", 0)
    torch.cuda.set_device(device)
    flush = L2Flusher(device)
    fn = torch.neg
    for s in sets:
        fn(*s)
    torch.cuda.synchronize()
    rows = {"events": [], "queued": [], "host_us": [], "cpu": []}
    for i in range(calls):
        for mode in random.sample(["events", "queued"], 2):
            fn(*sets[(i - 1) % len(sets)])  # the untimed call before each timed one
            torch.cuda.synchronize()
            inputs = sets[i % len(sets)]
            if mode == "events":
                out, t = timed_call(fn, inputs, flush)
                rows["events"].append(t.stream_ms)
            else:
                flush()
                torch.cuda.synchronize()
                start, end = (torch.cuda.Event(enable_timing=True) for _ in range(2))
                torch.cuda._sleep(2_000_000)  # ~1 ms of GPU spin: the launch happens meanwhile
                start.record()
                t0 = time.perf_counter_ns()
                out = fn(*inputs)
                rows["host_us"].append((time.perf_counter_ns() - t0) / 1e3)
                end.record()
                torch.cuda.synchronize()
                rows["queued"].append(start.elapsed_time(end))
            del out
        rows["cpu"].append(_libc.sched_getcpu())
    conn.send(rows)
    conn.close()


def _paths(conn, x, calls: int) -> None:
    """Host microseconds of each step of a launch path, GPU idle before each call."""
    import torch

    torch.cuda.set_device(0)
    y = torch.empty_like(x)
    steps = {
        "python_call": lambda: None,
        "empty_1": lambda: torch.empty(1, device="cuda"),
        "launch_sleep0": lambda: torch.cuda._sleep(0),
        "neg_out": lambda: torch.neg(x, out=y),
        "neg": lambda: torch.neg(x),
    }
    for fn in steps.values():
        fn()
    torch.cuda.synchronize()
    times = {name: [] for name in steps}
    for _ in range(calls):
        for name in random.sample(list(steps), len(steps)):
            torch.cuda.synchronize()
            t0 = time.perf_counter_ns()
            out = steps[name]()
            times[name].append((time.perf_counter_ns() - t0) / 1e3)
            del out
    torch.cuda.synchronize()
    conn.send({name: statistics.median(v) for name, v in times.items()})
    conn.close()


def _summary(values: list[float]) -> dict:
    q = statistics.quantiles(values, n=10)
    return {"median": statistics.median(values), "p10": q[0], "p90": q[-1]}


def _host_facts() -> dict:
    facts = {"cpus": os.cpu_count()}
    for key, path in (
        ("governor", "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
        ("driver", "/sys/devices/system/cpu/cpu0/cpufreq/scaling_driver"),
        ("cpuidle", "/sys/devices/system/cpu/cpuidle/current_driver"),
    ):
        try:
            facts[key] = Path(path).read_text().strip()
        except OSError:
            facts[key] = None
    try:
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
        facts["lscpu"] = [
            line
            for line in lscpu.splitlines()
            if line.split(":")[0].strip()
            in ("Model name", "Thread(s) per core", "NUMA node(s)", "CPU max MHz", "CPU min MHz")
        ]
    except (OSError, subprocess.SubprocessError):
        pass
    return facts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--processes", type=int, default=8)
    parser.add_argument("--calls", type=int, default=30)
    args = parser.parse_args()
    import torch
    import torch.multiprocessing as tmp

    from cuda_agent.sandbox.process.watch import forkserver_context, start_process

    # by its module's name: a function of __main__ does not reach a forkserver child
    child = importlib.import_module("benchmarks._probe_launch")._child
    facts = _host_facts()
    print(json.dumps(facts), flush=True)
    ctx = forkserver_context()
    sets = [[torch.randn(8192, 16384, device="cuda")] for _ in range(SETS)]
    torch.cuda.synchronize()
    assert tmp  # the CUDA IPC reductions come with torch.multiprocessing
    with args.out.open("w") as out:
        out.write(json.dumps({"host": facts}) + "\n")
        paths = importlib.import_module("benchmarks._probe_launch")._paths
        for p in range(args.processes):
            parent_end, child_end = ctx.Pipe()
            proc = ctx.Process(target=paths, args=(child_end, sets[0][0], 200))
            start_process(proc)
            child_end.close()
            medians = parent_end.recv()
            proc.join(timeout=30)
            out.write(json.dumps({"process": p, "launch_path_us": medians}) + "\n")
            print(f"process {p} launch path (us): {json.dumps(medians)}", flush=True)
        for p in range(args.processes):
            pin = (2 + p) % os.cpu_count() if p % 2 else None
            parent_end, child_end = ctx.Pipe()
            proc = ctx.Process(target=child, args=(child_end, sets, args.calls, pin))
            start_process(proc)
            child_end.close()
            rows = parent_end.recv()
            proc.join(timeout=30)
            line = {
                "process": p,
                "pinned_cpu": pin,
                "cpus_seen": sorted(set(rows["cpu"])),
                **{k: _summary(rows[k]) for k in ("events", "queued", "host_us")},
                "events_ms": rows["events"],
                "queued_ms": rows["queued"],
            }
            out.write(json.dumps(line) + "\n")
            out.flush()
            print(
                f"process {p} pinned {pin} cpus {line['cpus_seen']}: events "
                f"{line['events']['median']:.4f} ({line['events']['p10']:.4f}–"
                f"{line['events']['p90']:.4f}) queued {line['queued']['median']:.4f} "
                f"({line['queued']['p10']:.4f}–{line['queued']['p90']:.4f}) host "
                f"{line['host_us']['median']:.1f} us",
                flush=True,
            )


if __name__ == "__main__":
    main()
