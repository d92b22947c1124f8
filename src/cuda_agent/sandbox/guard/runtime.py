"""The runtime guard: what the candidate's forward really ran, and whether that is allowed.

In the child, `trace_forward` runs one forward under a TorchDispatchMode (which sees every aten op
the call dispatches, whether Python or the extension's C++ called it) and, optionally, under the
GPU trace (which sees every GPU kernel, including ATen's own kernels called around the
dispatcher). In the parent, `trace_findings` turns the trace into findings (`judge_trace`: their
lines, every one a violation under the cuda-agent rules).

PyTorch compute dispatched or launched is `torch_compute`, which the kernelbench profile lists;
an op that lowered the precision of its floating-point inputs, and a forward that ran none of the
solution's kernels, are `integrity`, refused under every profile.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from cuda_agent.sandbox.guard.findings import Finding, texts
from cuda_agent.sandbox.guard.profile import DEFAULT_RULES, Family, Layer, RulesProfile, refuses
from cuda_agent.sandbox.timing.call import synchronize
from cuda_agent.sandbox.timing.gpu_work import GpuRecorder
from cuda_agent.sandbox.violation import Rule

# aten ops a candidate may dispatch: allocation, views, metadata. Everything else is compute.
ALLOWED_OPS = frozenset(
    "aten::" + name
    for name in (
        "empty empty_strided empty_like new_empty new_empty_strided zeros zeros_like new_zeros "
        "ones ones_like new_ones full full_like new_full zero_ fill_ resize_ view _unsafe_view "
        "_reshape_alias as_strided t transpose permute "
        "unsqueeze squeeze expand select slice split split_with_sizes unbind chunk narrow alias "
        "detach lift_fresh diagonal unfold view_as_real view_as_complex _local_scalar_dense "
        "sym_size sym_stride sym_numel sym_storage_offset is_contiguous set_ record_stream"
    ).split()
)
# GPU kernels that mean PyTorch did the work (fills behind torch.zeros are allocation).
_TORCH_KERNEL = re.compile(r"at::native::|at::cuda::|\btriton_|_kernel_triton|^triton")
_FILL_KERNEL = re.compile(r"FillFunctor|fill_kernel")
_LIBRARY_KERNEL = re.compile(r"gemm|xmma|nvjet|cutlass|cudnn|conv|winograd|implicit", re.I)
_GLOBAL_FN = re.compile(
    r"__global__\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?(?:static\s+|inline\s+)*void\s+"
    r"(?:__launch_bounds__\s*\([^)]*\)\s*)?(\w+)"
)


@dataclass
class Trace:
    ops: Counter = field(default_factory=Counter)
    kernels: list[str] | None = None  # None: the profiler was not run or not available
    lowered: Counter = field(default_factory=Counter)  # compute ops that lowered precision


class _OpRecorder(TorchDispatchMode):
    """Counts every aten op dispatched; with `lowered`, also the compute ops (not allocation,
    views, metadata) whose floating-point output is narrower than a floating-point input."""

    def __init__(self, ops: Counter, lowered: Counter | None = None):
        super().__init__()
        self.ops, self.lowered = ops, lowered

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func._schema.name
        self.ops[name] += 1
        out = func(*args, **(kwargs or {}))
        if self.lowered is not None and name not in ALLOWED_OPS and _lowers(args, kwargs, out):
            self.lowered[name] += 1
        return out


def _lowers(args, kwargs, out) -> bool:
    """Whether a floating-point output has fewer bits than the widest floating-point input."""
    widest = max((t.element_size() for t in tree_leaves((args, kwargs)) if _is_float(t)), default=0)
    return any(_is_float(t) and t.element_size() < widest for t in tree_leaves(out))


def _is_float(value) -> bool:
    return isinstance(value, torch.Tensor) and value.is_floating_point()


def trace_forward(fn, inputs: list, with_kernels: bool):
    """(output, Trace) of one call, recorded at the dispatcher and (optionally) by the GPU trace
    the timed calls use (gpu_work.py: CUPTI through kineto, started once per process). A trace
    stopped by the call raises GpuTraceTampered."""
    trace = Trace()
    if with_kernels:
        with GpuRecorder() as recording:
            with _OpRecorder(trace.ops, trace.lowered):
                out = fn(*inputs)
            synchronize()
        if recording.work is not None:
            trace.kernels = list(recording.work.kernels)
        return out, trace
    with _OpRecorder(trace.ops, trace.lowered):
        out = fn(*inputs)
    synchronize()
    return out, trace


def kernel_names(sources: dict[str, str]) -> set[str]:
    """Names of the __global__ functions the solution's .cu files define."""
    return {
        m
        for path, text in sources.items()
        if path.endswith((".cu", ".cuh"))
        for m in _GLOBAL_FN.findall(text)
    }


def judge_trace(trace: Trace, own_kernels: set[str]) -> list[str]:
    """Violations: forbidden aten ops; PyTorch's kernels; none of the extension's own kernels."""
    return texts(trace_findings(trace, own_kernels))


def trace_findings(
    trace: Trace, own_kernels: set[str], profile: RulesProfile = DEFAULT_RULES
) -> list[Finding]:
    """Every finding of one traced forward, each with its family (profile.py). A cuBLAS or
    cuDNN kernel counts as the solution's own unless `profile` lets PyTorch compute and some
    PyTorch compute was dispatched (a kept nn.Conv2d launches cuDNN's kernels too)."""
    found = [
        Finding(
            f"forward dispatched {op} ({n}x): PyTorch computed part of the result; do that work "
            "in a kernel (only allocation, views and metadata may go through PyTorch)",
            Rule.DISPATCHED_LOWER_PRECISION if trace.lowered.get(op) else Rule.DISPATCHED_COMPUTE,
            Family.INTEGRITY if trace.lowered.get(op) else Family.TORCH_COMPUTE,
            Layer.RUNTIME_DISPATCH,
            op,
        )
        for op, n in sorted(trace.ops.items())
        if op not in ALLOWED_OPS
    ]
    if trace.kernels is None:
        return found
    # a Triton submission's kernel is named after its function, which may itself start with
    # "triton_" as Inductor's do: a kernel the solution's own build named is never PyTorch's
    torch_kernels = sorted(
        {
            k
            for k in trace.kernels
            if _TORCH_KERNEL.search(k) and not _FILL_KERNEL.search(k) and k not in own_kernels
        }
    )
    found += [
        Finding(
            f"forward launched PyTorch's kernel {_short(k)}: PyTorch did the work",
            Rule.TORCH_KERNEL,
            Family.TORCH_COMPUTE,
            Layer.RUNTIME_KERNELS,
            _short(k),
        )
        for k in torch_kernels
    ]
    ran_own = any(_is_own(k, own_kernels) for k in trace.kernels)
    ran_library = any(
        _LIBRARY_KERNEL.search(k) for k in trace.kernels if not _TORCH_KERNEL.search(k)
    )
    torch_computed = any(f.layer == Layer.RUNTIME_DISPATCH for f in found)
    if ran_library and torch_computed and not refuses(profile, Family.TORCH_COMPUTE):
        ran_library = False
    if not ran_own and not ran_library:
        found.append(
            Finding(
                "none of the extension's kernels ran during forward "
                f"(kernels seen: {', '.join(_short(k) for k in trace.kernels[:5]) or 'none'})",
                Rule.NO_OWN_KERNEL,
                Family.INTEGRITY,
                Layer.RUNTIME_KERNELS,
            )
        )
    return found


def _is_own(kernel: str, own_kernels: set[str]) -> bool:
    """Whether a traced kernel is one of the solution's: its name exactly (Triton names a kernel
    after its function), or a PyTorch-free name holding one as a whole identifier (CUDA's names
    carry templates and arguments). A name's mere substring, or PyTorch's kernels, never are:
    a kernel called `add` or `native` does not make PyTorch's `at::native::...add...` its own."""
    if kernel in own_kernels:
        return True
    if _TORCH_KERNEL.search(kernel):
        return False
    return any(re.search(rf"(?<!\w){re.escape(name)}(?!\w)", kernel) for name in own_kernels)


def _short(name: str, keep: int = 80) -> str:
    return name if len(name) <= keep else name[: keep - 1] + "…"
