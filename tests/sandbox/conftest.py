"""Build fixtures shared by the whole session: one toolchain, one cache with its precompiled
torch header (built once, ~1-2 min on a 2-core box), so no test pays for it twice."""

from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path

import pytest

from cuda_agent.sandbox.build.pch import ensure_pch
from cuda_agent.sandbox.build.toolchain import Toolchain, find_toolchain


def guard_case_solution(folder: Path) -> Path:
    """The solution folder a guard case (cheats/ or honest/) evaluates: its own, or the sibling
    its expect.json names as `solution` (the same files under other Environment settings)."""
    expect = json.loads((folder / "expect.json").read_text())
    return folder.parent / expect.get("solution", folder.name)


@pytest.fixture(scope="session")
def toolchain() -> Toolchain:
    return find_toolchain()


@pytest.fixture(scope="session")
def build_cache(tmp_path_factory, toolchain):
    cache = tmp_path_factory.mktemp("build-cache")
    assert ensure_pch(toolchain, cache) is not None, "the precompiled torch header did not build"
    return cache


@pytest.fixture()
def recorded_gpu_lock(monkeypatch) -> list[str]:
    """The Environment's GPU lock (its trusted side's and the retry policy's) replaced by one
    that records the modes held, innermost last (empty again once every section is left)."""
    from cuda_agent.sandbox import retry, trusted

    held: list[str] = []

    @contextmanager
    def lock(device, exclusive):
        held.append("exclusive" if exclusive else "shared")
        yield 0.0
        held.pop()

    for module in (trusted, retry):
        monkeypatch.setattr(module, "gpu_lock", lock)
    return held
