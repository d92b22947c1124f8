"""The rules profiles on the static guard: PyTorch compute beside a kernel is refused by the
cuda-agent rules and allowed, listed with file:line, by the kernelbench rules; every cheat whose
trick is more than PyTorch doing the work is refused under both, and each cheat whose only trick
is that is named below as passing the kernelbench rules."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest

from cuda_agent.errors import UserError
from cuda_agent.sandbox import Check, EnvConfig, Rule, read_solution, solution_from_files
from cuda_agent.sandbox.guard import static_cpp
from cuda_agent.sandbox.guard.findings import judge
from cuda_agent.sandbox.guard.profile import Family, RulesProfile, refuses, rules_profile
from cuda_agent.sandbox.guard.rules import CPP_FAMILIES, MESSAGES, PY_FAMILIES
from cuda_agent.sandbox.guard.static import check_static, static_findings
from tests.sandbox.conftest import guard_case_solution

SANDBOX = Path(__file__).parents[1]
RULES = SANDBOX / "rules"
CHEATS = sorted(p for p in (SANDBOX / "cheats").iterdir() if p.is_dir())
HONEST = sorted(p for p in (SANDBOX / "honest").iterdir() if p.is_dir())
CUDA_AGENT, KERNELBENCH = RulesProfile.CUDA_AGENT, RulesProfile.KERNELBENCH


def _expect(folder: Path) -> dict:
    return json.loads((folder / "expect.json").read_text())


STATIC = [p for p in CHEATS if _expect(p)["caught_by"] == "static"]
RUNTIME = [p for p in CHEATS if _expect(p)["caught_by"] == "runtime"]
# The static cheats whose only trick is PyTorch doing the work: the kernelbench rules allow and
# list them (the op they list first). Every other static cheat is refused by both profiles.
ONLY_TORCH_COMPUTE = {
    "c1_at_native_in_binding": "<ATen/ops/relu_native.h>",
    "c1_aten_call_in_binding": "at::gelu",
    "c1_cuda_blas_wrapper": "<ATen/cuda/CUDABlas.h>",
    "c1_functional_alias_assign": "torch.nn.functional.gelu",
    "c1_gelu_alias_from_import": "torch.nn.functional.gelu",
    "c1_linear_module_call": "self.linear (torch.nn.Linear)",
    "c1_matmul_operator": "+",
    "c1_tensor_method_in_binding": ".mm()",
    "c1_tensor_methods": ".mul()",
    "c1_tensor_operator": "*",
    "c1_torch_gelu_in_forward": "torch.nn.functional.gelu",
    "c1_torch_ops_aten": "torch.ops.aten.gelu.default",
    "c1_unbound_tensor_method": "torch.Tensor.mul",
}


def _judged(folder: Path, profile: RulesProfile):
    return judge(static_findings(read_solution(folder)), profile)


# ---------------------------------------------------------------------------- the profiles


def test_a_profile_is_named_or_refused_with_the_choices():
    assert rules_profile("kernelbench") is KERNELBENCH
    assert EnvConfig().rules is CUDA_AGENT
    assert EnvConfig(rules="kernelbench").rules is KERNELBENCH
    with pytest.raises(UserError, match=r"^rules profile 'foo': choose cuda-agent, kernelbench$"):
        EnvConfig(rules="foo")


def test_integrity_refuses_under_every_profile_and_torch_compute_only_under_cuda_agent():
    assert all(refuses(p, Family.INTEGRITY) for p in RulesProfile)
    assert refuses(CUDA_AGENT, Family.TORCH_COMPUTE)
    assert not refuses(KERNELBENCH, Family.TORCH_COMPUTE)


def test_every_python_rule_has_a_family():
    assert set(MESSAGES) <= set(PY_FAMILIES)


def test_every_rule_with_a_family_has_a_rule_id():
    assert set(PY_FAMILIES) | set(CPP_FAMILIES) <= {r.value for r in Rule}


def test_every_cpp_rule_named_outright_has_a_family():
    """(The rules chosen between two, method or integrity_method and aten_compute or aten, are
    each met by the C++ cases below.)"""
    source = Path(static_cpp.__file__).read_text()
    named = set(re.findall(r'_Problem\(\s*"(\w+)"', source))
    assert len(named) > 10 and named <= set(CPP_FAMILIES), named - set(CPP_FAMILIES)


# ------------------------------------------------------------------------ partial kernels


def test_a_partial_kernel_is_refused_by_cuda_agent_and_listed_by_kernelbench():
    folder = RULES / "partial_add_relu"
    refused = _judged(folder, CUDA_AGENT)
    [relu] = refused.violations
    assert relu.message == (
        "model_new.py:16: calls torch.relu (PyTorch compute); write a kernel instead"
    )
    assert (relu.rule, relu.check) == (Rule.TORCH_COMPUTE, Check.STATIC_GUARD)
    assert not refused.torch_ops
    listed = _judged(folder, KERNELBENCH)
    assert listed.violations == ()
    assert [(o.op, o.file, o.line, o.layer) for o in listed.torch_ops] == [
        ("torch.relu", "model_new.py", 16, "static_python")
    ]


def test_a_kept_module_is_refused_by_cuda_agent_and_listed_by_kernelbench():
    folder = RULES / "kept_conv3d"
    refused = _judged(folder, CUDA_AGENT).violations
    assert any("self.conv (torch.nn.Conv3d" in v.message for v in refused)
    listed = _judged(folder, KERNELBENCH)
    assert listed.violations == ()
    assert [(o.op, o.file, o.line) for o in listed.torch_ops] == [
        ("self.conv (torch.nn.Conv3d)", "model_new.py", 17)
    ]


def test_the_cuda_agent_profile_judges_exactly_as_check_static():
    for folder in [
        RULES / "partial_add_relu",
        RULES / "kept_conv3d",
        *map(guard_case_solution, STATIC),
    ]:
        solution = read_solution(folder)
        judged = judge(static_findings(solution), CUDA_AGENT)
        assert [v.message for v in judged.violations] == check_static(solution)


def _py(body: str, init: str = "") -> str:
    return textwrap.dedent(
        """\
        import cuda_extension
        import torch
        import torch.nn as nn


        class ModelNew(nn.Module):
            def __init__(self):
                super().__init__()
        {init}

            def forward(self, x: torch.Tensor) -> torch.Tensor:
                out = cuda_extension.unary(x, 1.0)
        {body}
                return out
        """
    ).format(
        init=textwrap.indent(textwrap.dedent(init), " " * 8),
        body=textwrap.indent(textwrap.dedent(body), " " * 8),
    )


def _kernelbench(files: dict[str, str]):
    return judge(static_findings(solution_from_files(files)), KERNELBENCH)


@pytest.mark.parametrize(
    "body",
    [
        "out = out.mean(1) + torch.sigmoid(out).sum()",
        "out = out @ out.t()",
        "out = torch.nn.functional.layer_norm(out, out.shape[-1:])",
        "out = out.double()",
        "out[:, 0] = 0.0",
        "out = out.sum(dtype=torch.float64)",
    ],
)
def test_python_compute_is_listed_under_kernelbench(body):
    judged = _kernelbench({"model_new.py": _py(body)})
    assert judged.violations == () and judged.torch_ops, judged


@pytest.mark.parametrize(
    "body, init",
    [
        ("out = out.half().float()", ""),
        ("out = out.to(torch.bfloat16).float()", ""),
        ("out = torch.Tensor.half(out).float()", ""),
        ("out = torch.sum(out, 1, dtype=torch.float16)", ""),
        ("out = out.type(torch.HalfTensor)", ""),
        ("out.set_(x)", ""),
        ("out.record_stream(torch.cuda.current_stream())", ""),
        ("out = out.as_subclass(torch.Tensor)", ""),
        ("out = torch.compile(torch.relu)(out)", ""),
        ("torch.cuda.Stream()", ""),
        ("out = torch.ops.aten._to_copy(out, dtype=torch.float16)", ""),
        ("out = self.cache", "self.cache = None\ntorch.backends.cudnn.allow_tf32 = True"),
        ("torch.manual_seed(0)", ""),
        ("out = getattr(torch, 'relu')(out)", ""),
        ("torch.allclose = lambda *a, **k: True", ""),
    ],
)
def test_integrity_rules_refuse_python_under_kernelbench(body, init):
    assert _kernelbench({"model_new.py": _py(body, init)}).violations


BINDING = """\
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
{include}
#include "binding_registry.h"

extern "C" void launch_unary(const float* x, float* y, int64_t n, float a, cudaStream_t s);

torch::Tensor unary(torch::Tensor x, double alpha) {{
    torch::Tensor y = torch::empty_like(x);
    launch_unary(x.data_ptr<float>(), y.data_ptr<float>(), x.numel(), static_cast<float>(alpha),
                 c10::cuda::getCurrentCUDAStream().stream());
    {body}
}}

REGISTER_BINDING(unary, unary);
"""


def _binding(body: str, include: str = "") -> dict[str, str]:
    return {
        "model_new.py": _py(""),
        "kernels/unary_binding.cpp": BINDING.format(body=body, include=include),
    }


@pytest.mark.parametrize(
    "body, op",
    [
        ("return y.mean(1);", ".mean()"),
        ("return at::relu(y);", "at::relu"),
        ("return torch::softmax(y, 1);", "torch::softmax"),
        ('return at::native::gelu(y, "none");', "at::native::gelu"),
        ('return at::_ops::gelu::call(y, "none");', "at::_ops::gelu::call"),
        ("return y.to(torch::kFloat);", ".to()"),
    ],
)
def test_aten_compute_in_a_binding_is_listed_under_kernelbench(body, op):
    judged = _kernelbench(_binding(body))
    assert judged.violations == ()
    assert [(o.op, o.file, o.line, o.layer) for o in judged.torch_ops] == [
        (op, "kernels/unary_binding.cpp", 12, "static_cpp")
    ]


@pytest.mark.parametrize(
    "body, include",
    [
        ("return y.to(at::kHalf).to(at::kFloat);", ""),
        ("return y.half().float();", ""),
        ("return at::sum(y, {1}, false, at::kBFloat16);", ""),
        ("return at::from_blob(y.data_ptr(), {1});", ""),
        ("auto s = at::cuda::getStreamFromPool(); return y;", ""),
        ("c10::cuda::setCurrentCUDAStream(c10::cuda::getStreamFromPool()); return y;", ""),
        ("y.set_(x); return y;", ""),
        ("std::thread([] {}).detach(); return y;", ""),
        ("return y;", "#include <thrust/device_vector.h>"),
        ('pybind11::module_::import("model"); return y;', ""),
        ("std::exit(0); return y;", ""),
    ],
)
def test_integrity_rules_refuse_cpp_under_kernelbench(body, include):
    assert _kernelbench(_binding(body, include)).violations


# --------------------------------------------------------------------------- the cheat set


def test_the_cheats_named_as_only_torch_compute_are_static_cheats_of_class_1():
    names = {p.name: _expect(p) for p in STATIC}
    assert set(ONLY_TORCH_COMPUTE) <= set(names)
    assert all(names[n]["class"] == 1 for n in ONLY_TORCH_COMPUTE)


@pytest.mark.parametrize("profile", list(RulesProfile), ids=str)
@pytest.mark.parametrize("folder", STATIC, ids=[p.name for p in STATIC])
def test_each_static_cheat_under_each_profile(folder, profile):
    judged = _judged(guard_case_solution(folder), profile)
    if profile == KERNELBENCH and folder.name in ONLY_TORCH_COMPUTE:
        assert judged.violations == (), judged.violations  # allowed, and listed
        first = judged.torch_ops[0]
        assert first.op == ONLY_TORCH_COMPUTE[folder.name]
        assert first.file and first.line and first.layer in ("static_python", "static_cpp")
    else:
        assert judged.violations, f"{folder.name} passes the {profile} rules"


@pytest.mark.parametrize("folder", RUNTIME + HONEST, ids=[p.name for p in RUNTIME + HONEST])
def test_runtime_cheats_and_honest_solutions_read_alike_under_kernelbench(folder):
    judged = _judged(guard_case_solution(folder), KERNELBENCH)
    assert judged.violations == () and judged.torch_ops == ()


def test_the_no_kernel_solution_is_refused_under_both_profiles():
    folder = SANDBOX / "cheats" / "c7_identity_relu_python"
    for profile in RulesProfile:
        refused = _judged(folder, profile).violations
        assert any("never calls cuda_extension" in v.message for v in refused)
