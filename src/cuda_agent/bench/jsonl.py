"""An append-only JSONL file for long jobs: one flushed line per finished item, torn tails dropped.

A killed run can leave half a line at the end; reading ignores it and the next append cuts it
off first, so a rerun loses at most the item that was in flight.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from cuda_agent.errors import UserError


class JsonlLog:
    """Records appended one line at a time (flushed and fsynced), read back in order."""

    def __init__(self, path: str | Path):
        self.path = Path(path)

    def read(self) -> list[dict]:
        """Every complete record; a last line without its newline (a torn write) is ignored."""
        if not self.path.is_file():
            return []
        text = self.path.read_text()
        lines = text.split("\n")
        complete = lines[:-1]  # the part after the last newline is empty or torn
        records = []
        for lineno, line in enumerate(complete, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as err:
                raise UserError(
                    f"{self.path}:{lineno}: not valid JSON ({err.msg}); the file is damaged: "
                    "delete that line to rerun the item"
                ) from None
            if not isinstance(record, dict):
                raise UserError(f"{self.path}:{lineno}: expected a JSON object")
            records.append(record)
        return records

    def append(self, record: dict) -> None:
        """Write one record as one line, flushed to disk before returning."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._drop_torn_tail()
        line = json.dumps(record, sort_keys=True) + "\n"
        with self.path.open("a") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())

    def _drop_torn_tail(self) -> None:
        """Cut a last line that has no newline (looks at one byte unless there is one)."""
        if not self.path.is_file() or self.path.stat().st_size == 0:
            return
        with self.path.open("r+b") as fh:
            fh.seek(-1, os.SEEK_END)
            if fh.read(1) == b"\n":
                return
            fh.seek(0)
            fh.truncate(fh.read().rfind(b"\n") + 1)
