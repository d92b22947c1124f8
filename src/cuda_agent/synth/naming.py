"""Public names of the callables a program runs: one label per operator, however it is reached.

`torch.relu`, `torch.nn.functional.gelu`, `torch.Tensor.view` (a method with no `torch.*` twin),
`torch.nn.Conv2d`, `transformers.llama.LlamaRMSNorm`. A Tensor method with a `torch.*` twin and the
Python operators (`x + y` is `Tensor.add`) are labelled by the twin (`torch.add`), so one operator
has one label whether the code writes `torch.add(x, y)`, `x.add(y)` or `x + y`.
"""

from __future__ import annotations

import types
from dataclasses import dataclass

import torch

# Namespaces whose public functions are operators, in order of preference for a label.
FUNCTION_SPACES = (
    ("torch", "torch"),
    ("torch.nn.functional", "torch.nn.functional"),
    ("torch.special", "torch.special"),
    ("torch.linalg", "torch.linalg"),
)

# Python operators (and their reflected and in-place forms) by the Tensor method they call.
DUNDER = {
    "add": "add", "radd": "add", "iadd": "add",
    "sub": "sub", "rsub": "sub", "isub": "sub",
    "mul": "mul", "rmul": "mul", "imul": "mul",
    "truediv": "div", "rtruediv": "div", "itruediv": "div", "div": "div", "rdiv": "div",
    "idiv": "div",
    "floordiv": "floor_divide", "rfloordiv": "floor_divide", "ifloordiv": "floor_divide",
    "mod": "remainder", "rmod": "remainder", "imod": "remainder",
    "pow": "pow", "rpow": "pow", "ipow": "pow",
    "matmul": "matmul", "rmatmul": "matmul",
    "neg": "neg", "abs": "abs", "pos": "positive",
    "gt": "gt", "lt": "lt", "ge": "ge", "le": "le", "eq": "eq", "ne": "ne",
}  # fmt: skip


@dataclass(frozen=True)
class Names:
    """Maps function objects to labels; built once per process (cheap: a few namespace scans)."""

    by_id: dict[int, str]

    def label(self, func) -> str | None:
        """The label of a torch-level callable, or None for something that is not an operator."""
        found = self.by_id.get(id(func))
        if found is not None:
            return found
        qual = getattr(func, "__qualname__", "") or ""
        owner, _, name = qual.rpartition(".")
        if owner in ("TensorBase", "Tensor") and name:
            return method_label(name)
        holder = getattr(func, "__self__", None)  # properties: x.T arrives as getset.__get__
        if isinstance(holder, types.GetSetDescriptorType) and holder.__objclass__ in (
            torch._C.TensorBase,
            torch.Tensor,
        ):
            return f"torch.Tensor.{holder.__name__}"
        module = getattr(func, "__module__", None) or ""
        if module.startswith("torch") and name:
            return f"{module}.{name}" if owner == "" else None
        return None


def method_label(name: str) -> str:
    """`transpose` -> `torch.transpose`, `view` -> `torch.Tensor.view`, `__radd__` -> `torch.add`"""
    if name.startswith("__") and name.endswith("__"):
        name = DUNDER.get(name[2:-2], name)
    if not name.startswith("_") and callable(getattr(torch, name, None)):
        return f"torch.{name}"
    return f"torch.Tensor.{name}"


def build_names() -> Names:
    by_id: dict[int, str] = {}
    for prefix, module_name in FUNCTION_SPACES:
        space = _import(module_name)
        for attr in sorted(dir(space)):
            if attr.startswith("_"):
                continue
            obj = getattr(space, attr, None)
            if callable(obj) and not isinstance(obj, type):
                by_id.setdefault(id(obj), f"{prefix}.{attr}")
    for attr in sorted(dir(torch.Tensor)):
        obj = getattr(torch.Tensor, attr, None)
        if callable(obj) and id(obj) not in by_id:
            if not attr.startswith("_") or (attr.startswith("__") and attr[2:-2] in DUNDER):
                by_id[id(obj)] = method_label(attr)
    return Names(by_id)


def module_label(cls: type) -> str:
    """`torch.nn.Conv2d`, `transformers.llama.LlamaRMSNorm`, `transformers.activations.NewGELU…`."""
    module = cls.__module__
    if module.startswith("torch.nn.modules") and getattr(torch.nn, cls.__name__, None) is cls:
        return f"torch.nn.{cls.__name__}"
    return f"{library_prefix(module)}.{cls.__name__}"


def library_prefix(module: str) -> str:
    """`transformers.models.llama.modeling_llama` -> `transformers.llama`; others unchanged."""
    parts = module.split(".")
    if len(parts) >= 3 and parts[0] == "transformers" and parts[1] == "models":
        return f"transformers.{parts[2]}"
    return module


def patch_targets(label: str) -> list[tuple[object, str]]:
    """Where a label's operator can be reached from, as (owner, attribute) pairs.

    `torch.add` is reached as `torch.add`, `Tensor.add` and the `+` operators; verifying a label
    replaces each of these with a counting wrapper (see `verify.py`).
    """
    prefix, _, name = label.rpartition(".")
    targets: list[tuple[object, str]] = []
    if prefix == "torch.Tensor":
        targets.append((torch.Tensor, name))
    elif prefix == "torch":
        targets.append((torch, name))
        if hasattr(torch.Tensor, name):
            targets.append((torch.Tensor, name))
        targets += [(torch.Tensor, f"__{d}__") for d, base in DUNDER.items() if base == name]
    else:
        targets.append((_import(prefix), name))
    return [(owner, attr) for owner, attr in targets if hasattr(owner, attr)]


def _import(module_name: str):
    import importlib

    return importlib.import_module(module_name)
