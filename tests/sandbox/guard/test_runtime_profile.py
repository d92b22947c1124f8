"""The runtime guard under the rules profiles, on the CPU: aten compute the dispatcher saw and
PyTorch's kernels the GPU trace saw are refused by the cuda-agent rules and listed by the
kernelbench rules; an op that narrowed its floating-point inputs, and a forward that ran none of
the solution's kernels, are refused by both."""

from __future__ import annotations

from collections import Counter

import pytest
import torch

from cuda_agent.sandbox import Check, EnvConfig, Rule, Stage
from cuda_agent.sandbox.check.verify import check_outputs
from cuda_agent.sandbox.guard.findings import judge
from cuda_agent.sandbox.guard.profile import RulesProfile
from cuda_agent.sandbox.guard.runtime import Trace, _OpRecorder, judge_trace, trace_findings
from cuda_agent.sandbox.outcome import Head
from cuda_agent.sandbox.process.messages import Verified
from cuda_agent.sandbox.verdict import Status

CUDA_AGENT, KERNELBENCH = RulesProfile.CUDA_AGENT, RulesProfile.KERNELBENCH
OWN = {"add_kernel"}
ADD = "add_kernel(float const*, float const*, float*, long)"
TORCH_RELU = "void at::native::vectorized_elementwise_kernel<4, at::native::relu_functor>"
CUDNN = "sm80_xmma_fprop_implicit_gemm_f32f32_f32f32_nchwkcrs_cudnn"


def _recorded(fn) -> Trace:
    trace = Trace()
    with _OpRecorder(trace.ops, trace.lowered):
        fn()
    return trace


def _judged(trace: Trace, profile: RulesProfile):
    return judge(trace_findings(trace, OWN, profile), profile)


def _messages(judged) -> list[str]:
    return [v.message for v in judged.violations]


def test_dispatched_compute_is_refused_by_cuda_agent_and_listed_by_kernelbench():
    x = torch.randn(8, 8)
    trace = _recorded(lambda: torch.relu(torch.empty_like(x)))
    assert _messages(_judged(trace, CUDA_AGENT)) == judge_trace(trace, OWN)
    assert len(judge_trace(trace, OWN)) == 1 and "aten::relu" in judge_trace(trace, OWN)[0]
    [relu] = _judged(trace, CUDA_AGENT).violations
    assert (relu.rule, relu.check) == (Rule.DISPATCHED_COMPUTE, Check.RUNTIME_GUARD)
    listed = _judged(trace, KERNELBENCH)
    assert listed.violations == ()
    assert [(o.op, o.layer, o.file) for o in listed.torch_ops] == [
        ("aten::relu", "runtime_dispatch", None)
    ]


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: x.half().float(),
        lambda x: x.to(torch.bfloat16),
        lambda x: x.double().float(),  # float64 back to float32 narrows too
        lambda x: torch.mm(x.half(), x.half()),
    ],
)
def test_an_op_that_narrows_floats_is_refused_under_kernelbench(fn):
    x = torch.randn(8, 8)
    trace = _recorded(lambda: fn(x))
    assert trace.lowered
    assert {v.rule for v in _judged(trace, KERNELBENCH).violations} == {
        Rule.DISPATCHED_LOWER_PRECISION
    }


@pytest.mark.parametrize(
    "fn", [lambda x: x.double(), lambda x: torch.relu(x), lambda x: (x > 0).float()]
)
def test_an_op_that_keeps_or_widens_floats_is_listed_under_kernelbench(fn):
    x = torch.randn(8, 8)
    trace = _recorded(lambda: fn(x))
    assert not trace.lowered
    judged = _judged(trace, KERNELBENCH)
    assert judged.violations == () and judged.torch_ops


def test_the_recorder_without_a_lowered_counter_counts_ops_only():
    ops: Counter = Counter()
    with _OpRecorder(ops):
        torch.randn(4).half()
    assert ops["aten::_to_copy"] == 1


def test_pytorch_kernels_beside_the_solution_s_are_listed_by_kernelbench():
    trace = Trace(ops=Counter({"aten::relu": 1}), kernels=[ADD, TORCH_RELU])
    assert _messages(_judged(trace, CUDA_AGENT)) == judge_trace(trace, OWN)
    listed = _judged(trace, KERNELBENCH)
    assert listed.violations == ()
    assert {o.layer for o in listed.torch_ops} == {"runtime_dispatch", "runtime_kernels"}


@pytest.mark.parametrize("profile", list(RulesProfile), ids=str)
def test_a_forward_that_runs_none_of_its_kernels_is_refused_by_both(profile):
    trace = Trace(ops=Counter({"aten::relu": 1}), kernels=[TORCH_RELU])
    violations = _judged(trace, profile).violations
    [none] = [v for v in violations if "none of the extension's kernels ran" in v.message]
    assert (none.rule, none.check) == (Rule.NO_OWN_KERNEL, Check.RUNTIME_GUARD)


TORCH_ADD = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
    "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)"
)


@pytest.mark.parametrize("own", [{"add"}, {"native"}, {"vectorized_elementwise"}, {"float"}])
@pytest.mark.parametrize("profile", list(RulesProfile), ids=str)
def test_a_kernel_name_inside_pytorch_s_kernel_names_does_not_make_them_the_solution_s(
    own, profile
):
    # a file that defines a kernel it never launches, named to appear in PyTorch's kernel names
    trace = Trace(ops=Counter({"aten::add": 1}), kernels=[TORCH_ADD])
    violations = judge(trace_findings(trace, own, profile), profile).violations
    assert any("none of the extension's kernels ran" in v.message for v in violations)


@pytest.mark.parametrize("profile", list(RulesProfile), ids=str)
def test_the_solution_s_kernel_counts_by_whole_name_or_exactly(profile):
    templated = "void add_kernel<float>(float const*, float const*, float*, long)"
    namespaced = "(anonymous namespace)::add_kernel(float const*, float*, long)"
    for kernel in (ADD, templated, namespaced):
        trace = Trace(ops=Counter({"aten::empty": 1}), kernels=[kernel])
        assert judge(trace_findings(trace, OWN, profile), profile).violations == ()
    longer = Trace(ops=Counter({"aten::empty": 1}), kernels=["add_kernel_v2(float*, long)"])
    assert judge(trace_findings(longer, OWN, profile), profile).violations != ()


@pytest.mark.parametrize("profile", list(RulesProfile), ids=str)
def test_a_triton_kernel_named_like_inductor_s_is_the_solution_s_when_its_build_named_it(
    profile,
):
    own = Trace(ops=Counter({"aten::empty_like": 1}), kernels=["triton_add_kernel"])
    assert judge(trace_findings(own, {"triton_add_kernel"}, profile), profile).violations == ()
    inductor = Trace(ops=Counter(), kernels=["triton_poi_fused_add_0", "triton_add_kernel"])
    judged = judge(trace_findings(inductor, {"triton_add_kernel"}, profile), profile)
    if profile == CUDA_AGENT:
        assert any("triton_poi_fused_add_0" in v for v in _messages(judged))
    else:
        assert judged.violations == ()
        assert [o.op for o in judged.torch_ops] == ["triton_poi_fused_add_0"]


def test_library_kernels_count_as_the_solution_s_only_where_pytorch_computed_nothing():
    kept_conv = Trace(ops=Counter({"aten::convolution": 1}), kernels=[CUDNN])
    assert _messages(_judged(kept_conv, CUDA_AGENT)) == judge_trace(kept_conv, OWN)
    assert not any("none of" in v for v in judge_trace(kept_conv, OWN))  # as before profiles
    assert any("none of" in v for v in _messages(_judged(kept_conv, KERNELBENCH)))
    own_cublas = Trace(ops=Counter({"aten::empty": 1}), kernels=[CUDNN])
    for profile in RulesProfile:
        assert _judged(own_cublas, profile).violations == ()


class _Candidate:
    """A candidate process that answers Verify with one fixed trace and the expected output."""

    def __init__(self, trace: Trace, output):
        self.trace, self.output = trace, output

    def request(self, message):
        return Verified(outputs=[self.output], traces=[self.trace])


@pytest.mark.parametrize("profile", list(RulesProfile), ids=str)
def test_verification_refuses_or_lists_by_the_configured_profile(profile):
    expected = torch.relu(torch.randn(16))
    trace = Trace(ops=Counter({"aten::relu": 2}), kernels=[ADD, TORCH_RELU])
    head = Head("t", "h", Stage.VERIFY, None, "train", rules=profile)
    config = EnvConfig(rules=profile)
    pairs = [([torch.randn(16)], expected)]
    failure, _ = check_outputs(_Candidate(trace, expected), pairs, 1, 0, OWN, config, "set", head)
    if profile == CUDA_AGENT:
        assert failure is not None and failure.status == Status.VIOLATION
        assert head.torch_ops == []
    else:
        assert failure is None
        assert [o.op for o in head.torch_ops] == ["aten::relu", TORCH_RELU]
