"""How to fill an operator's parameters, keyed by parameter name, not by operator.

torch names its parameters consistently (`in_features`, `num_groups`, `dim`, `other`,
`kernel_size` ...), so one rule per name builds hundreds of operators. A rule maps the primary
input's shape to a list of options; probing records which option indices ran, composing resolves
the same indices against the real shape with realistic new sizes.
"""

from __future__ import annotations

import ast
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cuda_agent.synth.catalog.model import Domain


@dataclass(frozen=True)
class TensorArg:
    """An extra tensor argument: a new program input or a parameter of the Model."""

    shape: tuple[int, ...]
    role: str  # "input" | "param"
    domain: Domain = "normal"


@dataclass(frozen=True)
class HFConfig:
    """A transformers config built in code: `cls(**kwargs)` with an attention implementation."""

    module: str
    cls: str
    kwargs: tuple[tuple[str, Any], ...]


class Omit:
    """Option meaning: leave the parameter at its default."""

    def __repr__(self) -> str:
        return "Omit()"

    def __eq__(self, other) -> bool:
        return isinstance(other, Omit)

    def __hash__(self) -> int:
        return 0


OMIT = Omit()


class Self:
    """Option meaning: pass the primary input again (self-attention's key and value)."""

    def __eq__(self, other) -> bool:
        return isinstance(other, Self)

    def __hash__(self) -> int:
        return 1


SELF = Self()

# New sizes a rule may introduce, realistic ones per device profile and a fixed small one to probe.
REAL_SIZES = {
    "cuda": {"features": (256, 512, 768, 1024, 2048, 4096), "channels": (16, 32, 64, 128, 256)},
    "cpu": {"features": (32, 64, 96, 128, 192, 256), "channels": (8, 16, 24, 32)},
}
PROBE_SIZES = {"features": 12, "channels": 6}


@dataclass(frozen=True)
class Ctx:
    """What a rule sees: the primary input's shape, a source of new sizes, entry-specific data."""

    shape: tuple[int, ...]
    rng: random.Random | None = None  # None while probing
    profile: str = "cpu"
    extra: Mapping[str, str] = field(default_factory=dict)

    @property
    def rank(self) -> int:
        return len(self.shape)

    def new(self, kind: str) -> int:
        if self.rng is None:
            return PROBE_SIZES[kind]
        return self.rng.choice(REAL_SIZES[self.profile][kind])


def _dims(c: Ctx) -> list:
    return [-1] + [d for d in (1, 2) if d < c.rank - 1]


def _heads(dim: int) -> int:
    for h in (16, 8, 4, 2):
        if dim % h == 0 and dim // h >= 2:
            return h
    return 1


def _groups(channels: int) -> int:
    for g in (32, 16, 8, 4, 2):
        if channels % g == 0 and g < channels:
            return g
    return 1


def _tensor(shape, role="input") -> TensorArg:
    return TensorArg(tuple(int(s) for s in shape), role)


def _hf_config(c: Ctx) -> list:
    """A config of the entry's family, sized by the input: (B, S, hidden) or (B, heads, S, dim)."""
    if c.extra.get("layout") == "heads":  # (B, heads, S, head_dim)
        heads, head_dim = c.shape[1], c.shape[-1]
    else:
        head_dim = 64 if c.rng is not None and c.shape[-1] % 64 == 0 else 4
        heads = max(1, c.shape[-1] // head_dim)
    hidden = heads * head_dim
    kv = heads // 2 if heads % 2 == 0 and heads > 1 else heads
    kwargs = {
        "hidden_size": hidden,
        "intermediate_size": c.new("features"),
        "num_attention_heads": heads,
        "num_key_value_heads": kv,
        "head_dim": head_dim,
        "num_hidden_layers": 1,
        "vocab_size": 128,
        "max_position_embeddings": max(2048, c.shape[-2] if c.rank >= 3 else 0),
    }
    for key, value in (("d_model", hidden), ("d_kv", head_dim), ("num_heads", heads)):
        if c.extra.get(f"has_{key}"):
            kwargs[key] = value
    if c.extra.get("has_d_ff"):
        kwargs["d_ff"] = kwargs["intermediate_size"]
    return [
        HFConfig(c.extra["config_module"], c.extra["config_cls"], tuple(sorted(kwargs.items())))
    ]


RULES: dict[str, Callable[[Ctx], list]] = {
    # extra tensors
    "like": lambda c: [_tensor(c.shape)],
    "row": lambda c: [_tensor(c.shape[-1:], "param")],
    "channel": lambda c: [_tensor(c.shape[1:2], "param")] if c.rank >= 2 else [],
    "mat2": lambda c: (
        [_tensor((*c.shape[:-2], c.shape[-1], c.new("features")))] if c.rank >= 2 else []
    ),
    "linear_weight": lambda c: [_tensor((c.new("features"), c.shape[-1]), "param")],
    "conv_weight": lambda c: (
        [_tensor((c.new("channels"), c.shape[1], *(3,) * (c.rank - 2)), "param")]
        if c.rank >= 3
        else []
    ),
    "scalar_or_like": lambda c: [2.0, 0.5, _tensor(c.shape)],
    # dimensions and sizes that follow the input
    "dim": _dims,
    "dim_optional": lambda c: [OMIT, *_dims(c)],
    "dim0": lambda c: [1 if c.rank > 2 else 0],
    "dim1": lambda c: [-1],
    "dims": lambda c: [(0, *range(c.rank - 1, 0, -1)), (-1,), (2,) * c.rank],
    "shape": lambda c: [(c.shape[0], -1), (-1, c.shape[-1])],
    "sizes": lambda c: [(*(1,) * (c.rank - 1), 2)],
    "last": lambda c: [c.shape[-1]],
    "last_shape": lambda c: [(c.shape[-1],), tuple(c.shape[-2:])],
    "channels": lambda c: [c.shape[1]] if c.rank >= 2 else [],
    "groups_of_channels": lambda c: [_groups(c.shape[1])] if c.rank >= 2 else [],
    "heads_of_last": lambda c: [_heads(c.shape[-1])],
    "unflatten": lambda c: [(2, c.shape[-1] // 2)] if c.shape[-1] % 2 == 0 else [],
    "half_spatial": lambda c: [max(1, c.shape[-1] // 2), 1],
    "topk": lambda c: [min(c.shape[-1], 4 if c.rng is None else c.rng.choice((8, 16, 32)))],
    "pad": lambda c: [(1, 1), (1, 1, 1, 1)],
    # new sizes
    "features": lambda c: [c.new("features")],
    "channels_new": lambda c: [c.new("channels")],
    "hf_config": _hf_config,
    # constants
    "kernel": lambda c: [3, 2],
    "stride": lambda c: [2, 1],
    "one": lambda c: [1],
    "two": lambda c: [2],
    "half_split": lambda c: [max(1, c.shape[0] // 2)],
    "p": lambda c: [2.0],
    "value": lambda c: [0.5],
    "threshold": lambda c: [0.1],
    "low": lambda c: [-1.0],
    "high": lambda c: [1.0],
    "eps": lambda c: [1e-5],
    "zero": lambda c: [0.0],
    "true": lambda c: [True],
    "false": lambda c: [False],
    "scale": lambda c: [2.0],
    "self": lambda c: [SELF],
}

# Required parameters: the rules to try, in order.
REQUIRED: dict[str, tuple[str, ...]] = {
    "other": ("like", "row", "mat2"),
    "input2": ("like",), "x2": ("like",), "y": ("like",), "target": ("like",),
    "tensor1": ("like",), "tensor2": ("like",), "end": ("like",), "positive": ("like",),
    "negative": ("like",), "var": ("like",), "memory": ("like",),
    "mat2": ("mat2",), "vec": ("row",), "vec2": ("row",),
    "weight": ("linear_weight", "conv_weight", "channel", "row", "value"),
    "running_mean": ("channel",), "running_var": ("channel",),
    "exponent": ("scalar_or_like",),
    "dim": ("dim",), "dim0": ("dim0",), "dim1": ("dim1",), "dims": ("dims",),
    "shape": ("shape",), "size": ("shape", "two"), "sizes": ("sizes",), "repeats": ("two",),
    "shifts": ("one",), "k": ("topk",), "chunks": ("two",), "sections": ("two",),
    "indices_or_sections": ("two",), "split_size_or_sections": ("half_split",),
    "split_size": ("half_split",), "kernel_size": ("kernel",), "stride": ("stride",),
    "padding": ("one", "two"), "pad": ("pad",), "dilation": ("one",),
    "output_size": ("half_spatial",), "normalized_shape": ("last_shape",),
    "num_groups": ("groups_of_channels",), "num_channels": ("channels",),
    "num_features": ("channels",), "in_channels": ("channels",), "in_features": ("last",),
    "in1_features": ("last",), "in2_features": ("last",), "input_size": ("last",),
    "embed_dim": ("last",), "d_model": ("last",), "hidden_size": ("last", "features"),
    "dim_model": ("last",), "num_heads": ("heads_of_last",), "nhead": ("heads_of_last",),
    "out_features": ("features",), "out_channels": ("channels_new",),
    "upscale_factor": ("two",), "downscale_factor": ("two",), "groups": ("two",),
    "unflattened_size": ("unflatten",), "p": ("p",), "norm_type": ("p",), "value": ("value",),
    "threshold": ("threshold",), "lambd": ("value",), "eps": ("eps",), "num_layers": ("one",),
    "config": ("hf_config",),
}  # fmt: skip

# Optional parameters always set (determinism, or a dimension to pick instead of an implicit one).
OPTIONAL_ALWAYS: dict[str, str] = {
    "dropout": "zero",
    "batch_first": "true",
    "need_weights": "false",
    "inplace": "false",
}
# Optional parameters set only when calling without them fails (clamp needs min or max).
OPTIONAL_FALLBACK: dict[str, str] = {"min": "low", "max": "high", "scale_factor": "scale"}
# Optional `dim`s that default to None: try the default and explicit dimensions.
OPTIONAL_DIM = ("dim",)

PRIMARY = ("input", "self", "x", "a", "A", "tensor", "src", "tgt", "query", "input1", "x1",
           "anchor", "log_input", "input_", "hidden_states", "elements")  # fmt: skip
# After a `query`, attention modules take `key` and `value`: called as self-attention (x, x, x).
SELF_ATTENTION = ("key", "value")


def options(rule: str, ctx: Ctx) -> list:
    """A rule's options for `ctx`; a rule `=LITERAL` is that one Python literal."""
    if rule.startswith("="):
        return [ast.literal_eval(rule[1:])]
    return RULES[rule](ctx)


def resolve(rule: str, option: int, ctx: Ctx) -> Any:
    """The value of one argument; IndexError when the option does not exist for this shape."""
    return options(rule, ctx)[option]
