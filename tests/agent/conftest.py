"""Fixtures of the agent tests: a scripted model server, a real Environment, workspaces."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cuda_agent.agent import ModelConfig, Workbench, new_workspace
from cuda_agent.sandbox import EnvConfig, Environment, Stage, read_solution
from cuda_agent.task import load_task

from .scripted import ScriptedServer

CHAIN = Path(__file__).parent / "solutions" / "elementwise_chain"


@pytest.fixture
def serve():
    """serve(script) -> a running ScriptedServer, shut down after the test."""
    servers: list[ScriptedServer] = []

    def start(script: list) -> ScriptedServer:
        servers.append(ScriptedServer(script))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def model_config(server: ScriptedServer, **overrides) -> ModelConfig:
    """Fast retries so transient-error tests take milliseconds."""
    values = {
        "model": "scripted",
        "base_url": server.url,
        "backoff_s": 0.01,
        "max_backoff_s": 0.05,
        "max_retries": 3,
        "timeout_s": 30.0,
    }
    return ModelConfig(**{**values, **overrides})


@pytest.fixture(scope="session")
def environment(tmp_path_factory):
    """One for the session; CUDA_AGENT_TEST_CACHE shares its builds with other test packages."""
    cache = Path(os.environ.get("CUDA_AGENT_TEST_CACHE") or tmp_path_factory.mktemp("env-cache"))
    # a generous build limit: torch's headers take minutes on a small, busy CI machine
    with Environment(EnvConfig(cache_dir=cache, build_timeout_s=1800)) as env:
        yield env


@pytest.fixture(scope="session")
def chain_files(environment) -> dict[str, str]:
    """The files of a correct elementwise_chain solution, built once here so that the episodes
    writing them find their objects in the build cache."""
    solution = read_solution(CHAIN)
    verdict = environment.evaluate(load_task("elementwise_chain"), solution, Stage.COMPILE)
    assert verdict.compiled, verdict.message
    return dict(solution.files)


@pytest.fixture
def task():
    return load_task("elementwise_chain")


@pytest.fixture
def bench(task, tmp_path, environment):
    """A workbench on a fresh workspace."""
    return Workbench(task, new_workspace(task, tmp_path / "ws"), environment, bash_timeout_s=20)
