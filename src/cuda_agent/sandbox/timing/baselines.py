"""Eager and torch.compile timings, cached once per (task, GPU, torch version) on disk.

A record carries the version of the timing method that produced it; one from another version
is not reused (it is timed again), so a change of method never mixes with cached figures.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, Field


class BaselineRecord(BaseModel):
    task: str
    task_hash: str
    gpu: str
    torch_version: str
    distribution: str
    eager_ms: float
    eager_spread: float
    compile_ms: float
    compile_spread: float
    compile_first_call_s: float
    timed_calls: int
    date: str
    # the timing thread's involuntary context switches during the timed calls: a loaded host
    # (None: timed before this was recorded)
    host_preemptions: int | None = None
    # TIMING_METHOD when timed (None: before methods were versioned)
    timing_method: int | None = None
    module_mode: str = "train"  # the reference's mode when timed (module_mode.py)
    # the reference's calls' median wait for the device (cross_check.device_wait_ms); above
    # CONTESTED_WAIT_MS other work shared the GPU, and the record is not cached
    device_wait_ms: float | None = None
    # the method eager_ms and compile_ms are by (method.py), and every method's medians
    timing: str = "span"
    eager_by_method: dict[str, float] = Field(default_factory=dict)
    compile_by_method: dict[str, float] = Field(default_factory=dict)
    eager_launch_ms: float | None = None  # eager's host time to issue a call (median)
    launch_bound: bool = False  # that time is well above eager's GPU busy time

    def for_method(self, method: str) -> BaselineRecord:
        """The record with eager_ms and compile_ms by `method` (spreads are the method's the
        record was timed by: the spread of a side's calls moves little between methods)."""
        if method == self.timing or method not in self.compile_by_method:
            return self
        return self.model_copy(
            update={
                "timing": method,
                "eager_ms": self.eager_by_method[method],
                "compile_ms": self.compile_by_method[method],
            }
        )

    @staticmethod
    def now() -> str:
        return datetime.now(UTC).isoformat(timespec="seconds")


class CompileCost(BaseModel):
    """torch.compile's first call of a task's reference, measured without warm caches."""

    seconds: float


def baseline_path(cache_dir: Path, task_hash: str, gpu: str, torch_version: str) -> Path:
    slug = re.sub(r"[^A-Za-z0-9.]+", "-", f"{gpu}-{torch_version}").strip("-")
    return cache_dir / "baselines" / f"{task_hash}-{slug}.json"


# 2: every timed call but the first behind an untimed call of its side (see interleave.py)
# 3: a call is charged the GPU's span of its work from the GPU trace (see call.py)
# 4: the L2 flush is not waited for before the call; every method's figures are recorded
TIMING_METHOD = 4


def load_baseline(path: Path) -> BaselineRecord | None:
    """The cached record, or None when missing, unreadable or timed by another method."""
    try:
        record = BaselineRecord.model_validate(json.loads(path.read_text()))
    except (OSError, ValueError):
        return None
    return record if record.timing_method == TIMING_METHOD else None


def save_json(path: Path, model: BaseModel) -> None:
    """Write atomically, so a killed run never leaves half a cache file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{id(model)}")
    tmp.write_text(model.model_dump_json(indent=1))
    tmp.replace(path)
