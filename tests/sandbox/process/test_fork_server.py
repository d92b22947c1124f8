"""Candidate processes fork from a server that already imported what their start needs."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from cuda_agent.sandbox.process.fork_server import PRELOAD

ROOT = Path(__file__).resolve().parents[3]

# A fresh interpreter imports the preload list, then runs torch's profiler object once, as a
# candidate process does at its start (child._start_profiler), and prints the modules that run
# imported.
_PROFILE_ONCE = """
import importlib, sys
for name in {preload!r}:
    importlib.import_module(name)
before = set(sys.modules)
import torch
from torch.profiler import ProfilerActivity, profile
with profile(activities=[ProfilerActivity.CPU]):
    torch.ones(1).add_(1)
print(sorted(set(sys.modules) - before))
"""


def _imported_by_first_profile(preload: tuple[str, ...]) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", _PROFILE_ONCE.format(preload=preload)],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    return ast.literal_eval(out.stdout.strip().splitlines()[-1])


def test_the_profilers_first_use_imports_nothing_the_server_did_not():
    assert _imported_by_first_profile(PRELOAD) == []


def test_without_the_preload_the_profilers_first_use_imports_torchs_compiler():
    # what the preload saves each candidate process: torch._dynamo and torch._inductor
    new = _imported_by_first_profile(("torch",))
    assert "torch._inductor" in new and "torch._dynamo" in new
