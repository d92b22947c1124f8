"""The single-file guard on an extension call's sources: the module it defines is allowed, by its
rule, while every other rule of the workspace's C++ guard stays."""

from cuda_agent.sandbox import Rule
from cuda_agent.sandbox.guard.static_cpp import cpp_findings
from cuda_agent.sandbox.process.messages import ExtensionCall
from cuda_agent.sandbox.single_file.guard import INCLUDES, call_findings

SOURCE = """#include <torch/extension.h>
TORCH_LIBRARY(ops, m) {}
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {}
"""


def _call(cpp: str) -> ExtensionCall:
    return ExtensionCall(
        api="load_inline", name="ext", cpp_sources=(cpp,), cuda_sources=(), functions=(),
        files=(), extra_cflags=(), extra_cuda_cflags=(), extra_ldflags=(),
        extra_include_paths=(), with_cuda=None,
    )  # fmt: skip


def test_an_extension_s_own_module_is_allowed_by_its_rule_and_other_macros_are_not():
    workspace = cpp_findings("main.cpp", SOURCE, frozenset(), INCLUDES)
    assert [f.rule for f in workspace] == [Rule.MACRO, Rule.PYBIND11_MODULE]
    [found] = call_findings(_call(SOURCE))
    assert found.rule == Rule.MACRO
    assert found.text.startswith("load_inline('ext') cpp_sources:2: uses TORCH_LIBRARY: ")


def test_a_wrapper_that_is_no_function_name_is_its_own_rule():
    call = _call("int f();")
    call = ExtensionCall(**{**call.__dict__, "functions": (("not a name", ""),)})
    assert [f.rule for f in call_findings(call)] == [Rule.WRAPPER_NAME]
