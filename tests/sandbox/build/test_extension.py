"""The build: real nvcc and g++, a cache shared by the session (compile-only without CUDA torch)."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import torch

from cuda_agent.errors import UserError
from cuda_agent.sandbox.build.extension import build_extension
from cuda_agent.sandbox.build.pch import PCH_HEADER, ensure_pch
from cuda_agent.sandbox.build.toolchain import find_toolchain, normalize_arch
from cuda_agent.sandbox.workspace import read_solution, solution_from_files

MODEL_NEW = """import torch.nn as nn

import cuda_extension


class ModelNew(nn.Module):
    def forward(self, a, b):
        return cuda_extension.vector_add(a, b)
"""

KERNEL = """#include <cuda_runtime.h>

__global__ void vector_add_kernel(const float* a, const float* b, float* out, long n) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) out[i] = SCALE * (a[i] + b[i]);
}

extern "C" cudaError_t vector_add_launch(const float* a, const float* b, float* out, long n,
                                         cudaStream_t stream) {
    const int threads = 256;
    long blocks = (n + threads - 1) / threads;
    if (blocks > 0) vector_add_kernel<<<blocks, threads, 0, stream>>>(a, b, out, n);
    return cudaGetLastError();
}
"""

BINDING = """#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>

#include "binding_registry.h"

extern "C" cudaError_t vector_add_launch(const float* a, const float* b, float* out, long n,
                                         cudaStream_t stream);

torch::Tensor vector_add(torch::Tensor a, torch::Tensor b) {
    TORCH_CHECK(a.is_cuda() && b.is_cuda() && a.sizes() == b.sizes(), "two CUDA tensors");
    TORCH_CHECK(a.scalar_type() == torch::kFloat32 && b.scalar_type() == torch::kFloat32, "f32");
    TORCH_CHECK(a.is_contiguous() && b.is_contiguous(), "contiguous inputs");
    auto out = torch::empty_like(a);
    cudaError_t err = vector_add_launch(a.data_ptr<float>(), b.data_ptr<float>(),
                                        out.data_ptr<float>(), a.numel(),
                                        c10::cuda::getCurrentCUDAStream());
    TORCH_CHECK(err == cudaSuccess, "vector_add failed: ", cudaGetErrorString(err));
    return out;
}

REGISTER_BINDING(vector_add, vector_add);
"""

HELPER = """extern "C" int helper_value() { return HELPER; }
"""


def vector_add(scale: str = "1.0f", helper: int = 7) -> dict[str, str]:
    """A two-kernel, one-binding solution; `scale` and `helper` make distinct builds."""
    return {
        "model_new.py": MODEL_NEW,
        "kernels/vector_add.cu": KERNEL.replace("SCALE", scale),
        "kernels/helper.cu": HELPER.replace("HELPER", str(helper)),
        "kernels/vector_add_binding.cpp": BINDING,
    }


ALL_UNITS = {
    "kernels/vector_add.cu",
    "kernels/helper.cu",
    "kernels/vector_add_binding.cpp",
    "binding.cpp",
}


@pytest.fixture(scope="module")
def base(toolchain, build_cache):
    """The base solution built once: later tests edit it and count what recompiles."""
    solution = solution_from_files(vector_add())
    return solution, build_extension(solution, toolchain, build_cache)


def test_compiles_kernels_and_binding_with_the_precompiled_header(toolchain, base):
    _, result = base
    assert result.ok, result.log
    assert set(result.compiled) | set(result.reused) == ALL_UNITS
    assert {"kernels/vector_add.cu", "kernels/vector_add_binding.cpp"} <= set(result.compiled)
    # pch is True only when g++ really loaded the .gch: the header it -includes is an #error
    # sentinel, so a silently ignored .gch fails the compile and the build retries without it.
    assert result.pch
    assert result.linked == toolchain.can_link
    if not toolchain.can_link:
        assert result.so_path is None and "compile-only" in result.log


def test_precompiled_header_is_a_sentinel_next_to_its_gch(toolchain, build_cache):
    header = ensure_pch(toolchain, build_cache)
    assert header is not None and header.name == PCH_HEADER
    assert "#error" in header.read_text()
    assert header.with_name(PCH_HEADER + ".gch").stat().st_size > 1_000_000


def test_editing_one_kernel_recompiles_only_that_kernel(toolchain, build_cache, base):
    solution, first = base
    edited = solution_from_files(vector_add(helper=8))
    result = build_extension(edited, toolchain, build_cache)
    assert result.ok, result.log
    assert result.compiled == ["kernels/helper.cu"]
    assert set(result.reused) == ALL_UNITS - {"kernels/helper.cu"}
    assert result.so_name != first.so_name


def test_another_arch_recompiles_the_kernels_only(toolchain, build_cache, base):
    solution, first = base
    result = build_extension(solution, dataclasses.replace(toolchain, arch="sm_80"), build_cache)
    assert result.ok, result.log
    assert set(result.compiled) == {"kernels/vector_add.cu", "kernels/helper.cu"}
    assert result.so_name != first.so_name


def test_identical_second_workspace_reuses_everything(toolchain, build_cache, base, tmp_path):
    solution, first = base
    solution.write_to(tmp_path / "other")
    result = build_extension(read_solution(tmp_path / "other"), toolchain, build_cache)
    assert result.ok and result.compiled == [] and set(result.reused) == ALL_UNITS
    assert result.so_name == first.so_name


def test_workspace_infrastructure_files_are_never_trusted(toolchain, build_cache, base, tmp_path):
    _, first = base
    folder = tmp_path / "ws"
    solution_from_files(vector_add()).write_to(folder)
    (folder / "binding.cpp").write_text("#error a tampered copy\n")
    (folder / "binding_registry.h").write_text("#error a tampered copy\n")
    result = build_extension(read_solution(folder), toolchain, build_cache)
    assert result.ok and result.so_name == first.so_name


def test_concurrent_builds_of_one_new_object_compile_it_once(toolchain, build_cache, base):
    solution = solution_from_files(vector_add(helper=9))
    results = []

    def build():
        results.append(build_extension(solution, toolchain, build_cache))

    threads = [threading.Thread(target=build) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(r.ok for r in results)
    assert sorted(len(r.compiled) for r in results) == [0, 1]


def test_broken_kernel_gives_a_short_error_with_file_and_line(toolchain, build_cache):
    files = vector_add()
    cu = files["kernels/vector_add.cu"]
    files["kernels/vector_add.cu"] = cu.replace("out[i] = 1.0f", "out[i] = undefined_scale")
    result = build_extension(solution_from_files(files), toolchain, build_cache)
    assert not result.ok and not result.linked and result.so_path is None
    assert "kernels/vector_add.cu: compile failed" in result.log
    assert 'kernels/vector_add.cu:5: error: identifier "undefined_scale" is undefined' in result.log
    assert str(build_cache) not in result.log and len(result.log) < 4000


def test_broken_binding_error_names_its_line_without_template_noise(toolchain, build_cache):
    files = vector_add(scale="2.0f")
    files["kernels/vector_add_binding.cpp"] = files["kernels/vector_add_binding.cpp"].replace(
        "auto out = torch::empty_like(a);",
        "auto out = torch::empty_like(a);\n    std::vector<int> v;\n    v.push_back(out);",
    )
    result = build_extension(solution_from_files(files), toolchain, build_cache)
    assert not result.ok
    assert "kernels/vector_add_binding.cpp:15:" in result.log
    assert "push_back" in result.log
    for noise in ("note:", "candidate", "In file included", "required from", str(build_cache)):
        assert noise not in result.log
    assert len(result.log.splitlines()) < 12


def test_a_compile_past_the_time_limit_fails_cleanly_and_is_not_cached(toolchain, build_cache):
    files = vector_add(scale="5.0f")
    files["kernels/vector_add_binding.cpp"] += "// a binding never built before\n"
    solution = solution_from_files(files)
    result = build_extension(solution, toolchain, build_cache, timeout_s=2)
    assert not result.ok
    assert "kernels/vector_add_binding.cpp: compile timed out" in result.log
    assert "kernels/vector_add_binding.cpp" in result.compiled  # attempted, not cached:
    again = build_extension(solution, toolchain, build_cache, timeout_s=2)
    assert "kernels/vector_add_binding.cpp" in again.compiled


def test_torch_headers_in_a_kernel_are_refused(toolchain, build_cache):
    files = vector_add()
    files["kernels/vector_add.cu"] = '#include "common.cuh"\n' + files["kernels/vector_add.cu"]
    files["kernels/common.cuh"] = "#pragma once\n#include <ATen/ATen.h>\n"
    files["kernels/helper.cu"] = "#include <torch/extension.h>\n" + files["kernels/helper.cu"]
    result = build_extension(solution_from_files(files), toolchain, build_cache)
    assert not result.ok and result.compiled == []
    assert "kernels/common.cuh:2: error: includes <ATen/ATen.h> (included by " in result.log
    assert "kernels/helper.cu:1: error: includes <torch/extension.h>" in result.log
    assert "workspace rule" in result.log


def test_distinct_builds_get_distinct_extension_names(toolchain, build_cache, base):
    _, first = base
    other = build_extension(solution_from_files(vector_add(helper=8)), toolchain, build_cache)
    assert other.so_name != first.so_name
    assert first.so_name.startswith("cuda_extension_") and first.so_name.endswith(".so")


def test_toolchain_resolves_nvcc_wrappers_and_finds_torch(toolchain):
    with open(toolchain.nvcc, "rb") as binary:
        assert binary.read(4) == b"\x7fELF", "nvcc should be the real binary, not a wrapper"
    assert Path(toolchain.cuda_home, "bin", "nvcc") == Path(toolchain.nvcc)
    assert Path(toolchain.torch_include_dirs[0], "torch", "extension.h").is_file()
    assert Path(toolchain.python_include_dir, "Python.h").is_file()
    assert {"c10", "torch", "torch_cpu", "torch_python"} <= set(toolchain.torch_libs)
    assert toolchain.cxx11_abi == bool(torch._C._GLIBCXX_USE_CXX11_ABI)


def test_arch_precedence_and_forms(monkeypatch):
    monkeypatch.setenv("CUDA_AGENT_ARCH", "sm_80")
    assert find_toolchain().arch == "sm_80"
    assert find_toolchain("9.0").arch == "sm_90"
    monkeypatch.delenv("CUDA_AGENT_ARCH")
    if torch.version.cuda is None:
        assert find_toolchain().arch == "sm_90"
    assert normalize_arch("compute_90a") == "sm_90a" and normalize_arch("100") == "sm_100"
    with pytest.raises(UserError, match="sm_90"):
        normalize_arch("hopper")


def test_key_depends_on_arch_and_flags(toolchain):
    other = dataclasses.replace(toolchain, arch="sm_80")
    assert other.key() != toolchain.key()
    assert other.host_key() == toolchain.host_key()  # the precompiled header does not care
    assert "-gencode=arch=compute_80,code=sm_80" in other.nvcc_flags()


def test_a_cuda_home_without_nvcc_is_a_clear_user_error(monkeypatch, tmp_path):
    monkeypatch.setenv("CUDA_HOME", str(tmp_path))
    with pytest.raises(UserError, match="CUDA_HOME"):
        find_toolchain()


LOAD_AND_RUN = """
import json, sys
import torch
from cuda_agent.sandbox.build.extension import load_extension
a = torch.rand(1000, device="cuda") + 1  # a + b in [2, 4): the ratio below is stable
b = torch.rand(1000, device="cuda") + 1
out = {}
for path in sys.argv[1:]:
    ext = load_extension(path)
    out[path] = (ext.vector_add(a, b) / (a + b)).mean().item()
print(json.dumps(out))
"""


def _load_and_run(*so_paths: Path) -> dict[str, float]:
    proc = subprocess.run(
        [sys.executable, "-c", LOAD_AND_RUN, *map(str, so_paths)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.gpu
def test_gpu_built_extension_imports_and_matches_torch(toolchain, build_cache, base):
    _, result = base
    assert result.linked and result.so_path is not None and result.so_path.is_file()
    ratio = _load_and_run(result.so_path)[str(result.so_path)]
    assert ratio == pytest.approx(1.0, rel=1e-4)


@pytest.mark.gpu
def test_gpu_concurrent_builds_of_one_new_extension_link_it_once(toolchain, build_cache):
    solution = solution_from_files(vector_add(scale="5.0f"))
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(
            pool.map(lambda _: build_extension(solution, toolchain, build_cache), range(4))
        )
    assert all(r.ok and r.linked for r in results), [r.log for r in results]
    assert len({r.so_path for r in results}) == 1


@pytest.mark.gpu
def test_gpu_two_builds_load_side_by_side_in_one_process(toolchain, build_cache, base):
    _, first = base
    second = build_extension(solution_from_files(vector_add(scale="3.0f")), toolchain, build_cache)
    assert second.ok and second.compiled == ["kernels/vector_add.cu"], second.log
    ratios = _load_and_run(first.so_path, second.so_path)
    assert ratios[str(first.so_path)] == pytest.approx(1.0, rel=1e-4)
    assert ratios[str(second.so_path)] == pytest.approx(3.0, rel=1e-4)


CUBLAS_KERNEL = """#include <cublas_v2.h>

extern "C" int sgemm_launch(const float* a, const float* b, float* c, int n) {
    // Row-major C = A B is column-major C^T = B^T A^T.
    static cublasHandle_t handle = nullptr;
    if (handle == nullptr && cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) return -1;
    const float one = 1.0f, zero = 0.0f;
    return cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, b, n, a, n, &zero, c, n);
}
"""

CUBLAS_BINDING = """#include <torch/extension.h>

#include "binding_registry.h"

extern "C" int sgemm_launch(const float* a, const float* b, float* c, int n);

torch::Tensor square_matmul(torch::Tensor a, torch::Tensor b) {
    auto c = torch::empty_like(a);
    int status = sgemm_launch(a.data_ptr<float>(), b.data_ptr<float>(), c.data_ptr<float>(),
                              static_cast<int>(a.size(0)));
    TORCH_CHECK(status == 0, "cublasSgemm failed: ", status);
    return c;
}

REGISTER_BINDING(square_matmul, square_matmul);
"""

CUBLAS_CHECK = """
import sys
import torch
from cuda_agent.sandbox.build.extension import load_extension
ext = load_extension(sys.argv[1])
a, b = torch.randn(64, 64, device="cuda"), torch.randn(64, 64, device="cuda")
torch.testing.assert_close(ext.square_matmul(a, b), a @ b, atol=1e-3, rtol=1e-3)
print("ok")
"""


@pytest.mark.gpu
def test_gpu_cublas_from_a_kernel_file_is_linked(toolchain, build_cache):
    files = {
        "model_new.py": MODEL_NEW,
        "kernels/gemm.cu": CUBLAS_KERNEL,
        "kernels/gemm_binding.cpp": CUBLAS_BINDING,
    }
    result = build_extension(solution_from_files(files), toolchain, build_cache)
    assert result.ok and result.linked, result.log
    proc = subprocess.run(
        [sys.executable, "-c", CUBLAS_CHECK, str(result.so_path)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-3000:]
