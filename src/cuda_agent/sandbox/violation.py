"""A violation, typed: the rule it broke and the check that found it, beside its message.

Consumers read `rule` and `check`; `message` is the line users see (`str(v)` gives it), worded
as before the types existed. Results written before then hold plain strings: one loads as a
violation of rule `unknown`, its check read from the shape its line had then (the static
guard's `path:line: ...`, the runtime guard's opening words), else `unknown`.
"""

from __future__ import annotations

import re
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, model_validator


class Check(StrEnum):
    STATIC_GUARD = "static_guard"  # the solution's sources, read, never run
    RUNTIME_GUARD = "runtime_guard"  # what the candidate's process ran or asked the harness for
    TIMING_CHECKS = "timing_checks"  # the reported times against clocks the candidate can't set
    UNKNOWN = "unknown"  # a violation stored as a plain string, of no recognisable shape


class Rule(StrEnum):
    """One member per rule; the static guard's are the keys of its tables (guard/rules.py)."""

    # static guard, Python
    MODEL = "model"
    DEFINE_MODEL = "define_model"
    BASE = "base"
    KEYWORDS = "keywords"
    DUNDER_METHOD = "dunder_method"
    RELATIVE = "relative"
    STAR = "star"
    IMPORT = "import"
    IMPORTS_TORCH = "imports_torch"
    IMPORTS_TORCH_COMPUTE = "imports_torch_compute"
    BUILTIN = "builtin"
    DUNDER = "dunder"
    MODULE_VALUE = "module_value"
    NN_OUTSIDE_INIT = "nn_outside_init"
    TORCH = "torch"
    TORCH_COMPUTE = "torch_compute"
    TORCH_INTEGRITY = "torch_integrity"
    HOOK = "hook"
    HELD_MODULE = "held_module"
    PRIVATE = "private"
    BUILTIN_ON_TENSOR = "builtin_on_tensor"
    MATMUL = "matmul"
    OPERATOR = "operator"
    COMPARE = "compare"
    SLICE_WRITE = "slice_write"
    TENSOR_INDEX = "tensor_index"
    PATCH = "patch"
    NO_EXTENSION = "no_extension"
    SYNTAX = "syntax"
    # static guard, both languages
    METHOD = "method"
    INTEGRITY_METHOD = "integrity_method"
    INFRA_FILE = "infra_file"
    # static guard, C++/CUDA
    INCLUDE = "include"
    INCLUDE_ATEN = "include_aten"
    DIRECTIVE = "directive"
    COMPUTED_INCLUDE = "computed_include"
    MACRO = "macro"
    PYBIND11_MODULE = "pybind11_module"  # a module of its own: single-file extensions define one
    LOAD_HOOK = "load_hook"
    PYTHON_C_API = "python_c_api"
    PYBIND_METHOD = "pybind_method"
    USING_NAMESPACE = "using_namespace"
    NAMESPACE_ALIAS = "namespace_alias"
    ATEN = "aten"
    ATEN_COMPUTE = "aten_compute"
    PYBIND = "pybind"
    STD = "std"
    CUB_DEVICE = "cub_device"
    THRUST = "thrust"
    SYS = "sys"
    CUDA_STATE = "cuda_state"
    # static guard, a single-file submission's extension calls
    WRAPPER_NAME = "wrapper_name"
    BUILD_FLAG = "build_flag"
    # runtime guard
    DISPATCHED_COMPUTE = "dispatched_compute"
    DISPATCHED_LOWER_PRECISION = "dispatched_lower_precision"
    TORCH_KERNEL = "torch_kernel"
    NO_OWN_KERNEL = "no_own_kernel"
    TRACE_STOPPED = "trace_stopped"  # a timed call's GPU trace missing from a process that had one
    TRACE_TAMPERED = "trace_tampered"  # the GPU trace stopped or replaced inside a call
    TRITON_MODULE = "triton_module"  # a C module Triton does not generate
    TRITON_DRIVER = "triton_driver"  # Triton's driver utilities from a changed source
    PTXAS_FLAGS = "ptxas_flags"
    # timing checks
    ESCAPED_WORK = "escaped_work"
    DEVICE_OVER_HOST = "device_over_host"
    UNREPORTED_TIME = "unreported_time"
    UNKNOWN = "unknown"  # stored as a plain string


_STATIC_LINE = re.compile(r"^[\w./-]+:\d+: ")  # `path:line: ...`, the static guard's lines
_RUNTIME_OPENINGS = ("forward dispatched", "forward launched", "none of the extension's kernels")


class Violation(BaseModel):
    model_config = ConfigDict(frozen=True)

    rule: Rule
    check: Check
    message: str

    def __str__(self) -> str:
        return self.message

    @model_validator(mode="before")
    @classmethod
    def _from_plain_string(cls, data):
        if isinstance(data, str):
            return {"rule": Rule.UNKNOWN, "check": _legacy_check(data), "message": data}
        return data


def _legacy_check(message: str) -> Check:
    """The check behind a violation stored as a plain string, from its line's shape."""
    if _STATIC_LINE.match(message):
        return Check.STATIC_GUARD
    if message.startswith(_RUNTIME_OPENINGS):
        return Check.RUNTIME_GUARD
    return Check.UNKNOWN
