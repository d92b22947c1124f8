"""The static guard: every statically-caught cheat is flagged, every other fixture is not, and each
rule (with the aliasing tricks around it) is caught by name, file and line."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest

from cuda_agent.sandbox import EnvConfig, Status, read_solution, solution_from_files
from cuda_agent.sandbox.guard.rules import ALLOWED_IMPORTS
from cuda_agent.sandbox.guard.static import StaticRules, check_static
from cuda_agent.task import BUILTIN_DIR
from tests.sandbox.conftest import guard_case_solution

HERE = Path(__file__).parents[1]  # tests/sandbox, beside its case folders
REPO = HERE.parents[1]
CHEATS = sorted(p for p in (HERE / "cheats").iterdir() if p.is_dir())
HONEST = sorted(p for p in (HERE / "honest").iterdir() if p.is_dir())
LINE = re.compile(r"^(model_new\.py|kernels/[\w./-]+):(\d+): [^\n]+; [^\n]+$")


def _expect(folder: Path) -> dict:
    return json.loads((folder / "expect.json").read_text())


STATIC = [p for p in CHEATS if _expect(p)["caught_by"] == "static"]
RUNTIME = [p for p in CHEATS if _expect(p)["caught_by"] == "runtime"]


def _ids(folders):
    return [p.name for p in folders]


def _assert_well_formed(violations: list[str], files: dict[str, str]) -> None:
    for v in violations:
        match = LINE.match(v)
        assert match, f"not `path:line: what; fix` on one line: {v!r}"
        path, line = match.group(1), int(match.group(2))
        assert path in files, v
        assert 1 <= line <= files[path].count("\n") + 1, v


# ---------------------------------------------------------------------------------- fixtures


@pytest.mark.parametrize("folder", CHEATS + HONEST, ids=_ids(CHEATS + HONEST))
def test_fixture_follows_the_contract(folder):
    expect = _expect(folder)
    solution_dir = guard_case_solution(folder)
    read_solution(solution_dir)  # a valid solution folder
    if "solution" in expect:  # a sibling's files, evaluated again under other settings
        assert (solution_dir / "expect.json").is_file() and "solution" not in _expect(solution_dir)
        assert sorted(p.name for p in folder.iterdir()) == ["expect.json"]
        assert expect["config"] and set(expect["config"]) <= set(EnvConfig.__dataclass_fields__)
    task = expect["task"]
    if task.startswith("kernelbench:"):
        assert re.fullmatch(r"kernelbench:L[123]:\d+", task)
    elif task.endswith(".py"):
        assert (REPO / task).is_file()
    else:
        assert (BUILTIN_DIR / f"{task}.py").is_file()
    if folder in CHEATS:
        assert expect["class"] in range(1, 9)
        assert expect["caught_by"] in ("static", "runtime")
        assert set(expect["expect_status"]) <= {s.value for s in Status}
        assert "ok" not in expect["expect_status"] or expect.get("max_reward", -1) <= 1
        assert expect["why"] and "\n" not in expect["why"]
        if expect["caught_by"] == "static":
            assert expect["expect_status"] == ["violation"]


def test_every_guard_class_has_several_cheats_and_runtime_variants():
    classes = [_expect(p)["class"] for p in CHEATS]
    runtime = {_expect(p)["class"] for p in RUNTIME}
    assert len(CHEATS) >= 30 and len(HONEST) >= 6
    assert all(classes.count(c) >= 3 for c in range(1, 9)), classes
    assert runtime == set(range(1, 9))


@pytest.mark.parametrize("folder", STATIC, ids=_ids(STATIC))
def test_static_cheat_is_flagged_by_file_line_and_rule(folder):
    solution = read_solution(guard_case_solution(folder))
    violations = check_static(solution)
    assert violations
    _assert_well_formed(violations, solution.files)


@pytest.mark.parametrize("folder", RUNTIME + HONEST, ids=_ids(RUNTIME + HONEST))
def test_runtime_cheats_and_honest_solutions_pass_the_static_guard(folder):
    assert check_static(read_solution(guard_case_solution(folder))) == []


# ------------------------------------------------------------------------- Python rules

MODEL = """\
import cuda_extension
import torch
import torch.nn as nn
import torch.nn.functional as F
{header}

class ModelNew(nn.Module):
    def __init__(self, n: int = 8):
        super().__init__()
        self.linear = nn.Linear(n, n)
        self.weight = nn.Parameter(torch.ones(n) + 0.1 * torch.randn(n))
        self.register_buffer("mask", torch.tril(torch.ones(n, n)))
        self.cache: dict = {{}}
        self.seen: set = set()
{init}

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        out = cuda_extension.unary(x, 1.0)
{body}
        return out
"""


def py(body: str = "", header: str = "", init: str = "") -> list[str]:
    code = MODEL.format(
        header=textwrap.dedent(header),
        init=textwrap.indent(textwrap.dedent(init), " " * 8),
        body=textwrap.indent(textwrap.dedent(body), " " * 8),
    )
    files = {"model_new.py": code}
    violations = check_static(solution_from_files(files))
    _assert_well_formed(violations, files)
    return violations


def test_the_template_itself_is_clean():
    assert py() == []


@pytest.mark.parametrize(
    "header, body, named",
    [
        ("", "out = torch.relu(out)", "torch.relu"),
        ("", "out = F.gelu(out)", "torch.nn.functional.gelu"),
        ("from torch.nn.functional import gelu as g", "out = g(out)", "torch.nn.functional.gelu"),
        ("G = torch.nn.functional", "out = G.gelu(out)", "torch.nn.functional.gelu"),
        ("t = torch\nact = t.softmax", "out = act(out, -1)", "torch.softmax"),
        (
            "from torch import nn as _nn",
            "out = _nn.functional.silu(out)",
            "torch.nn.functional.silu",
        ),
        ("", "out = torch.ops.aten.relu.default(out)", "torch.ops.aten.relu.default"),
        ("", "out = torch.Tensor.add(out, x)", "torch.Tensor.add"),
        ("", "out = (torch).exp(out)", "torch.exp"),
        ("import functools", "out = functools.partial(torch.relu)(out)", "torch.relu"),
        ("", "out = torch.matmul(x, y)", "torch.matmul"),
        ("", "out = torch.where(x > 0, x, y)", "torch.where"),
    ],
)
def test_torch_compute_is_caught_through_aliases(header, body, named):
    violations = py(body, header=header)
    assert any(f" {named} (" in v for v in violations), violations


def test_a_torch_function_stored_in_init_is_caught():
    [v] = py(init="self.act = F.gelu", body="out = self.act(out)")
    assert "uses torch.nn.functional.gelu" in v


def test_a_module_object_passed_around_is_caught():
    assert any("passes the module torch around" in v for v in py("out = [torch][0].relu(out)"))
    assert any("passes the module torch.nn.functional" in v for v in py(init="self.f = F"))


@pytest.mark.parametrize(
    "body, rule",
    [
        ("out = x.sum()", ".sum()"),
        ("out = out.relu()", ".relu()"),
        ("out = x.matmul(y)", ".matmul()"),
        ("out = self.weight.exp()", ".exp()"),
        ("out = self.linear.weight.t().mul(2)", ".mul()"),
        ("out = x.sort()[0]", ".sort()"),
        ("out = x.to(torch.float16)", ".to()"),
        ("out = x.to(device=x.device, dtype=torch.bfloat16)", ".to()"),
        ("out = x.half()", ".half()"),
        ("z = x.cuda()\nout = z * 2", "applies *"),
        ("v = x.item()", ".item()"),
        ("out = x @ y", "@ operator"),
        ("out = x + 1", "applies +"),
        ("out = -x", "applies -"),
        ("out = x * self.weight", "applies *"),
        ("out += x", "applies +"),
        ("mask = x > 0", "compares tensors"),
        ("out = x[x > 0]", "indexes a tensor with a tensor"),
        ("out[:, 0] = 0", "writes into a tensor slice"),
        ("v = abs(x)", "applies abs()"),
        ("a, b = x.chunk(2)\nout = a * b", "applies *"),
        ("z = out.view(-1)\nout = z * 2", "applies *"),
        ("z = torch.flatten(out, 1)\nout = z * 2", "applies *"),
        ("a, b = torch.chunk(x, 2)\nout = a * b", "applies *"),
        ("out = self.linear(x)", "the torch module self.linear"),
        ("out = nn.GELU()(x)", "builds torch.nn.GELU outside __init__"),
    ],
)
def test_tensor_methods_operators_and_held_modules_are_caught(body, rule):
    violations = py(body)
    assert any(rule in v for v in violations), violations


@pytest.mark.parametrize(
    "body",
    [
        "n = x.numel()\nblocks = (n + 255) // 256\nout = cuda_extension.unary(x, float(blocks))",
        "rows = x.shape[0] * 2\nout = out.view(rows // 2, -1)",
        "out = out.reshape(x.shape[0], -1).contiguous()",
        "if x.dim() != 2 or x.size(-1) != y.size(-1):\n    raise ValueError('shapes')",
        "assert x.is_contiguous() and x.dtype == torch.float32 and x.is_cuda",
        "key = (x.data_ptr(), tuple(x.shape), x.device)",
        "out = out.unsqueeze(0).transpose(0, 1).permute(1, 0, 2).squeeze(1)",
        "buf = torch.empty_like(x)\nbuf2 = torch.empty(x.numel(), device=x.device, dtype=x.dtype)",
        "z = torch.zeros(4, device=x.device)\nz2 = torch.zeros_like(x)",
        "if y is None or isinstance(y, torch.Tensor):\n    pass",
        "for v in self.cache.values():\n    print(v)\nself.seen.add(1)",
        "out = cuda_extension.gemm(x, self.linear.weight, self.linear.bias)",
        "w = self.weight\nout = cuda_extension.scale(out, w, self.linear.in_features)",
        "import math\nscale = math.sqrt(x.shape[-1]) * 2.0",
        "a, b = x.split(2)\nout = cuda_extension.add(a, b)",
        "out = torch.flatten(out, 1)\nout = torch.reshape(out, (x.shape[0], -1))",
        "out = torch.unsqueeze(torch.transpose(out, 0, 1), 0).squeeze(0)",
        "a, b = torch.split(x, 2)\nout = cuda_extension.add(torch.permute(a, (1, 0)), b)",
        "n = torch.numel(x)\nout = torch.narrow(out, 0, 0, 1)",
        "x = x.cuda().float().contiguous()\nw = self.weight.to(x.device)",
        "out = cuda_extension.unary(x.to(device='cuda', dtype=torch.float32))",
        "torch.cuda.synchronize()\nout = cuda_extension.unary(x)\ntorch.cuda.synchronize()",
        "s = torch.cuda.current_stream().cuda_stream\nout = cuda_extension.unary(x, s)",
    ],
)
def test_allocation_metadata_and_views_are_allowed(body):
    assert py(body) == []


def test_init_may_build_parameters_buffers_and_holders():
    init = """
        self.net = nn.Sequential(nn.Linear(n, n), nn.ReLU())
        nn.init.kaiming_uniform_(self.linear.weight)
        self.scale = 1.0 / n
    """
    assert py(init=init, body="out = cuda_extension.mlp(x, self.net[0].weight)") == []
    assert any("self.net" in v for v in py(init=init, body="out = self.net(x)"))


@pytest.mark.parametrize(
    "init, body, rule",
    [
        ("self.fn = torch.compile(cuda_extension.unary)", "", "calls torch.compile"),
        ("torch.manual_seed(0)", "", "torch's RNG state"),
        ("self.side = torch.cuda.Stream()", "", "calls torch.cuda.Stream"),
        ("", "torch.cuda.set_sync_debug_mode(0)", "calls torch.cuda.set_sync_debug_mode"),
        ("", "torch.cuda.synchronize = print", "monkey-patching"),
        ("", "torch.cuda.current_stream().__class__.query = print", "monkey-patching"),
        ("", "x.__class__.__eq__ = print", "monkey-patching"),
        ("", "torch.testing.assert_close(out, x)", "comparing outputs is the harness's job"),
        ("", "torch.backends.cuda.matmul.allow_tf32 = True", "monkey-patching"),
        ("", "torch.set_num_threads(1)", "a global PyTorch setting"),
        ("", "torch.save(out, 'out.pt')", "files, processes or profiling"),
        ("", "torch.autograd.profiler.profile().__enter__()", "files, processes or profiling"),
        ("", "torch.autograd._disable_profiler()", "_disable_profiler"),
        ("self.register_forward_hook(print)", "", ".register_forward_hook()"),
    ],
)
def test_harness_territory_is_refused_even_in_init(init, body, rule):
    assert any(rule in v for v in py(body, init=init)), py(body, init=init)


@pytest.mark.parametrize(
    "header, body, rule",
    [
        ("import os", "", "imports os"),
        ("import subprocess", "", "imports subprocess"),
        ("import numpy as np", "", "imports numpy"),
        ("import importlib", "", "imports importlib"),
        ("import operator", "out = operator.mul(out, 2)", "imports operator"),
        ("import time", "", "clocks; timing belongs to the harness"),
        ("from os import path", "", "imports os"),
        ("from . import helpers", "", "relative import"),
        ("from math import *", "", "imports * from math"),
        ("", "f = getattr(torch, 'relu')", "uses getattr (reflection)"),
        ("", "setattr(self, 'x', 1)", "uses setattr"),
        ("", "eval('1 + 1')", "uses eval"),
        ("", "exec('out = out')", "uses exec"),
        ("", "compile('1', 'f', 'eval')", "uses compile"),
        ("", "m = __import__('model')", "uses __import__"),
        ("", "g = globals()", "uses globals"),
        ("", "v = vars(torch)", "uses vars"),
        ("", "open('model.py', 'w').write('')", "uses open (file access)"),
        ("", "exit(0)", "uses exit (ending the process)"),
        ("", "raise SystemExit(0)", "uses SystemExit"),
        ("", "f = torch.__dict__['relu']", "uses .__dict__"),
        ("", "b = __builtins__", "uses __builtins__"),
        ("", "p = __file__", "uses __file__"),
        ("", "c = x.__class__.__mro__", "uses .__mro__"),
    ],
)
def test_imports_and_dynamic_access_are_refused(header, body, rule):
    violations = py(body, header=header)
    assert any(rule in v for v in violations), violations


def test_the_import_allow_list_is_configurable():
    files = {"model_new.py": MODEL.format(header="import numpy", init="", body="")}
    solution = solution_from_files(files)
    assert check_static(solution)
    assert check_static(solution, StaticRules(allowed_imports=ALLOWED_IMPORTS | {"numpy"})) == []


def test_a_parameter_named_like_a_builtin_is_not_the_builtin():
    code = MODEL.format(header="", init="", body="").replace(
        "def forward(self, x: torch.Tensor, y: torch.Tensor)", "def forward(self, x, input)"
    )
    assert check_static(solution_from_files({"model_new.py": code})) == []


@pytest.mark.parametrize(
    "header, body, target",
    [
        ("torch.allclose = lambda *a, **k: True", "", "torch.allclose"),
        ("F.gelu = lambda x: x", "", "F.gelu"),
        ("torch.Tensor.add = torch.Tensor.sub", "", "torch.Tensor.add"),
        ("import math\nmath.pi = 3.0", "", "math.pi"),
        ("cuda_extension.unary = print", "", "cuda_extension.unary"),
        ("del torch.relu", "", "deletes torch.relu"),
        ("", "torch.cuda.Event.elapsed_time = lambda s, e: 0.0", "torch.cuda.Event.elapsed_time"),
    ],
)
def test_monkey_patching_is_caught(header, body, target):
    violations = py(body, header=header)
    assert any(target in v and "monkey-patching" in v for v in violations), violations


def test_own_attributes_may_be_assigned():
    assert py("self.calls = 1\nself.linear.weight.requires_grad = False") == []


def test_the_reference_is_refused_however_reached():
    assert any("imports model" in v for v in py(header="import model"))
    assert any(":5: references Model" in v for v in py(header="from model import Model"))
    assert any(":19: references Model" in v for v in py("ref = self.ns.Model"))
    code = "import cuda_extension\nfrom model import Model\n\n\nclass ModelNew(Model):\n    pass\n"
    violations = check_static(solution_from_files({"model_new.py": code}))
    assert any(v.startswith("model_new.py:5: references Model") for v in violations)


@pytest.mark.parametrize(
    "source, rule",
    [
        ("class ModelNew(torch.Tensor):\n    pass", "subclasses torch.Tensor"),
        ("class ModelNew(nn.Module, metaclass=type):\n    pass", "metaclass"),
        ("class ModelNew(nn.Module):\n    def __call__(self, x):\n        return x", "__call__"),
        (
            "class ModelNew(nn.Module):\n    def __getattr__(self, n):\n        return n",
            "__getattr__",
        ),
        (
            "class T(torch.Tensor):\n    def __torch_function__(cls):\n        pass",
            "__torch_function__",
        ),
        ("class Model(nn.Module):\n    pass", "defines a class named Model"),
    ],
)
def test_class_tricks_are_refused(source, rule):
    code = f"import cuda_extension\nimport torch\nimport torch.nn as nn\n\n\n{source}\n"
    assert any(rule in v for v in check_static(solution_from_files({"model_new.py": code})))


def test_modelnew_must_call_the_extension():
    code = (
        "import torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n"
        "    def forward(self, x):\n        return x\n"
    )
    [v] = check_static(solution_from_files({"model_new.py": code}))
    assert v.startswith("model_new.py:4: ModelNew never calls cuda_extension")
    code = code.replace("import torch.nn", "from cuda_extension import unary\nimport torch.nn")
    assert (
        check_static(
            solution_from_files({"model_new.py": code.replace("return x", "return unary(x)")})
        )
        == []
    )


def test_a_syntax_error_is_one_line():
    [v] = check_static(solution_from_files({"model_new.py": "def forward(:\n"}))
    assert v.startswith("model_new.py:1: does not parse")


# ---------------------------------------------------------------------------- C++ rules


def cpp(source: str, path: str = "kernels/op_binding.cpp", extra: dict | None = None) -> list[str]:
    files = {
        "model_new.py": "import cuda_extension\n",
        path: textwrap.dedent(source),
        **(extra or {}),
    }
    violations = check_static(solution_from_files(files))
    _assert_well_formed(violations, files)
    return violations


ALLOWED_HEADERS = """
    #include <cuda_runtime.h>
    #include <cuda_fp16.h>
    #include <cuda_bf16.h>
    #include <cooperative_groups.h>
    #include <cooperative_groups/reduce.h>
    #include <cub/block/block_reduce.cuh>
    #include <cuda/std/cstdint>
    #include <cublas_v2.h>
    #include <cublasLt.h>
    #include <cudnn.h>
    #include <torch/extension.h>
    #include <ATen/cuda/CUDAContext.h>
    #include <c10/cuda/CUDAStream.h>
    #include <c10/cuda/CUDAGuard.h>
    #include <vector>
    #include <cmath>
    #include <stdint.h>
    #include "binding_registry.h"
    #include "common.cuh"
"""


def test_allowed_headers_and_own_headers_pass():
    assert cpp(ALLOWED_HEADERS, extra={"kernels/common.cuh": "#pragma once\n"}) == []


@pytest.mark.parametrize(
    "include, reason",
    [
        ("<ATen/native/cuda/Loops.cuh>", "ATen's internal kernels"),
        ("<ATen/ops/gelu.h>", "ATen's operators"),
        ("<ATen/cuda/CUDABlas.h>", "torch's own GEMM wrappers"),
        ("<cutlass/gemm/device/gemm.h>", "CUTLASS"),
        ("<thrust/sort.h>", "thrust"),
        ("<unistd.h>", "system calls"),
        ("<sys/mman.h>", "system calls"),
        ("<dlfcn.h>", "dynamic loading"),
        ("<fstream>", "file access"),
        ("<thread>", "threads"),
        ("<chrono>", "clocks"),
        ("<pybind11/embed.h>", "pybind11 itself"),
        ("<Python.h>", "the Python C API"),
        ("<curand_kernel.h>", "an RNG library"),
        ('"missing.h"', "include only"),
        ('"../../binding_registry.h"', "include only"),
        ("HEADER_NAME", "computed #include"),
    ],
)
def test_includes_off_the_allow_list_are_refused(include, reason):
    [v] = cpp(f"\n#include {include}\n")
    assert v.startswith("kernels/op_binding.cpp:2: ") and reason in v


def test_include_next_is_refused():
    assert any("#include_next" in v for v in cpp("#include_next <vector>\n"))


def test_comments_and_strings_are_not_code():
    source = r"""
        // at::matmul(x, y); system("ls");
        /* fork(); x.sum();
           torch::softmax */
        const char* a = "at::relu(x) and popen";
        const char* b = R"raw(std::thread t; x.mm(y))raw";
        const char c = '\'';
        int n = 1'000'000;
    """
    assert cpp(source) == []


@pytest.mark.parametrize(
    "code, rule",
    [
        ("auto y = at::matmul(x, w);", "at::matmul"),
        ("auto y = torch::softmax(x, -1);", "torch::softmax"),
        ("auto y = at::native::add(x, w);", "ATen's internal kernels"),
        (
            "at::cuda::blas::gemm<float>('t', 'n', 1, 1, 1, 1.f, a, 1, b, 1, 0.f, c, 1);",
            "GEMM wrappers",
        ),
        ("auto y = at::_ops::relu::call(x);", "at::_ops::relu::call"),
        ("auto y = at::from_blob(p, {4}, x.options());", "wraps memory"),
        ("auto y = x.matmul(w);", ".matmul()"),
        ("x.add_(w);", ".add_()"),
        ("auto s = x.sum();", ".sum()"),
        ("auto r = p->relu();", ".relu()"),
        ("float v = x.item<float>();", ".item()"),
        ("auto y = x.index({0});", ".index()"),
        ("using namespace at;", "using namespace at"),
        ("namespace A = at;", "aliases the namespace at"),
        ("using at::relu;", "at::relu"),
        ("auto add = &at::Tensor::add;", "at::Tensor::add"),
    ],
)
def test_aten_compute_in_bindings_is_caught(code, rule):
    violations = cpp(f"void f(at::Tensor x, at::Tensor w, at::Tensor* p) {{\n    {code}\n}}\n")
    assert any(rule in v and v.startswith("kernels/op_binding.cpp:2:") for v in violations), (
        violations
    )


def test_aten_allocation_metadata_and_stream_are_allowed():
    source = """
        torch::Tensor f(torch::Tensor x, const at::Tensor& w) {
            TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "x");
            TORCH_CHECK(x.dim() == 2 && x.size(1) == w.size(0) && x.is_contiguous(), "shape");
            c10::cuda::CUDAGuard guard(x.device());
            at::cuda::OptionalCUDAGuard other(x.device());
            cudaStream_t s = at::cuda::getCurrentCUDAStream().stream();
            cudaStream_t t = c10::cuda::getCurrentCUDAStream();
            cublasHandle_t h = at::cuda::getCurrentCUDABlasHandle();
            auto a = at::empty({x.size(0)}, x.options().dtype(at::kHalf));
            auto b = torch::empty_like(x, torch::MemoryFormat::Contiguous);
            auto c = at::zeros({4}, torch::dtype(torch::kFloat32).device(torch::kCUDA));
            auto d = x.contiguous().view({-1}).reshape({2, -1});
            at::ScalarType st = at::ScalarType::Float;
            at::IntArrayRef sizes = x.sizes();
            std::vector<int64_t> shape(sizes.begin(), sizes.end());
            shape.resize(3);
            c10::Half half;
            float* p = x.data_ptr<float>();
            int64_t n = x.numel() + x.stride(0) + x.element_size();
            return b;
        }
    """
    assert cpp(source) == []


@pytest.mark.parametrize(
    "code, named",
    [
        ('system("ls");', "system"),
        ('FILE* f = popen("ls", "r");', "popen"),
        ("if (fork() == 0) {}", "fork"),
        ("execvp(argv[0], argv);", "execvp"),
        ("kill(getppid(), 9);", "kill"),
        ('void* h = dlopen("libc.so.6", 2);', "dlopen"),
        ('FILE* f = fopen("model.py", "w");', "fopen"),
        ('const char* e = getenv("HOME");', "getenv"),
        ("std::thread t([] {});", "std::thread"),
        ("auto fut = std::async([] { return 1; });", "std::async"),
        ('std::ofstream out("binding.cpp");', "std::ofstream"),
        ("std::exit(0);", "std::exit"),
        ("std::quick_exit(0);", "std::quick_exit"),
        ("_exit(0);", "_exit"),
        ("abort();", "abort"),
        ('::write(1, "x", 1);', "write"),
        ("auto w = &write;", "write"),
        ("exit(0);", "exit"),
    ],
)
def test_process_file_and_environment_access_is_caught(code, named):
    violations = cpp(f"void f(char** argv) {{\n    {code}\n}}\n")
    assert any(f"uses {named} (" in v for v in violations), violations


def test_own_helpers_named_like_system_calls_are_allowed():
    source = """
        __device__ float read(const float* p) { return p[0]; }
        __global__ void k(const float* x, float* y) {
            bool write = true;
            if (write) y[0] = read(x);
        }
    """
    assert cpp(source, path="kernels/k.cu") == []


def test_declaring_a_system_call_yourself_does_not_hide_it():
    violations = cpp('extern "C" int kill(int, int);\nvoid f() { kill(1, 9); }\n')
    assert violations and all("uses kill" in v for v in violations)


@pytest.mark.parametrize(
    "code, rule",
    [
        ("cudaDeviceReset();", "cudaDeviceReset"),
        ("cudaSetDevice(1);", "cudaSetDevice"),
        ("cudaProfilerStop();", "cudaProfilerStop"),
        ("cudaIpcOpenMemHandle(&p, h, 1);", "cudaIpcOpenMemHandle"),
        ("cuCtxDestroy(ctx);", "cuCtxDestroy"),
        ("cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);", "cuptiActivityDisable"),
        ('pybind11::module_::import("torch");', "pybind11::module_::import"),
        ('py::exec("print(1)");', "py::exec"),
        ('obj.attr("allclose") = f;', ".attr()"),
        ('PyRun_SimpleString("1");', "the Python C API"),
        ("cub::DeviceReduce::Sum(t, b, x, y, n);", "cub's device-wide algorithms"),
        ("thrust::sort(p, p + 4);", "thrust launches its own kernels"),
    ],
)
def test_device_state_python_and_libraries_are_caught(code, rule):
    violations = cpp(f"void f() {{\n    {code}\n}}\n")
    assert any(rule in v for v in violations), violations


def test_macros_and_attributes_that_change_loading_are_caught():
    source = """
        PYBIND11_MODULE(other, m) {}
        TORCH_LIBRARY_IMPL(aten, CUDA, m) {}
        __attribute__((constructor)) static void early() {}
    """
    violations = cpp(source)
    assert [v.split(":")[1] for v in violations] == ["2", "3", "4"]


def test_allowed_cuda_runtime_and_pybind_args_pass():
    source = """
        void f(float* p, size_t n, cudaStream_t s) {
            cudaStream_t side;
            cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
            cudaMalloc(&p, n);
            cudaMemsetAsync(p, 0, n, s);
            cudaDeviceSynchronize();
            cudaError_t e = cudaGetLastError();
            cub::BlockReduce<float, 256> reduce;
        }
        REGISTER_BINDING(f, f, py::arg("p"), pybind11::arg("n"));
    """
    assert cpp(source) == []


@pytest.mark.parametrize("name", ["binding_registry.h", "binding.cpp"])
def test_shipping_infrastructure_files_is_refused(name):
    violations = cpp("#pragma once\n", path=f"kernels/{name}")
    assert any(f"ships {name}" in v for v in violations)
