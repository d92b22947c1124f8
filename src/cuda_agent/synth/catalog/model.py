"""The seed catalog's data types: an operator, the ways to call it, what it gives back.

An entry is mined, not written: `plans` hold the argument choices that ran on small tensors and on
meta tensors (rule names and option indices from `rules.py`, resolved against the real input shape
when a program is composed), `outputs` what came back per input rank.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

Kind = Literal["module", "function", "method", "rope", "attention"]
Domain = Literal["normal", "positive", "unit"]
Category = Literal[
    "elementwise", "binary", "reduction", "layer", "layout", "index", "transformers", "other"
]


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ArgSpec(Frozen):
    """One argument: `param` filled by `rules.RULES[rule]` (its `option`-th choice)."""

    param: str
    rule: str
    option: int = 0
    keyword: bool = True


class Plan(Frozen):
    """A way to build and call the operator for inputs of one rank."""

    init: tuple[ArgSpec, ...] = ()
    call: tuple[ArgSpec, ...] = ()
    domain: Domain = "normal"
    select: int | None = None  # index into a tuple result (values of torch.max(x, dim), ...)


class Outcome(Frozen):
    """What a plan gave back on the probe input."""

    rank: int
    integer: bool = False  # an index result (argmax): only at the end of a chain
    nonneg: bool = False
    positive: bool = False
    unit: bool = False  # within [0, 1]


class OpEntry(Frozen):
    name: str  # the label, e.g. torch.nn.Conv2d
    kind: Kind
    library: Literal["torch", "transformers"]
    ref: str  # how generated code names it: nn.Conv2d, F.gelu, torch.sum, transpose (method)
    imports: tuple[str, ...] = ()  # import lines the generated program needs for it
    category: Category
    plans: dict[int, tuple[Plan, ...]]  # input rank -> plans that ran
    outcomes: dict[int, Outcome]
    aliases: tuple[str, ...] = ()  # other public names that computed the same thing
    extra: dict[str, str] = {}  # kind-specific: the config class of a transformers block, ...

    @property
    def ranks(self) -> tuple[int, ...]:
        return tuple(sorted(self.plans))


class Catalog(Frozen):
    entries: tuple[OpEntry, ...]
    versions: dict[str, str]  # torch / transformers versions it was mined with
    notes: tuple[str, ...] = ()  # e.g. why there are no transformers operators

    def by_name(self) -> dict[str, OpEntry]:
        return {e.name: e for e in self.entries}

    def count(self, library: str) -> int:
        return sum(e.library == library for e in self.entries)
