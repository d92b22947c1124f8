"""Where rollouts send compile/verify/profile: named in the config, made per episode.

An evaluator is anything with `evaluate(task, solution, stage) -> Verdict` (the agent's
`Evaluator` protocol). The config names a factory as `module:callable` plus keyword arguments,
so the training package never imports the service that serves it: the local Environment by
default, the distributed evaluation service (separate evaluation GPUs) on a cluster. A factory's
result that is a context manager is entered for the episode and exited after it; one with only
`close()` is closed.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cuda_agent.agent import Evaluator
from cuda_agent.errors import UserError
from cuda_agent.sandbox import EnvConfig, Environment

LOCAL = "cuda_agent.rl.evaluators:local_environment"


@dataclass(frozen=True)
class EvaluatorSpec:
    factory: str = LOCAL
    kwargs: dict[str, Any] = field(default_factory=dict)


def resolve(factory: str) -> Callable[..., Any]:
    """The callable `module:name` names."""
    module_name, sep, attr = factory.partition(":")
    if not sep or not module_name or not attr:
        raise UserError(f"evaluator {factory!r}: expected module:callable, e.g. {LOCAL}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise UserError(f"evaluator {factory!r}: cannot import {module_name} ({err})") from None
    target = getattr(module, attr, None)
    if not callable(target):
        raise UserError(f"evaluator {factory!r}: {module_name} has no callable {attr}")
    return target


@contextmanager
def open_evaluator(spec: EvaluatorSpec) -> Iterator[Evaluator]:
    """The evaluator for one episode, released when the episode ends."""
    made = resolve(spec.factory)(**spec.kwargs)
    if not callable(getattr(made, "evaluate", None)):
        raise UserError(
            f"evaluator {spec.factory!r} made {type(made).__name__}, which has no evaluate()"
        )
    if hasattr(made, "__enter__") and hasattr(made, "__exit__"):
        with made as entered:
            yield entered if entered is not None else made
        return
    try:
        yield made
    finally:
        close = getattr(made, "close", None)
        if callable(close):
            close()


def local_environment(**kwargs: Any) -> Environment:
    """The kernel environment of this host (its GPU, or compile-only checks without one)."""
    if "cache_dir" in kwargs:
        kwargs["cache_dir"] = Path(kwargs["cache_dir"])
    try:
        config = EnvConfig(**kwargs)
    except TypeError as err:
        raise UserError(f"evaluator local_environment: {err}") from None
    return Environment(config)
