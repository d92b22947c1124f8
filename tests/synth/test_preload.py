"""Synthesis children fork from a server that imported transformers' shared modules once."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def loaded(name: str) -> bool:
    """Run in the isolated child: whether `name` was imported before the child ran anything."""
    return name in sys.modules


def _child_has(preload: tuple[str, ...]) -> str:
    # a fresh interpreter: the fork server starts there, with this preload list
    code = (
        "from cuda_agent.sandbox import run_isolated\n"
        "from tests.synth.test_preload import loaded\n"
        f"r = run_isolated(loaded, ('transformers.activations',), preload={preload!r},\n"
        "                 timeout_s=300)\n"
        "print(r.ok, r.value, r.error)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         timeout=600, check=True)  # fmt: skip
    return out.stdout.strip().splitlines()[-1]


def test_synthesis_children_inherit_transformers_from_the_fork_server():
    from cuda_agent.synth.batch import PRELOAD

    assert _child_has(PRELOAD) == "True True None"


def test_without_the_preload_a_child_starts_without_transformers():
    assert _child_has(()) == "True False None"
