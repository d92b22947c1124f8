"""The narrow torch prelude: which CUDA sources may be tried against it, that such a source is
built so (the source untouched), and that one it cannot serve is compiled as written, the
failure remembered so the next build goes straight there."""

from __future__ import annotations

import shutil

import pytest

from cuda_agent.sandbox.build.toolchain import find_toolchain
from cuda_agent.sandbox.process.messages import ExtensionCall
from cuda_agent.sandbox.single_file.build import build_call, lay_out
from cuda_agent.sandbox.single_file.flags import Flags
from cuda_agent.sandbox.single_file.prelude import (
    BINDING,
    PRELUDE,
    UMBRELLAS,
    eligible,
    prelude_folder,
)

KERNEL = """
#include <torch/extension.h>
__global__ void twice(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 2.0f * x[i];
}
torch::Tensor twice_cuda(torch::Tensor x) {
  TORCH_CHECK(x.scalar_type() == torch::kFloat32, "float32 only");
  auto c = x.contiguous();
  auto y = torch::empty_like(c);
  int n = static_cast<int>(c.numel());
  twice<<<(n + 255) / 256, 256>>>(c.data_ptr<float>(), y.data_ptr<float>(), n);
  return y.view(x.sizes());
}
"""
DECLARATION = "torch::Tensor twice_cuda(torch::Tensor x);"


@pytest.mark.parametrize(
    "text, ok",
    [
        (KERNEL, True),
        ("#include <ATen/ATen.h>\n__global__ void k() {}", True),
        ("__global__ void k() {}", False),  # no torch header: nothing to spare
        (KERNEL + 'PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("f", &twice_cuda); }', False),
        (KERNEL + "auto g = torch::zeros({1}, torch::requires_grad());", False),
        ("#include <torch/extension.h>\nTORCH_LIBRARY(ns, m) {}", False),
    ],
    ids=["kernel", "aten", "no_torch", "bindings", "requires_grad", "operators"],
)
def test_which_sources_may_use_the_prelude(text, ok):
    assert eligible(text, {}) is ok


@pytest.mark.parametrize(
    "text, ok",
    [
        ("#include <torch/extension.h>\n" + DECLARATION, True),
        (
            '#include <torch/extension.h>\nPYBIND11_MODULE(e, m) { m.def("f", &f, py::arg("x")); }',
            True,
        ),
        ("#include <torch/extension.h>\n#include <torch/csrc/autograd/python_variable.h>", False),
        ("#include <torch/extension.h>\nPyObject* f(PyObject* o);\n#include <Python.h>", False),
        ("#include <torch/extension.h>\nTORCH_LIBRARY(ns, m) {}", False),
    ],
    ids=["declarations", "own_module", "torch_internals", "python_api", "operators"],
)
def test_which_module_units_may_use_the_binding_prelude(text, ok):
    assert eligible(text, {}, binding=True) is ok


def test_a_header_beside_the_source_counts():
    assert eligible('#include "k.h"\n', {"k.h": "#include <torch/types.h>\n"})
    assert not eligible('#include "k.h"\n', {"k.h": "#include <pybind11/pybind11.h>\n"})


def test_the_stand_ins_lead_to_the_prelude(tmp_path):
    folder = prelude_folder(tmp_path)
    assert prelude_folder(tmp_path) == folder
    for umbrella in UMBRELLAS:
        assert f"#include <{PRELUDE}>" in (folder / umbrella).read_text()
    assert "using namespace at;" in (folder / PRELUDE).read_text()
    binding = prelude_folder(tmp_path, binding=True)
    assert binding != folder
    for umbrella in UMBRELLAS:
        assert f"#include <{BINDING}>" in (binding / umbrella).read_text()
    text = (binding / BINDING).read_text()
    assert f"#include <{PRELUDE}>" in text and "torch/csrc/utils/pybind.h" in text


def _call(cuda: str, cpp: str = DECLARATION) -> ExtensionCall:
    return ExtensionCall(
        api="load_inline", name="twice_ext", cpp_sources=(cpp,), cuda_sources=(cuda,),
        functions=(("twice_cuda", ""),), files=(), extra_cflags=(), extra_cuda_cflags=(),
        extra_ldflags=(), extra_include_paths=(), with_cuda=True,
    )  # fmt: skip


@pytest.fixture(scope="module")
def tc():
    if shutil.which("nvcc") is None:
        pytest.skip("needs nvcc")
    return find_toolchain()


def test_an_eligible_source_is_built_against_the_prelude_once(tc, tmp_path):
    sources = lay_out(_call(KERNEL))
    first = build_call(sources, Flags(), tc, tmp_path, timeout_s=600)
    assert first.ok, first.log
    # the module's unit too, against the binding prelude
    assert first.narrowed == ("cuda.cu", "main.cpp")
    assert set(first.compiled) == {"cuda.cu", "main.cpp"}
    again = build_call(sources, Flags(), tc, tmp_path, timeout_s=600)
    assert again.ok and again.compiled == () and again.narrowed == ("cuda.cu", "main.cpp")


def test_a_source_the_prelude_cannot_serve_is_compiled_as_written(tc, tmp_path):
    # torch::nn lives only in the full headers: the preludes' builds fail, the full ones pass
    nn = "int options_size() { return sizeof(torch::nn::LinearOptions); }\n"
    sources = lay_out(_call(KERNEL + nn, DECLARATION + "\n" + nn.replace("options_", "cpp_")))
    first = build_call(sources, Flags(), tc, tmp_path, timeout_s=900)
    assert first.ok, first.log
    assert first.narrowed == () and set(first.compiled) == {"cuda.cu", "main.cpp"}
    assert len(list(tmp_path.glob("objects/*/*-narrow.failed"))) == 2
    again = build_call(sources, Flags(), tc, tmp_path, timeout_s=900)
    assert again.ok and again.compiled == () and again.narrowed == ()
