"""Build fixtures shared by the whole session: one toolchain, one cache with its precompiled
torch header (built once, ~1-2 min on a 2-core box), so no test pays for it twice."""

from __future__ import annotations

import pytest

from cuda_agent.sandbox.build import ensure_pch
from cuda_agent.sandbox.toolchain import Toolchain, find_toolchain


@pytest.fixture(scope="session")
def toolchain() -> Toolchain:
    return find_toolchain()


@pytest.fixture(scope="session")
def build_cache(tmp_path_factory, toolchain):
    cache = tmp_path_factory.mktemp("build-cache")
    assert ensure_pch(toolchain, cache) is not None, "the precompiled torch header did not build"
    return cache
