"""A stage's per-step metrics across its attempts.

veRL's file logger writes one JSON line per training step (`{"step": N, "data": {...}}`) to the
file VERL_FILE_LOGGER_PATH names, and opens it for writing, not appending. A stage that was cut
and is run again resumes from its last checkpoint, so the second attempt's file would hold only
the steps after that checkpoint and the first attempt's steps would be lost. Before each attempt
the previous attempt's file therefore moves to STAGE.attempt-K.jsonl, and `stage_steps` reads them
all back as one run of steps.
"""

from __future__ import annotations

import json
from pathlib import Path


def metrics_file(metrics_dir: Path, stage: str) -> Path:
    """The file the stage's current attempt writes."""
    return metrics_dir / f"{stage}.jsonl"


def earlier_attempts(metrics_dir: Path, stage: str) -> list[Path]:
    files = metrics_dir.glob(f"{stage}.attempt-*.jsonl")
    return sorted(files, key=lambda f: int(f.name.rsplit("-", 1)[1].split(".")[0]))


def keep_earlier_attempt(metrics_dir: Path, stage: str) -> Path | None:
    """Move the last attempt's metrics aside (if it logged any); returns where they went."""
    current = metrics_file(metrics_dir, stage)
    if not current.is_file() or current.stat().st_size == 0:
        return None
    kept = metrics_dir / f"{stage}.attempt-{len(earlier_attempts(metrics_dir, stage)) + 1}.jsonl"
    current.rename(kept)
    return kept


def stage_steps(metrics_dir: Path, stage: str) -> list[dict]:
    """Each step's metrics, in step order, over every attempt. A step logged by two attempts (the
    steps after the last checkpoint of a cut attempt run again) keeps the later attempt's figures,
    the ones the stage's checkpoints and merged model came from."""
    by_step: dict[int, dict] = {}
    current = metrics_file(metrics_dir, stage)
    for path in [*earlier_attempts(metrics_dir, stage), current]:
        if not path.is_file():
            continue
        for line in path.read_text().splitlines():
            if line.strip():
                entry = json.loads(line)
                by_step[int(entry["step"])] = entry["data"]
    return [by_step[step] for step in sorted(by_step)]
