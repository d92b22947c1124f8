"""Translation units merged for export (solution headers inlined once, the registry where it is
included) and REGISTER_BINDING calls read as the preprocessor splits them."""

from __future__ import annotations

from cuda_agent.sandbox.export.sources import merge_units, registrations

FILES = {
    "kernels/common.cuh": "#pragma once\n__device__ float twice(float v) { return 2 * v; }\n",
    "kernels/a.cu": '#include <cuda_runtime.h>\n#include "common.cuh"\n__global__ void a() {}\n',
    "kernels/sub/b.cu": '#include "../common.cuh"\n__global__ void b() {}\n',
    "kernels/op_binding.cpp": '#include "../binding_registry.h"\nint op();\n',
    "kernels/more_binding.cpp": '#include "binding_registry.h"\nint more();\n',
}


def test_a_header_is_inlined_once_and_lines_name_the_files():
    merged = merge_units(["kernels/a.cu", "kernels/sub/b.cu"], FILES, registry=None)
    assert merged.count("__device__ float twice") == 1 and "pragma once" not in merged
    assert '#include "common.cuh"' not in merged and '#include "../common.cuh"' not in merged
    assert "#include <cuda_runtime.h>" in merged
    assert merged.index('#line 1 "kernels/common.cuh"') < merged.index("__global__ void a()")
    assert '#line 3 "kernels/a.cu"' in merged and '#line 1 "kernels/sub/b.cu"' in merged


def test_the_registry_comes_in_once_however_it_is_named():
    registry = "#pragma once\nstruct Registry {};\n"
    merged = merge_units(["kernels/op_binding.cpp", "kernels/more_binding.cpp"], FILES, registry)
    assert merged.count("struct Registry {};") == 1 and "pragma once" not in merged
    assert "#include" not in merged  # both includes of the registry replaced


def test_registrations_split_where_the_preprocessor_does():
    text = (
        "// REGISTER_BINDING(commented, out);\n"
        'REGISTER_BINDING(scale, scale_fn, py::arg("x"), py::arg("shape") = std::make_pair(1, 2),'
        ' "doc (with parens, commas)");\n'
        "REGISTER_BINDING(axpby, register_axpby);\n"
    )
    first, second = registrations(text)
    assert (first.name, first.fn) == ("scale", "scale_fn")
    assert first.extras == (
        'py::arg("x")',
        'py::arg("shape") = std::make_pair(1, 2)',
        '"doc (with parens, commas)"',
    )
    assert text[first.end - 1] == ";" and text[first.start :].startswith("REGISTER_BINDING(scale")
    assert (second.name, second.fn, second.extras) == ("axpby", "register_axpby", ())
