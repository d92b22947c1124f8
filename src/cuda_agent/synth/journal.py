"""One JSON line per candidate per stage, flushed as it is written: what makes a run resumable.

A rerun reads the journals back and skips every (candidate, stage) already there; a killed run
loses at most the candidates in flight, and a half-written last line is ignored.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

STAGES = ("compose", "eager", "labels", "dedup", "decontam", "compile")


class Journal:
    def __init__(self, path: Path):
        self.path = path
        self._lock = threading.Lock()
        self.records: dict[int, dict] = {}
        if path.is_file():
            for line in path.read_text().splitlines():
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if isinstance(rec, dict) and isinstance(rec.get("id"), int):
                    self.records[rec["id"]] = rec

    def __contains__(self, cid: int) -> bool:
        return cid in self.records

    def get(self, cid: int) -> dict | None:
        return self.records.get(cid)

    def ok_ids(self) -> list[int]:
        return sorted(i for i, r in self.records.items() if r.get("ok"))

    def append(self, record: dict) -> None:
        """Add `record` (stamped with the wall-clock time, `at`) and flush it to disk."""
        record = {**record, "at": round(time.time(), 3)}
        line = json.dumps(record, sort_keys=True)
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a") as fh:
                fh.write(line + "\n")
                fh.flush()
            self.records[record["id"]] = record


def open_journals(out: Path) -> dict[str, Journal]:
    return {stage: Journal(out / "journal" / f"{stage}.jsonl") for stage in STAGES}
