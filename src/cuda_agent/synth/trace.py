"""Trace what a program runs: the operators its own code calls (labels) and the aten ops beneath.

Labels come from three hooks that see real calls, never from what a composer meant to write:
module forward hooks (library modules such as nn.Conv2d or LlamaRMSNorm), a TorchFunctionMode
(torch functions, Tensor methods and Python operators) and a profile hook (plain library functions
such as transformers' apply_rotary_pos_emb). Only outermost calls count: the nn.Linear inside a
LlamaMLP is part of the LlamaMLP. A TorchDispatchMode records the aten ops, normalized so that the
same computation reads the same on CPU, GPU and meta tensors (the decontamination signature).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

from cuda_agent.synth.naming import Names, build_names, library_prefix, module_label
from cuda_agent.synth.program import tensors_of

# aten ops that move or describe data rather than compute (views are skipped by their tag).
_NOT_COMPUTE = {"detach", "clone", "copy", "to_copy", "lift_fresh", "lift_fresh_copy", "empty",
                "empty_like", "empty_strided", "zeros", "zeros_like", "ones", "ones_like", "fill",
                "full", "full_like", "arange", "scalar_tensor", "new_empty", "new_zeros",
                "new_ones", "new_full", "contiguous", "local_scalar_dense", "item", "unsafe_view",
                "resize", "set", "alias", "unsafe_split"}  # fmt: skip


@dataclass(frozen=True)
class Call:
    label: str
    inputs: tuple[tuple[int, ...], ...]
    outputs: tuple[tuple[int, ...], ...]


@dataclass(frozen=True)
class Trace:
    calls: tuple[Call, ...]
    aten: tuple[tuple[str, int], ...]  # (normalized op, rank of its first tensor argument)

    @property
    def labels(self) -> tuple[str, ...]:
        """Operator labels in order of first call."""
        return tuple(dict.fromkeys(c.label for c in self.calls))

    def signature(self) -> tuple:
        """Operators in order with their shapes: two programs with the same one are duplicates."""
        return tuple((c.label, c.inputs, c.outputs) for c in self.calls)


def aten_name(func) -> str | None:
    """`aten::_native_batch_norm_legit` -> `batch_norm`; None for views and data movement."""
    if getattr(func, "is_view", False):
        return None
    name = func._schema.name.split("::")[-1].strip("_")
    for prefix in ("native_", "cudnn_", "miopen_", "mkldnn_"):
        name = name.removeprefix(prefix)
    name = name.removesuffix("_functional").removesuffix("_legit").strip("_")
    if "scaled_dot_product" in name:
        return "scaled_dot_product_attention"
    if name.startswith("convolution") or name.startswith("conv_depthwise"):
        return "convolution"
    if "batch_norm" in name:
        return "batch_norm"
    return None if name in _NOT_COMPUTE else name


def _shapes(value) -> tuple[tuple[int, ...], ...]:
    return tuple(tuple(t.shape) for t in tensors_of(value))


@dataclass
class _State:
    filename: str
    names: Names
    depth: int = 0
    calls: list[Call] = field(default_factory=list)
    aten: list[tuple[str, int]] = field(default_factory=list)
    open_frames: dict[int, tuple[str, tuple]] = field(default_factory=dict)


class _Functions(TorchFunctionMode):
    def __init__(self, state: _State):
        super().__init__()
        self.state = state

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        st = self.state
        if st.depth > 0:
            return func(*args, **kwargs)
        st.depth += 1
        try:
            result = func(*args, **kwargs)
        finally:
            st.depth -= 1
        label = st.names.label(func)
        inputs = _shapes((args, tuple(kwargs.values())))
        if label is not None and inputs and tensors_of(result):
            st.calls.append(Call(label, inputs, _shapes(result)))
        return result


class _Aten(TorchDispatchMode):
    def __init__(self, state: _State):
        super().__init__()
        self.state = state

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = aten_name(func)
        if name is not None:
            first = next(iter(tensors_of(list(args))), None)
            self.state.aten.append((name, first.dim() if first is not None else 0))
        return func(*args, **(kwargs or {}))


def trace_forward(
    model: torch.nn.Module, inputs: list, filename: str, labels: bool = True
) -> Trace:
    """Run `model(*inputs)` once under the tracers; `filename` is the program's (see program.py).
    With `labels=False` only the aten ops are recorded (cheaper: no Python-level hooks)."""
    state = _State(filename, build_names() if labels else Names({}))
    if not labels:
        with torch.no_grad(), _Aten(state):
            model(*inputs)
        return Trace((), tuple(state.aten))
    handles = _hook_library_modules(model, state)
    previous = sys.getprofile()
    try:
        with torch.no_grad(), _Aten(state), _Functions(state):
            sys.setprofile(_profiler(state))
            try:
                model(*inputs)
            finally:
                sys.setprofile(previous)
    finally:
        for h in handles:
            h.remove()
    return Trace(tuple(state.calls), tuple(state.aten))


def _hook_library_modules(model: torch.nn.Module, state: _State) -> list:
    handles = []
    program_module = type(model).__module__
    for sub in model.modules():
        if sub is model or type(sub).__module__ == program_module:
            continue  # the Model itself and classes the program defines: look inside them

        def pre(mod, args, kwargs):
            state.depth += 1
            if state.depth == 1:
                label = module_label(type(mod))
                state.open_frames[id(mod)] = (label, _shapes((args, tuple(kwargs.values()))))

        def post(mod, args, kwargs, output):
            state.depth -= 1
            if state.depth == 0 and id(mod) in state.open_frames:
                label, inputs = state.open_frames.pop(id(mod))
                state.calls.append(Call(label, inputs, _shapes(output)))

        handles.append(sub.register_forward_pre_hook(pre, with_kwargs=True))
        handles.append(sub.register_forward_hook(post, with_kwargs=True, always_call=True))
    return handles


def _profiler(state: _State):
    """Catches library Python functions (not methods) called straight from the program's code."""

    def profile(frame, event, arg):
        if event == "call" and state.depth == 0:
            caller = frame.f_back
            code = frame.f_code
            if caller is None or caller.f_code.co_filename != state.filename:
                return
            owner = frame.f_globals.get(code.co_name)
            module = frame.f_globals.get("__name__", "")
            if getattr(owner, "__code__", None) is code and not module.startswith("torch"):
                if module.split(".")[0] in ("transformers",):
                    state.depth += 1
                    inputs = _shapes(tuple(frame.f_locals.values()))
                    state.open_frames[id(frame)] = (f"{library_prefix(module)}.{code.co_name}",
                                                    inputs)  # fmt: skip
        elif event == "return" and id(frame) in state.open_frames:
            label, inputs = state.open_frames.pop(id(frame))
            state.depth -= 1
            state.calls.append(Call(label, inputs, _shapes(arg)))

    return profile
