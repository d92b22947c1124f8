"""The Task: one KernelBench-format reference program and where it came from."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Literal

SourceKind = Literal["builtin", "file", "kernelbench", "dataset"]


@dataclass(frozen=True)
class TaskSource:
    """Where a task was read from: a file, a KernelBench level/problem, or a dataset row."""

    kind: SourceKind
    path: str
    level: int | None = None
    problem_id: int | None = None
    row: int | None = None
    data_source: str | None = None

    def describe(self) -> str:
        if self.kind == "kernelbench" and self.level is not None:
            return f"kernelbench L{self.level} #{self.problem_id}"
        if self.kind == "dataset":
            origin = f" ({self.data_source})" if self.data_source else ""
            return f"{_short(self.path)} row {self.row}{origin}"
        return f"{self.kind} {_short(self.path)}" if self.kind != "builtin" else "builtin"


@dataclass(frozen=True)
class Task:
    """A reference program: `class Model(nn.Module)`, `get_inputs()`, `get_init_inputs()`.

    `hash` identifies the program by content, so caches (baselines, built objects, input
    distributions) and datasets key on what the code is, not on what it is called.
    """

    name: str
    code: str
    source: TaskSource
    ops: tuple[str, ...] = field(default=())

    @property
    def hash(self) -> str:
        return content_hash(self.code)

    @property
    def level(self) -> int | None:
        return self.source.level

    def to_record(self) -> dict:
        """A JSON-ready dict (what `cuda-agent tasks --json` prints and datasets store)."""
        src = self.source
        return {
            "name": self.name,
            "hash": self.hash,
            "ops": list(self.ops),
            "source": src.describe(),
            "kind": src.kind,
            "path": src.path,
            "level": src.level,
            "problem_id": src.problem_id,
            "row": src.row,
            "data_source": src.data_source,
            "code": self.code,
        }

    @classmethod
    def from_record(cls, rec: dict) -> Task:
        source = TaskSource(
            kind=rec.get("kind", "dataset"),
            path=rec.get("path", ""),
            level=rec.get("level"),
            problem_id=rec.get("problem_id"),
            row=rec.get("row"),
            data_source=rec.get("data_source"),
        )
        return cls(
            name=rec["name"], code=rec["code"], source=source, ops=tuple(rec.get("ops") or ())
        )


def content_hash(code: str) -> str:
    """First 16 hex digits of the SHA-256 of the program text."""
    return hashlib.sha256(code.encode()).hexdigest()[:16]


def _short(path: str, keep: int = 48) -> str:
    return path if len(path) <= keep else "…" + path[-(keep - 1) :]
