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

On the H200 (2026-12-03, 14:30 UTC) every variant but `queued` timed torch.compile's kernel at
0.30–0.31 ms, the loop's figure, while the Environment's verdicts said 0.45–0.49 ms. `--env`
then looks inside the Environment's process: its verdicts, its interleaved baselines without a
candidate, and plain `timed_call` loops over its own compiled reference (with and without
no_grad) and over a function compiled there, each beside the candidate processes it keeps;
the compiled reference after CPU work that evicts the host's caches, with and without an
untimed call (on another set) just before each timed one; and while a spare candidate process
starts (CUDA context, CUPTI) against while none does.

    python benchmarks/_probe_timing.py [--env] [--out FILE]
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
    parser.add_argument("--env", action="store_true", help="probe inside an Environment")
    args = parser.parse_args()
    if args.env:
        rows = env_variants()
        if args.out:
            args.out.write_text("".join(json.dumps(r) + "\n" for r in rows))
        return
    import torch

    from cuda_agent.sandbox.timing.call import L2Flusher, spin_up, timed_call

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


def env_variants() -> list[dict]:
    import torch

    from cuda_agent.sandbox import EnvConfig, Environment, Stage, read_solution
    from cuda_agent.sandbox.process.candidate import discard
    from cuda_agent.sandbox.timing.call import L2Flusher, timed_call
    from cuda_agent.sandbox.timing.profile import TimingJob, profile_candidate
    from cuda_agent.task import load_task

    repo = Path(__file__).resolve().parents[1]
    task = load_task("elementwise_chain")
    solution = read_solution(repo / "tests/sandbox/solutions/elementwise_chain")
    rows = []

    def emit(row):
        rows.append(row)
        print(json.dumps(row), flush=True)

    with Environment(EnvConfig()) as env:  # the machine's cache: its PCH, objects, audits
        ref, audit = env._trusted.reference(task), env.audit(task)
        draw = lambda: env._trusted.draw(ref, audit)  # noqa: E731
        for i in range(2):  # compiles the reference here first, so the verdicts re-time it
            r = profile_candidate(TimingJob(ref, draw, env.config, env._device))
            emit({"variant": "baselines_interleaved", "i": i, "eager": r.eager_ms,
                  "compile": r.compile_ms, "calls": r.timed_calls})  # fmt: skip
        for i in range(3):
            v = env.evaluate(task, solution, Stage.PROFILE)
            emit({"variant": "verdict", "i": i, "status": v.status.value, "eager": v.eager_ms,
                  "compile": v.compile_ms, "candidate": v.candidate_ms})  # fmt: skip
        device = env._device
        flush = L2Flusher(device)
        sets = [draw() for _ in range(SETS)]

        def chain(x):
            return torch.clamp(torch.nn.functional.gelu(x * 1.7 + 0.3), -0.5, 2.0)

        function = torch.compile(chain)
        fns = {
            "parent_run_compiled": ref.run_compiled,
            "parent_compiled_grad": ref.compiled,
            "parent_eager": ref,
            "parent_function": function,
        }
        with torch.no_grad():
            function(*sets[0])
        for name, fn in fns.items():
            for i in range(2):
                times = [timed_call(fn, sets[k % SETS], flush)[1].stream_ms for k in range(CALLS)]
                emit({"variant": name, "i": i, "median": round(statistics.median(times), 4),
                      "first3": [round(t, 4) for t in times[:3]]})  # fmt: skip
        # Between two interleaved calls the parent pickles, talks to the child and compares:
        # does a host path gone cold (CPU caches) slow a one-kernel call's launch, and does an
        # untimed call on another set just before the timed one warm it again?
        ballast = {str(k): list(range(64)) for k in range(300)}
        block = bytearray(16 << 20)

        def churn():  # a few ms: Python work, then a copy the size of a last-level cache
            json.loads(json.dumps(ballast))
            bytes(block)

        def after_churn(k):
            churn()
            return timed_call(ref.run_compiled, sets[k % SETS], flush)[1].stream_ms

        def prewarmed(k):
            churn()
            ref.run_compiled(*sets[(k + 1) % SETS])
            return timed_call(ref.run_compiled, sets[k % SETS], flush)[1].stream_ms

        for name, one in (("after_churn", after_churn), ("churn_then_prewarmed", prewarmed)):
            for i in range(2):
                times = [one(k) for k in range(CALLS)]
                emit({"variant": name, "i": i, "median": round(statistics.median(times), 4)})
        # A spare candidate process starts (CUDA context, CUPTI) outside the GPU lock, and in
        # back-to-back rounds one is always starting while a round times: does it slow a call?
        spare = env._spare
        for future in list(spare._ready):
            future.result()
        quiet = [timed_call(ref.run_compiled, sets[k % SETS], flush)[1].stream_ms
                 for k in range(4 * CALLS)]  # fmt: skip
        discard(spare.take())
        spare.prepare()
        starting, k = [], 0
        while not all(f.done() for f in spare._ready) and k < 20000:
            starting.append(timed_call(ref.run_compiled, sets[k % SETS], flush)[1].stream_ms)
            k += 1
        for name, times in (("spare_idle", quiet), ("spare_starting", starting)):
            if len(times) < 10:
                emit({"variant": name, "calls": len(times), "times": times})
                continue
            q = [round(x, 4) for x in statistics.quantiles(times, n=10)]
            emit({"variant": name, "calls": len(times), "p10": q[0], "median": q[4],
                  "p90": q[-1], "max": round(max(times), 4)})  # fmt: skip
    return rows


if __name__ == "__main__":
    main()
