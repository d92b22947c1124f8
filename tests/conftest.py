"""Shared test helpers: where the KernelBench problems are, the gpu marker's skip, and the
large_gpu_memory marker's one worker."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# Small KernelBench-format problems of the project's own: a checkout layout and the same as JSONL
FIXTURE_KERNELBENCH = REPO / "tests" / "fixtures" / "kernelbench"
FIXTURE_KERNELBENCH_JSONL = FIXTURE_KERNELBENCH / "problems.jsonl"
NO_KERNELBENCH = (
    "needs KernelBench's problems: set CUDA_AGENT_KERNELBENCH to a KernelBench checkout or its "
    "JSONL (level, problem_id, name, code)"
)
_DATA_FILE = Path("kernelbench") / "kernelbench_l1-l3.jsonl"


def real_kernelbench() -> Path | None:
    """KernelBench's real problems: $CUDA_AGENT_KERNELBENCH, else the project's optional data folder
    (`shared/`, inside the checkout, beside it, or at $CUDA_AGENT_SHARED); None when absent."""
    given = os.environ.get("CUDA_AGENT_KERNELBENCH")
    if given:
        return Path(given) if Path(given).exists() else None
    folders = [REPO / "shared", REPO.parent / "shared"]
    if os.environ.get("CUDA_AGENT_SHARED"):
        folders.insert(0, Path(os.environ["CUDA_AGENT_SHARED"]))
    return next((f / _DATA_FILE for f in folders if (f / _DATA_FILE).is_file()), None)


def kernelbench_or_skip() -> Path:
    """`real_kernelbench()`, or skip the calling test saying how to provide the problems."""
    path = real_kernelbench()
    if path is None:
        pytest.skip(NO_KERNELBENCH)
    return path


def _has_gpu() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except Exception:
        return False


def pytest_collection_modifyitems(config, items):
    if _has_gpu():
        # one worker takes every test that holds tens of GiB, in turn: side by side on an
        # 80 GB card they ran the harness out of GPU memory (docs/benchmarks.md)
        if config.pluginmanager.hasplugin("xdist"):
            for item in items:
                if item.get_closest_marker("large_gpu_memory"):
                    item.add_marker(pytest.mark.xdist_group("large_gpu_memory"))
        return
    skip = pytest.mark.skip(
        reason="needs a CUDA GPU (run through scripts/gpu_suite.sh on the H200)"
    )
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
