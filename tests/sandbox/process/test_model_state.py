"""The candidate gets the reference's weights as KernelBench's rules allow: the same names
loaded, other names built under the reference's seed or loaded by order, and a refusal that
says which names and shapes differ where neither gives the same weights."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from cuda_agent.sandbox.process.model_state import StateMismatch, adopt_state


class Reference(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)
        self.register_buffer("scale", torch.full((3,), 2.0))


class Renamed(nn.Module):  # the same layers in the same order, under other names
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 3)
        self.register_buffer("gain", torch.full((3,), 2.0))


class Zeroed(nn.Module):
    """Other names, other initial values, the same shapes in state_dict order (a module's own
    tensors come before its children's: the reference's are scale, fc.weight, fc.bias)."""

    def __init__(self):
        super().__init__()
        self.s = nn.Parameter(torch.zeros(3))
        self.w = nn.Parameter(torch.zeros(3, 4))
        self.b = nn.Parameter(torch.zeros(3))


class Fused(nn.Module):  # another layout: no rule gives it the reference's weights
    def __init__(self):
        super().__init__()
        self.wb = nn.Parameter(torch.zeros(3, 5))


def _reference(seed: int) -> dict:
    torch.manual_seed(seed)
    return {k: v.clone() for k, v in Reference().state_dict().items()}


def _values(model: nn.Module) -> list[torch.Tensor]:
    return list(model.state_dict().values())


def test_the_same_names_are_loaded_as_they_stand():
    state = _reference(7)
    model = Reference()  # another seed's weights, replaced by the reference's
    assert adopt_state(model, state, "ModelNew") is None
    assert all(torch.equal(a, b) for a, b in zip(_values(model), state.values(), strict=True))


def test_other_names_built_under_the_same_seed_keep_their_own_equal_weights():
    state = _reference(11)
    torch.manual_seed(11)
    model = Renamed()
    note = adopt_state(model, state, "ModelNew")
    assert "built under Model's seed" in note and "'fc.weight'" in note and "'proj.weight'" in note
    assert all(torch.equal(a, b) for a, b in zip(_values(model), state.values(), strict=True))


def test_other_names_of_the_same_shapes_are_loaded_by_order():
    state = _reference(3)
    model = Zeroed()
    note = adopt_state(model, state, "ModelNew")
    assert "loaded by order" in note
    assert all(torch.equal(a, b) for a, b in zip(_values(model), state.values(), strict=True))
    assert torch.equal(model.w.detach(), state["fc.weight"])  # the parameter itself holds them


def test_neither_rule_refuses_naming_the_names_and_shapes():
    with pytest.raises(StateMismatch) as err:
        adopt_state(Fused(), _reference(5), "ModelNew")
    text = str(err.value)
    assert "neither building it under Model's seed nor loading by order" in text
    assert "[[3], [3, 4], [3]]" in text and "[[3, 5]]" in text and "'wb'" in text


def test_a_class_that_overrides_load_state_dict_still_gets_the_weights():
    class Stubborn(Reference):
        def load_state_dict(self, *args, **kwargs):  # ignores whatever it is given
            return None

    state = _reference(9)
    model = Stubborn()
    adopt_state(model, state, "ModelNew")
    assert torch.equal(model.fc.weight.detach(), state["fc.weight"])
