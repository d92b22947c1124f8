"""Shared test helpers: where ../shared lives, and the gpu marker's skip."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(
    os.environ.get("CUDA_AGENT_SHARED")
    or (REPO / "shared" if (REPO / "shared" / "kernelbench").is_dir() else REPO.parent / "shared")
)
KERNELBENCH_JSONL = SHARED / "kernelbench" / "kernelbench_l1-l3.jsonl"


def _has_gpu() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except Exception:
        return False


def pytest_collection_modifyitems(config, items):
    if _has_gpu():
        return
    skip = pytest.mark.skip(
        reason="needs a CUDA GPU (run through scripts/gpu_suite.sh on the H200)"
    )
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
