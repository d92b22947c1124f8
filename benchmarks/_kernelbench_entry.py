"""Entering KernelBench's evaluation package from a checkout's `src` folder, past its __init__:
`kernelbench.utils` imports the LLM clients of its generation scripts, and none runs in
evaluation, so where they are not installed they are stood in for."""

from __future__ import annotations

import os
import sys
import types
from pathlib import Path

_STAND_INS = {
    "dotenv": {"load_dotenv": lambda *a, **k: None},
    "litellm": {"completion": None},
    "openai": {"OpenAI": None},
}


def enter_kernelbench(src: str) -> None:
    for name, attrs in _STAND_INS.items():
        try:
            __import__(name)
        except ImportError:
            sys.modules[name] = types.ModuleType(name)
            for attr, value in attrs.items():
                setattr(sys.modules[name], attr, value)
    package = types.ModuleType("kernelbench")
    package.__path__ = [os.path.join(src, "kernelbench")]
    sys.modules["kernelbench"] = package


def kernelbench_src(given: Path) -> Path:
    """The `src` folder of the KernelBench checkout `given` (or `given`, where it is that
    folder); exits with one line where there is none."""
    for candidate in (given / "src", given):
        if (candidate / "kernelbench" / "eval.py").is_file():
            return candidate
    sys.exit(f"error: --kernelbench {given}: no src/kernelbench/eval.py there; give a checkout")
