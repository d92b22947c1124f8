"""Deduplication: by normalized source and by operator signature (operators in order, with shapes).

Candidates are checked in id order and the first of a group is kept, so the outcome does not
depend on the order in which parallel workers finished.
"""

from __future__ import annotations

import ast
import hashlib
import json
from dataclasses import dataclass, field


def normalized_source(code: str) -> str:
    """The program with comments, docstrings and formatting removed."""
    tree = ast.parse(code)
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                if isinstance(body[0].value.value, str):
                    node.body = body[1:] or [ast.Pass()]
    return ast.unparse(tree)


def digest(value) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def source_key(code: str) -> str:
    return digest(normalized_source(code))


def signature_key(signature: list) -> str:
    return digest(signature)


@dataclass
class Deduper:
    """Keys of the candidates kept so far; `check` keeps a new one or names what it repeats."""

    sources: dict[str, int] = field(default_factory=dict)
    signatures: dict[str, int] = field(default_factory=dict)

    def check(self, cid: int, code: str, signature: list) -> dict:
        src, sig = source_key(code), signature_key(signature)
        record = {"id": cid, "source_key": src, "signature_key": sig}
        if src in self.sources:
            return {**record, "ok": False, "reason": "duplicate source",
                    "duplicate_of": self.sources[src]}  # fmt: skip
        if sig in self.signatures:
            return {**record, "ok": False, "reason": "duplicate signature",
                    "duplicate_of": self.signatures[sig]}  # fmt: skip
        self.remember(record)
        return {**record, "ok": True, "reason": None}

    def remember(self, record: dict) -> None:
        """Take in a kept record (also when a rerun reads the journal back)."""
        self.sources.setdefault(record["source_key"], record["id"])
        self.signatures.setdefault(record["signature_key"], record["id"])
