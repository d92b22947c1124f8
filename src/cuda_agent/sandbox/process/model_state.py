"""How the candidate's model gets the reference's weights, in the candidate's process.

The candidate is built under the seed the reference was built under, as KernelBench builds both
under one seed (and never copies weights). Then:

- names match: the reference's state_dict is loaded as it stands;
- names differ, and the seeded build already holds the reference's tensors, in order: kept;
- names differ, and the shapes match in order: the reference's tensors are loaded by order;
- otherwise the candidate is refused, with a line saying which names and shapes differ.

A note says which of the last three happened, for the verdict. The primitives are bound when
this module is imported, before candidate code runs, and nn.Module's own methods are used, so a
class that overrides them, or code that patches torch, cannot change what is loaded or compared.
"""

from __future__ import annotations

import torch

_state_dict = torch.nn.Module.state_dict
_load_state_dict = torch.nn.Module.load_state_dict
_tensor_equal = torch.equal
_no_grad = torch.no_grad
_copy = torch.Tensor.copy_


class StateMismatch(Exception):
    """Neither the seed nor the order gives the candidate the reference's weights."""


def adopt_state(model: torch.nn.Module, reference: dict, name: str) -> str | None:
    """Give `model` the reference's state; a note where its names differ from the reference's,
    else None. StateMismatch where no rule above applies."""
    own = _state_dict(model)
    if set(own) == set(reference):
        _load_state_dict(model, reference)
        return None
    mine, theirs = list(own.values()), list(reference.values())
    differ = _names(own, reference)
    if len(mine) == len(theirs) and all(_equal(a, b) for a, b in zip(mine, theirs, strict=True)):
        return (
            f"{name}'s parameters are named differently from Model's ({differ}); built under "
            "Model's seed, as KernelBench builds both, they hold Model's values, in order"
        )
    if [tuple(t.shape) for t in mine] == [tuple(t.shape) for t in theirs]:
        with _no_grad():
            for dest, src in zip(mine, theirs, strict=True):
                _copy(dest, src)
        return (
            f"{name}'s parameters are named differently from Model's ({differ}); Model's "
            "values were loaded by order, their shapes matching one for one"
        )
    raise StateMismatch(
        f"{name}'s state_dict differs from Model's ({differ}), and neither building it under "
        f"Model's seed nor loading by order gives it Model's weights: Model holds "
        f"{_shapes(theirs)}, {name} {_shapes(mine)}"
    )


def _equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and _tensor_equal(a, b.to(a.device))


def _names(own: dict, reference: dict) -> str:
    missing = sorted(set(reference) - set(own))[:6]
    extra = sorted(set(own) - set(reference))[:6]
    return f"Model's {missing} absent, {extra} not Model's"


def _shapes(tensors: list) -> str:
    shown = [list(t.shape) for t in tensors[:6]]
    more = f" and {len(tensors) - 6} more" if len(tensors) > 6 else ""
    return f"{len(tensors)} tensor(s) {shown}{more}"
