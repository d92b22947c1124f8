"""One JSON line per test of a pytest junit file, with the GPU, date, commit and tree it ran at.

    python3 scripts/junit_records.py JUNIT.xml > gpu_tests.jsonl

The GPU comes from `nvidia-smi` where it exists (else null), the commit and tree from
CUDA_AGENT_COMMIT and CUDA_AGENT_TREE (scripts/gpu_suite.sh sets both).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from datetime import UTC, datetime

_OUTCOMES = ("failure", "error", "skipped")


def gpu_name() -> str | None:
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return None
    return out.splitlines()[0].strip() if out.strip() else None


def records(junit: str) -> list[dict]:
    facts = {
        "gpu": gpu_name(),
        "date": datetime.now(UTC).date().isoformat(),
        "commit": os.environ.get("CUDA_AGENT_COMMIT", "unknown"),
        "tree": os.environ.get("CUDA_AGENT_TREE", "unknown"),
    }
    rows = []
    for case in ET.parse(junit).getroot().iter("testcase"):
        path = (case.get("classname") or "").replace(".", "/")
        found = [tag for tag in _OUTCOMES if case.find(tag) is not None]
        outcome = {"failure": "failed", "error": "error", "skipped": "skipped"}.get(
            found[0] if found else "", "passed"
        )
        rows.append(
            {
                **facts,
                "test": f"{path}.py::{case.get('name')}",
                "outcome": outcome,
                "seconds": round(float(case.get("time") or 0.0), 1),
            }
        )
    return rows


def main() -> int:
    if len(sys.argv) != 2:
        sys.exit("usage: python3 scripts/junit_records.py JUNIT.xml")
    try:
        rows = records(sys.argv[1])
    except (OSError, ET.ParseError) as err:
        sys.exit(f"error: {sys.argv[1]}: {err}")
    for row in rows:
        print(json.dumps(row))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
