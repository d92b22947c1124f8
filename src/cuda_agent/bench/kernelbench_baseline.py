"""KernelBench's baseline timings, from which its analysis computes speed-ups.

KernelBench's `eval_results.json` records each kernel's runtime but not its reference's; its
`scripts/benchmark_eval_analysis.py` divides the reference's mean time, read from a baseline
file that `scripts/generate_baseline_time.py` writes (`results/timing/<hardware>/
baseline_time_torch.json`, or a torch.compile variant), by the kernel's runtime. The file's
shape: {"level1": {"19_ReLU.py": {"mean": 4.72, "hardware": "NVIDIA H100 80GB HBM3", ...}}},
times in milliseconds, problems named by their file, whose name starts with the problem id.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from pathlib import Path

from cuda_agent.bench.kernelbench_results import TheirResult
from cuda_agent.errors import UserError

SHAPE = (
    'expected KernelBench\'s baseline timing JSON: {"level1": {"19_ReLU.py": {"mean": ms}}} '
    "(results/timing/HARDWARE/baseline_time_torch.json)"
)
_LEVEL = re.compile(r"level(\d+)")
_PROBLEM = re.compile(r"(\d+)_.*\.py")


@dataclass(frozen=True)
class TheirBaseline:
    """Reference mean times by (level, problem id), in milliseconds."""

    means: dict[tuple[int, int], float]
    hardware: tuple[str, ...]
    source: str


def read_their_baseline(path: str | Path) -> TheirBaseline:
    path = Path(path)
    if not path.is_file():
        raise UserError(f"--kernelbench-baseline {path}: no such file")
    try:
        data = json.loads(path.read_text(errors="replace"))
    except json.JSONDecodeError as err:
        raise UserError(f"{path}: not valid JSON ({err.msg} at line {err.lineno})") from None
    if not isinstance(data, dict):
        raise UserError(f"{path}: {SHAPE}")
    means, hardware = {}, set()
    for level_key, problems in data.items():
        level = _LEVEL.fullmatch(str(level_key))
        if level is None or not isinstance(problems, dict):
            raise UserError(f"{path}: key {level_key!r} is not a level; {SHAPE}")
        for name, entry in problems.items():
            problem = _PROBLEM.fullmatch(str(name))
            mean = entry.get("mean") if isinstance(entry, dict) else None
            if problem is None or isinstance(mean, bool) or not isinstance(mean, int | float):
                raise UserError(f"{path}: {level_key} {name!r} has no mean time; {SHAPE}")
            if mean > 0:
                means[int(level[1]), int(problem[1])] = float(mean)
            if entry.get("hardware"):
                hardware.add(str(entry["hardware"]))
    if not means:
        raise UserError(f"{path}: holds no timings; {SHAPE}")
    return TheirBaseline(means, tuple(sorted(hardware)), str(path))


def with_their_speedups(theirs: list[TheirResult], baseline: TheirBaseline) -> list[TheirResult]:
    """Each correct result that has a runtime but no speed-up of its own gets the baseline's
    mean over its runtime, as KernelBench's analysis computes it; a speed-up their file gives
    (measured beside the kernel in their run) is kept."""
    out = []
    for t in theirs:
        mean = baseline.means.get((t.level, t.problem_id))
        if t.speedup is None and t.correct and t.runtime and mean is not None:
            t = replace(t, speedup=mean / t.runtime)
        out.append(t)
    return out
