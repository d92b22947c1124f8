"""Eager and torch.compile timings, cached once per (task, GPU, torch version) on disk."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel


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

    @staticmethod
    def now() -> str:
        return datetime.now(UTC).isoformat(timespec="seconds")


def baseline_path(cache_dir: Path, task_hash: str, gpu: str, torch_version: str) -> Path:
    slug = re.sub(r"[^A-Za-z0-9.]+", "-", f"{gpu}-{torch_version}").strip("-")
    return cache_dir / "baselines" / f"{task_hash}-{slug}.json"


def load_baseline(path: Path) -> BaselineRecord | None:
    try:
        return BaselineRecord.model_validate(json.loads(path.read_text()))
    except (OSError, ValueError):
        return None


def save_json(path: Path, model: BaseModel) -> None:
    """Write atomically, so a killed run never leaves half a cache file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{id(model)}")
    tmp.write_text(model.model_dump_json(indent=1))
    tmp.replace(path)
