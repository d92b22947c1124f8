"""Our KernelBench baselines beside a table of baselines measured independently.

    python benchmarks/baselines_vs_shared.py --baselines kernelbench_baselines.jsonl \
        --readme TABLE.md

Reads the JSONL that `cuda-agent baselines` writes and the markdown table in TABLE.md (rows like
`| L1 40 LayerNorm | 8.06 | 0.378 | 8.3 |`: problem, eager ms, torch.compile ms, first compiled
call s), and prints a markdown table of the problems in both: eager and torch.compile medians
from each, and ours over theirs. Without --readme the table is looked for at
kernelbench/README.md under $CUDA_AGENT_SHARED or shared/ in the checkout.
"""

from __future__ import annotations

import argparse
import json
import os
import re
from pathlib import Path

ROW = re.compile(r"^\|\s*L(\d)\s+(\d+)\s+([^|]*?)\s*\|\s*([\d.]+)\s*\|\s*([\d.]+)\s*\|\s*([\d.]+)")


def shared_table(readme: Path) -> dict[tuple[int, int], dict]:
    rows = {}
    for line in readme.read_text().splitlines():
        m = ROW.match(line)
        if m:
            level, pid, name, eager, compiled, first = m.groups()
            rows[(int(level), int(pid))] = {
                "name": name,
                "eager_ms": float(eager),
                "compile_ms": float(compiled),
                "compile_first_call_s": float(first),
            }
    return rows


def ours(baselines: Path) -> dict[tuple[int, int], dict]:
    found = {}
    for line in baselines.read_text().splitlines():
        if line.strip():
            r = json.loads(line)
            if r.get("level") is not None and r.get("problem_id") is not None:
                found[(r["level"], r["problem_id"])] = r
    return found


def table(theirs: dict, mine: dict) -> str:
    lines = [
        "| problem | eager (shared) | eager (ours) | ratio | compile (shared) | compile (ours) "
        "| ratio | first call s (shared / ours) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for key in sorted(theirs):
        if key not in mine:
            continue
        t, o = theirs[key], mine[key]
        lines.append(
            f"| L{key[0]} {key[1]} {t['name']} | {t['eager_ms']:.3f} | {o['eager_ms']:.3f} | "
            f"{o['eager_ms'] / t['eager_ms']:.3f} | {t['compile_ms']:.3f} | "
            f"{o['compile_ms']:.3f} | {o['compile_ms'] / t['compile_ms']:.3f} | "
            f"{t['compile_first_call_s']:.1f} / {o['compile_first_call_s']:.1f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baselines", type=Path, required=True)
    shared = Path(os.environ.get("CUDA_AGENT_SHARED") or Path(__file__).parents[1] / "shared")
    parser.add_argument("--readme", type=Path, default=shared / "kernelbench" / "README.md")
    args = parser.parse_args()
    print(table(shared_table(args.readme), ours(args.baselines)))


if __name__ == "__main__":
    main()
