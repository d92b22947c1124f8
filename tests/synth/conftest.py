"""Shared fixtures: one mined catalog and one small CPU synthesis run for the whole session.

The run goes through every stage (CPU runtime window) and the invariant tests read its output, so
the expensive parts (mining, tracing KernelBench, torch.compile) are paid once.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cuda_agent.synth import Pipeline, SynthConfig, load_catalog
from tests.conftest import FIXTURE_KERNELBENCH_JSONL

E2E_TASKS = 6
E2E_SEED = 7


@pytest.fixture(scope="session")
def synth_cache(tmp_path_factory) -> Path:
    shared = os.environ.get("CUDA_AGENT_TEST_CACHE")
    return Path(shared) / "synth" if shared else tmp_path_factory.mktemp("synth-cache")


@pytest.fixture(scope="session")
def catalog(synth_cache):
    return load_catalog(synth_cache, workers=3)  # torch's candidates mined in two children


@pytest.fixture(scope="session")
def e2e_config(synth_cache, tmp_path_factory) -> SynthConfig:
    return SynthConfig(
        n=E2E_TASKS,
        out=tmp_path_factory.mktemp("synth-run"),
        device="cpu",
        workers=2,
        seed=E2E_SEED,
        kernelbench=FIXTURE_KERNELBENCH_JSONL,
        cache_dir=synth_cache,
    )


@pytest.fixture(scope="session")
def e2e(e2e_config, catalog):
    return Pipeline(e2e_config).run()
