"""Render a composed chain of operators as a stand-alone KernelBench-format program.

The same renderer serves probing (a one-operator program per plan) and composition, so every
program the catalog vouches for was produced by the code that produces the dataset.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cuda_agent.synth.catalog.model import Domain, Kind
from cuda_agent.synth.catalog.rules import HFConfig, Omit, Self, TensorArg

HEADER = ("import torch", "import torch.nn as nn", "import torch.nn.functional as F")


@dataclass(frozen=True)
class Step:
    """One operator call with its arguments resolved: (parameter name or None, value) pairs."""

    kind: Kind
    ref: str
    label: str
    imports: tuple[str, ...] = ()
    init: tuple[tuple[str | None, Any], ...] = ()
    call: tuple[tuple[str | None, Any], ...] = ()
    select: int | None = None
    extra: tuple[tuple[str, Any], ...] = ()  # rope/attention: the apply function, sequence length

    def get(self, key: str, default=None):
        return dict(self.extra).get(key, default)


@dataclass(frozen=True)
class ProgramSpec:
    """A primary input and a chain of steps; each step consumes the previous step's output."""

    primary: TensorArg
    steps: tuple[Step, ...]


def tensor_expr(shape: tuple[int, ...], domain: Domain) -> str:
    dims = ", ".join(str(s) for s in shape) if shape else ""
    if domain == "positive":
        return f"torch.rand({dims}) + 0.5"
    if domain == "unit":
        return f"torch.rand({dims})"
    return f"torch.randn({dims})"


def render(spec: ProgramSpec) -> str:
    init: list[str] = []
    body: list[str] = []
    inputs: list[TensorArg] = [spec.primary]
    imports: list[str] = list(HEADER)
    for i, step in enumerate(spec.steps):
        for line in step.imports:
            if line not in imports:
                imports.append(line)
        _render_step(i, step, init, body, inputs)
    names = ["x"] + [f"x{j}" for j in range(1, len(inputs))]
    labels = " -> ".join(s.label.rsplit(".", 1)[-1] for s in spec.steps)
    lines = [*imports, "", "", "class Model(nn.Module):", f'    """{labels}."""', ""]
    lines += ["    def __init__(self):", "        super().__init__()"]
    lines += [f"        {line}" for line in init]
    lines += ["", f"    def forward(self, {', '.join(names)}):"]
    lines += [f"        {line}" for line in body]
    lines += ["        return x", "", ""]
    lines += ["def get_inputs():"]
    exprs = ", ".join(tensor_expr(t.shape, t.domain) for t in inputs)
    lines += [f"    return [{exprs}]", "", ""]
    lines += ["def get_init_inputs():", "    return []", ""]
    return "\n".join(lines)


def _render_step(i: int, step: Step, init: list[str], body: list[str], inputs: list) -> None:
    attr = f"self.op{i}"
    sel = f"[{step.select}]" if step.select is not None else ""
    init_args = _args(i, step.init, init, inputs, prefix="init")
    call_args = _args(i, step.call, init, inputs, prefix="w")
    if step.kind == "module":
        init.append(f"{attr} = {step.ref}({init_args})")
        body.append(f"x = {attr}({_join('x', call_args)}){sel}")
    elif step.kind == "function":
        body.append(f"x = {step.ref}({_join('x', call_args)}){sel}")
    elif step.kind == "method":
        body.append(f"x = x.{step.ref}({call_args}){sel}")
    elif step.kind == "rope":
        init.append(f"{attr} = {step.ref}({init_args})")
        init.append(_positions(i, step.get("seq")))
        body.append(f"cos, sin = {attr}(x, self.op{i}_pos)")
        body.append(f"x = {step.get('apply')}(x, x, cos, sin)[0]")
    elif step.kind == "attention":
        init.append(f"{attr} = {step.ref}({init_args}, layer_idx=0)")
        init.append(f"{attr}_rope = {step.get('rope')}({init_args})")
        init.append(_positions(i, step.get("seq")))
        body.append(f"cos, sin = {attr}_rope(x, self.op{i}_pos)")
        body.append(f"x = {attr}(x, position_embeddings=(cos, sin), attention_mask=None)[0]")
    else:
        raise ValueError(f"unknown step kind {step.kind!r}")


def _positions(i: int, seq: int) -> str:
    return f'self.register_buffer("op{i}_pos", torch.arange({seq}).unsqueeze(0), persistent=False)'


def _join(first: str, rest: str) -> str:
    return f"{first}, {rest}" if rest else first


def _args(i: int, pairs, init: list[str], inputs: list, prefix: str) -> str:
    out = []
    for j, (name, value) in enumerate(pairs):
        if isinstance(value, Omit):
            continue
        text = _value(i, j, value, init, inputs, prefix)
        out.append(f"{name}={text}" if name else text)
    return ", ".join(out)


def _value(i: int, j: int, value, init: list[str], inputs: list, prefix: str) -> str:
    if isinstance(value, Self):
        return "x"
    if isinstance(value, TensorArg):
        if value.role == "input":
            inputs.append(value)
            return f"x{len(inputs) - 1}"
        name = f"self.op{i}_{prefix}{j}"
        init.append(f"{name} = nn.Parameter({tensor_expr(value.shape, value.domain)})")
        return name
    if isinstance(value, HFConfig):
        var = f"config{i}"
        kwargs = ", ".join(f"{k}={v!r}" for k, v in value.kwargs)
        init.append(f"{var} = {value.cls}({kwargs})")
        init.append(f'{var}._attn_implementation = "sdpa"')
        return var
    return repr(value)
