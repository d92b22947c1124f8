"""Candidate operators from torch: `torch.nn` modules, `torch.nn.functional`, `torch.*`,
`torch.special`, `torch.linalg` and the Tensor methods without a `torch.*` twin.

Signatures come from `torch.overrides.get_testing_overrides()` (every overridable function, with
its parameter names) and from `inspect` for modules; nothing here is written per operator.
"""

from __future__ import annotations

import inspect

import torch
import torch.nn as nn

from cuda_agent.synth.catalog.probe import Candidate, params_of
from cuda_agent.synth.catalog.rules import REQUIRED
from cuda_agent.synth.naming import FUNCTION_SPACES

CODE_PREFIX = {"torch": "torch", "torch.nn.functional": "F", "torch.special": "torch.special",
               "torch.linalg": "torch.linalg"}  # fmt: skip
PREFERENCE = {"torch": 0, "torch.nn.functional": 1, "module": 2, "torch.special": 3,
              "torch.linalg": 3, "method": 4}  # fmt: skip
# Module classes that hold other modules or have no fixed computation of their own.
NOT_OPERATORS = {"Module", "Sequential", "ModuleList", "ModuleDict", "ParameterList",
                 "ParameterDict", "Container", "Identity"}  # fmt: skip


def torch_candidates() -> list[Candidate]:
    overrides = torch.overrides.get_testing_overrides()
    return [*_functions(overrides), *_methods(overrides), *_modules()]


def _functions(overrides) -> list[Candidate]:
    out, seen = [], set()
    for space_name, _ in FUNCTION_SPACES:
        space = __import__(space_name, fromlist=["_"])
        for attr in sorted(dir(space)):
            obj = getattr(space, attr, None)
            if attr.startswith("_") or attr.endswith("_") or id(obj) in seen:
                continue
            lam = _override(overrides, obj)
            if lam is None:
                continue
            seen.add(id(obj))
            params = params_of(inspect.signature(lam), 0)
            if not params:
                continue
            primary, rest = params[0], params[1:]
            out.append(
                Candidate(
                    name=f"{space_name}.{attr}",
                    kind="function",
                    library="torch",
                    ref=f"{CODE_PREFIX[space_name]}.{attr}",
                    call_params=rest,
                    primary=primary.name,
                    preference=PREFERENCE[space_name],
                )
            )
    return out


def _methods(overrides) -> list[Candidate]:
    out = []
    for attr in sorted(dir(torch.Tensor)):
        if attr.startswith("_") or attr.endswith("_") or callable(getattr(torch, attr, None)):
            continue  # private, in-place, or labelled by its torch.* twin
        lam = _override(overrides, getattr(torch.Tensor, attr, None))
        if lam is None:
            continue
        params = params_of(inspect.signature(lam), 1)
        out.append(
            Candidate(
                name=f"torch.Tensor.{attr}",
                kind="method",
                library="torch",
                ref=attr,
                call_params=params,
                primary="self",
                preference=PREFERENCE["method"],
            )
        )
    return out


def _modules() -> list[Candidate]:
    out = []
    for attr in sorted(dir(nn)):
        cls = getattr(nn, attr)
        if not (isinstance(cls, type) and issubclass(cls, nn.Module)) or attr in NOT_OPERATORS:
            continue
        if attr.startswith("Lazy") or cls.forward is nn.Module.forward:
            continue
        try:
            init = _init_params(cls)
            forward = params_of(inspect.signature(cls.forward), 1)
        except (TypeError, ValueError):
            continue
        if not forward:
            continue
        out.append(
            Candidate(
                name=f"torch.nn.{attr}",
                kind="module",
                library="torch",
                ref=f"nn.{attr}",
                init_params=init,
                call_params=forward[1:],
                primary=forward[0].name,
                preference=PREFERENCE["module"],
            )
        )
    return out


def _init_params(cls: type) -> tuple:
    """A constructor's parameters; for `__init__(*args, **kwargs)` (nn.LSTM) its base's, less
    the required ones no rule can fill (the base's `mode`, which the subclass passes itself)."""
    params = params_of(inspect.signature(cls.__init__), 1)
    if params or len(cls.__mro__) < 3:
        return params
    base = params_of(inspect.signature(cls.__mro__[1].__init__), 1)
    return tuple(p for p in base if not p.required or p.name in REQUIRED)


def _override(overrides, obj):
    try:
        return overrides.get(obj)
    except TypeError:  # unhashable
        return None
