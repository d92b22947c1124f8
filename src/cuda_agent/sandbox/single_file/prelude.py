"""The narrow torch prelude: what a single-file submission's CUDA source may use of torch,
declared by a few of torch's own headers, so that nvcc need not parse all of torch.

A load_inline CUDA source includes <torch/types.h> (torch's builder puts it first) and mostly
<torch/extension.h>; nvcc parses them three times (cudafe++, cicc and the host compiler), which
is most of a cold build. What the guard lets a CUDA source do with torch (the tensor type and its
metadata, allocation with empty* and zeros*, options and dtypes, TORCH_CHECK, the dispatch
macros, the CUDA stream and device guard) is declared by a handful of torch's headers. So an
eligible CUDA source is first compiled with those umbrella headers resolving to the prelude (a
folder of stand-ins searched before torch's own); the source text is untouched. Where that does
not compile, the source is compiled as written, and the failure is remembered so later builds go
straight there.

Not eligible, always compiled as written: CUDA sources that define Python bindings (pybind11's
casters for tensors are not in the CUDA prelude; without them a binding would compile and fail
only when called), torch operators, or ask for gradients (torch::empty with requires_grad is
torch's autograd factory; at::empty, which the prelude's torch:: resolves to, refuses that option).

The C++ unit that defines the module (load_inline's main.cpp: <torch/extension.h>, the
declarations and the bindings) has a prelude of its own, the binding prelude: the same part of
torch plus pybind11 with every type caster torch's full headers define (torch/csrc/utils/pybind.h
holds them all, pybind11's STL casters included) and torch::wrap_pybind_function. Even
precompiled, the full headers cost such a unit 10-14 s, most of it code generated for their
inline functions; against the binding prelude it takes about half. Such a unit may use pybind11;
torch operators, gradients, Python's C API and torch's internals still send it to the full
headers.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from cuda_agent.sandbox.build.compiler import locked

UMBRELLAS = ("torch/extension.h", "torch/types.h", "torch/torch.h", "torch/all.h", "ATen/ATen.h")
PRELUDE = "cuda_agent_torch_prelude.h"
BINDING = "cuda_agent_torch_binding.h"
_NOT_ELIGIBLE = re.compile(
    r"PYBIND11|pybind11|\bpy::|TORCH_LIBRARY|requires_grad|Python\.h|torch/csrc|torch/python\.h"
)
_NOT_ELIGIBLE_BINDING = re.compile(
    r"TORCH_LIBRARY|requires_grad|Python\.h|torch/csrc|torch/python\.h"
)
_TEXT = """\
#pragma once
// The part of torch a CUDA source of a single-file submission may use (see the harness's
// single_file/prelude.py): torch's own headers for it, and torch::'s names for at::'s.
#include <optional>
#include <ATen/core/Tensor.h>
#include <ATen/Dispatch.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/zeros_like.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Exception.h>
#include <c10/util/Half.h>
#include <c10/util/irange.h>

namespace torch {
using namespace at;
using std::nullopt;
using std::optional;
using Dtype = at::ScalarType;
constexpr auto kUInt8 = at::kByte;
constexpr auto kInt8 = at::kChar;
constexpr auto kInt16 = at::kShort;
constexpr auto kInt32 = at::kInt;
constexpr auto kInt64 = at::kLong;
constexpr auto kUInt16 = at::kUInt16;
constexpr auto kUInt32 = at::kUInt32;
constexpr auto kUInt64 = at::kUInt64;
constexpr auto kFloat16 = at::kHalf;
constexpr auto kFloat32 = at::kFloat;
constexpr auto kFloat64 = at::kDouble;
constexpr auto kU8 = kUInt8;
constexpr auto kU16 = kUInt16;
constexpr auto kU32 = kUInt32;
constexpr auto kU64 = kUInt64;
constexpr auto kI8 = kInt8;
constexpr auto kI16 = kInt16;
constexpr auto kI32 = kInt32;
constexpr auto kI64 = kInt64;
constexpr auto kF16 = kFloat16;
constexpr auto kF32 = kFloat32;
constexpr auto kF64 = kFloat64;
}  // namespace torch
"""
_BINDING_TEXT = f"""\
#pragma once
// The narrow prelude, and Python bindings of functions on tensors (see the harness's
// single_file/prelude.py): pybind11 with torch's type casters, and wrap_pybind_function.
#include <{PRELUDE}>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/utils/pybind.h>
"""
VERSION = hashlib.sha256("\0".join((_TEXT, _BINDING_TEXT, *UMBRELLAS)).encode()).hexdigest()[:16]


def eligible(unit_text: str, headers: dict[str, str], binding: bool = False) -> bool:
    """Whether a unit may be tried against the prelude (`binding`: the C++ unit that defines the
    module, against the binding prelude): it (or a header written beside it) reaches torch
    through an umbrella header and uses nothing the prelude cannot stand in for."""
    texts = [unit_text, *headers.values()]
    refused = _NOT_ELIGIBLE_BINDING if binding else _NOT_ELIGIBLE
    if any(refused.search(t) for t in texts):
        return False
    return any(f"{u}>" in t or f'{u}"' in t for t in texts for u in UMBRELLAS)


def prelude_folder(cache: Path, binding: bool = False) -> Path:
    """The folder to search first (-I) for the prelude's stand-ins (`binding`: the binding
    prelude's), written once per version."""
    folder = cache / "prelude" / (f"{VERSION}-binding" if binding else VERSION)
    if (folder / "ready").exists():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    with locked(folder / "lock"):
        if not (folder / "ready").exists():
            _write(folder / PRELUDE, _TEXT)
            top = PRELUDE
            if binding:
                _write(folder / BINDING, _BINDING_TEXT)
                top = BINDING
            for umbrella in UMBRELLAS:
                _write(folder / umbrella, f"#pragma once\n#include <{top}>\n")
            (folder / "ready").write_text(VERSION)
    return folder


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(text)
    os.replace(tmp, path)
