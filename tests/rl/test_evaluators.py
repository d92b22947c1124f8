"""Evaluator factories named in configs: resolved by name, opened and released per episode."""

from __future__ import annotations

import pytest

from cuda_agent.errors import UserError
from cuda_agent.rl import EvaluatorSpec, open_evaluator
from cuda_agent.rl.evaluators import local_environment
from cuda_agent.sandbox import Environment

EVENTS: list[str] = []


class Managed:
    def evaluate(self, task, solution, stage):
        return None

    def __enter__(self):
        EVENTS.append("enter")
        return self

    def __exit__(self, *exc):
        EVENTS.append("exit")


class Closable:
    def evaluate(self, task, solution, stage):
        return None

    def close(self):
        EVENTS.append("close")


def test_context_managers_are_entered_and_clients_closed():
    EVENTS.clear()
    with open_evaluator(EvaluatorSpec(f"{__name__}:Managed")) as evaluator:
        assert isinstance(evaluator, Managed) and EVENTS == ["enter"]
    with open_evaluator(EvaluatorSpec(f"{__name__}:Closable")):
        pass
    assert EVENTS == ["enter", "exit", "close"]


def test_bad_specs_are_user_errors():
    cases = {
        "no_colon": "expected module:callable",
        "nosuch.module:make": "cannot import",
        f"{__name__}:missing": "no callable missing",
        f"{__name__}:EVENTS": "no callable EVENTS",
        "builtins:dict": "has no evaluate",
    }
    for factory, message in cases.items():
        with pytest.raises(UserError, match=message):
            with open_evaluator(EvaluatorSpec(factory)):
                pass


def test_local_environment_takes_env_config_fields(tmp_path):
    assert isinstance(local_environment(cache_dir=str(tmp_path), atol=1e-3), Environment)
    with pytest.raises(UserError, match="local_environment"):
        local_environment(tolerance=1)


def test_the_training_configs_declare_the_rewards_timing_method(tmp_path):
    import yaml

    from cuda_agent.rl.stages import AGENT_LOOPS

    warmup = yaml.safe_load((AGENT_LOOPS.parent / "warmup.yaml").read_text())
    loops = yaml.safe_load(AGENT_LOOPS.read_text())
    declared = warmup["reward"]["custom_reward_function"]["reward_kwargs"]["evaluator_kwargs"]
    assert declared == {"timing": "events"}
    assert loops[0]["evaluator_kwargs"] == {"timing": "events"}
    env = local_environment(cache_dir=str(tmp_path), **declared)
    assert env.config.timing == "events"
    with pytest.raises(UserError, match="timing method 'wall'"):
        local_environment(cache_dir=str(tmp_path), timing="wall")
