"""Drawing input sets in the trusted process, from a secret seed the candidate never sees.

"task" is the program's own get_inputs(). The others keep its shapes, dtypes, integer tensors and
non-tensor arguments but redraw every floating-point tensor; they exist because a task's own
distribution can make a trivial kernel pass (uniform [0, 1) inputs make ReLU the identity).
"""

from __future__ import annotations

import secrets
import types

import torch

DISTRIBUTIONS = ("task", "normal", "uniform_signed", "normal_x4")
_copy = torch.Tensor.copy_  # bound at import: the candidate's process copies with it too


def load_program(code: str, name: str) -> types.ModuleType:
    """Execute a trusted reference program (a Task's code) as a fresh module."""
    module = types.ModuleType(name)
    exec(compile(code, f"<task {name}>", "exec"), module.__dict__)
    return module


def secret_seed() -> int:
    return secrets.randbits(62)


def draw_inputs(program: types.ModuleType, distribution: str, seed: int, device) -> list:
    """One input set on `device` (floating tensors redrawn unless distribution is "task")."""
    torch.manual_seed(seed)
    with torch.device(device):
        raw = list(program.get_inputs())
    moved = [x.to(device) if isinstance(x, torch.Tensor) else x for x in raw]
    if distribution == "task":
        return moved
    gen = torch.Generator(device=device).manual_seed(seed ^ 0x5DEECE66D)
    return [_redraw(x, distribution, gen) for x in moved]


def _redraw(x, distribution: str, gen: torch.Generator):
    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        return x
    if distribution == "normal":
        new = torch.randn(x.shape, generator=gen, device=x.device, dtype=torch.float32)
    elif distribution == "uniform_signed":
        new = torch.rand(x.shape, generator=gen, device=x.device, dtype=torch.float32) * 2 - 1
    elif distribution == "normal_x4":
        new = torch.randn(x.shape, generator=gen, device=x.device, dtype=torch.float32) * 4
    else:
        raise ValueError(f"unknown input distribution {distribution!r}")
    return new.to(x.dtype)


def init_inputs(program: types.ModuleType, seed: int) -> list:
    torch.manual_seed(seed)
    return list(program.get_init_inputs())


def nbytes(values) -> int:
    """Bytes held by the tensors of an input set or output."""
    if isinstance(values, torch.Tensor):
        return values.numel() * values.element_size()
    if isinstance(values, list | tuple):
        return sum(nbytes(v) for v in values)
    return 0


def copy_inputs(dst: list, src: list) -> None:
    """Copy the content of input set `src` into set `dst` of the same structure, in place."""
    for to, content in zip(dst, src, strict=True):
        if isinstance(to, torch.Tensor):
            _copy(to, content)
