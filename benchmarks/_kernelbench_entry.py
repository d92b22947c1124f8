"""Entering KernelBench's evaluation package from a checkout's `src` folder, past its __init__:
`kernelbench.utils` imports the LLM clients of its generation scripts, and none runs in
evaluation, so where they are not installed they are stood in for."""

from __future__ import annotations

import os
import sys
import types

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
