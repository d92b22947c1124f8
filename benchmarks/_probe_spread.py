"""Why do speed-ups move 3–8 % from one round to the next? (probe)

On the H200 (2026-12-03) four rounds of elementwise_chain gave speed-ups over eager of 3.33,
3.51, 3.61 and 3.57 (target: a spread of at most 2 %), each from 12 timed calls per side. This
runs real Environment rounds and keeps every timed call of every side (the order of the turn, the
input set, the three clocks), so the causes can be told apart afterwards: too few calls, the
input set (its memory, its content), a drift over the round, or noise of one side only. Variants:

- default: the configuration as shipped (as many fresh sets as fit in `timing_memory_gb`)
- more_sets: room for 30 fresh sets (`timing_memory_gb` 80)
- repeated: 30 calls over the sets that fit in 24 GB (each set timed two or three times)

On the H200 (2026-12-03, docs/data/probe_spread_h200_2026-12-03.jsonl) 30 calls per round
spread no less than 12 (elementwise_chain 10.2 % against 4.7 %): a round's calls move together,
in stretches, so more of them do not help; `_probe_launch.py` finds why. Each call now also
keeps the GPU's span of its work (its seventh field): over six rounds (2026-12-03,
docs/data/probe_spread_gpu_span_h200_2026-12-03.jsonl) speed-ups from the spans moved 0.5 % vs
eager and 1.0 % vs torch.compile for elementwise_chain, 0.4 % and 0.5 % for scaled_softmax.

    python benchmarks/_probe_spread.py --out FILE.jsonl [--rounds 4]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

REPO = Path(__file__).resolve().parents[1]
CASES = {
    "elementwise_chain": "tests/sandbox/solutions/elementwise_chain",
    "scaled_softmax": "tests/fixtures/solutions/scaled_softmax",
}


def _recording(original, calls: list):
    """profile._interleaved, keeping each call's side, turn, set and clocks."""

    def interleaved(sides: dict, n: int, distinct: int, refill):
        for name, side in sides.items():
            inner = side.call

            def call(i, index, warm, total, fresh=None, _inner=inner, _name=name, _side=side):
                failure = _inner(i, index, warm, total, fresh)
                t = _side.times[-1]
                calls.append([_name, i, index, t.stream_ms, t.wide_ms, t.host_ms, t.gpu_ms])
                return failure

            side.call = call
        try:
            return original(sides, n, distinct, refill)
        finally:  # each side and its wrapper hold each other: a cycle that would keep the sets
            for side in sides.values():
                del side.call

    return interleaved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--variants", default="default,more_sets,repeated")
    args = parser.parse_args()
    import torch

    from cuda_agent.sandbox import EnvConfig, Environment, Stage, read_solution
    from cuda_agent.sandbox.timing import profile as profile_module
    from cuda_agent.task import load_task

    calls: list = []
    profile_module.interleaved = _recording(profile_module.interleaved, calls)
    base = EnvConfig(cache_dir=Path(tempfile.mkdtemp(prefix="probe-spread-")))
    variants = {
        "default": base,
        "more_sets": replace(base, timing_memory_gb=80.0),
        "repeated": replace(base, min_timed_calls=30),
    }
    chosen = args.variants.split(",")
    with args.out.open("w") as out:
        for variant, config in ((k, v) for k, v in variants.items() if k in chosen):
            with Environment(config) as env:
                for name, rel in CASES.items():
                    task, solution = load_task(name), read_solution(REPO / rel)
                    env.evaluate(task, solution, Stage.PROFILE)  # baselines, caches, spares
                    for r in range(args.rounds):
                        calls.clear()
                        began = time.perf_counter()
                        v = env.evaluate(task, solution, Stage.PROFILE)
                        row = {
                            "variant": variant,
                            "task": name,
                            "round": r,
                            "status": v.status.value,
                            "eager_ms": v.eager_ms,
                            "compile_ms": v.compile_ms,
                            "candidate_ms": v.candidate_ms,
                            "speedup_vs_eager": v.speedup_vs_eager,
                            "speedup_vs_compile": v.speedup_vs_compile,
                            "message": v.message,
                            "gpu": torch.cuda.get_device_name(),
                            "calls": list(calls),
                            "round_s": time.perf_counter() - began,
                            "seconds": v.seconds,
                        }
                        out.write(json.dumps(row) + "\n")
                        out.flush()
                        print(
                            f"{variant} {name} round {r}: {v.status.value} eager {v.eager_ms} "
                            f"compile {v.compile_ms} candidate {v.candidate_ms} "
                            f"({len(calls)} calls)",
                            flush=True,
                        )


if __name__ == "__main__":
    main()
