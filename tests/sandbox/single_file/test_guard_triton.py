"""Triton single files under the static guard, read without Triton installed: an honest kernel
file passes, a @triton.jit body is device code the PyTorch compute rules skip while the
integrity rules still read it, Triton beyond its kernel language and launch helpers is refused,
and a file whose forward launches no kernel is refused as a CUDA file building no extension is."""

from __future__ import annotations

from pathlib import Path

import pytest

from cuda_agent.sandbox.guard.findings import judge
from cuda_agent.sandbox.guard.profile import Family, RulesProfile
from cuda_agent.sandbox.single_file.guard import file_findings

FIXTURES = Path(__file__).parents[2] / "fixtures" / "triton"
HONEST_STRINGS = Path(__file__).parent / "honest" / "strings" / "model_new.py"
INTEGRITY, COMPUTE = Family.INTEGRITY, Family.TORCH_COMPUTE
NO_KERNEL = (
    "ModelNew launches no Triton kernel (a @triton.jit function called as kernel[grid](...)); "
    "the work must run in your kernels"
)
INTERNALS = (
    "(Triton's compiler, runtime and driver internals, which the harness controls); use only "
    "triton.language and triton.jit, autotune, heuristics, Config, cdiv and next_power_of_2"
)
RELU = "calls torch.relu (PyTorch compute); write a kernel instead"


def found(text: str) -> list[tuple[Family, int, str]]:
    """Each finding as (family, line, message), the message without its `path:line: `."""
    return [
        (f.family, f.line, f.text.split(": ", 1)[1])
        for f in file_findings("model_new.py", text, "ModelNew")
    ]


def fixture(name: str) -> str:
    return (FIXTURES / f"{name}.py").read_text()


def _line(text: str, piece: str) -> int:
    """The 1-based line of `text` where `piece` first appears."""
    return text[: text.index(piece)].count("\n") + 1


@pytest.mark.parametrize("name", ["honest_add", "honest_softmax_autotune"])
def test_an_honest_triton_file_passes(name):
    assert found(fixture(name)) == []


def test_a_file_whose_kernel_is_never_launched_is_refused_and_its_torch_work_found():
    text = fixture("no_kernel")
    assert found(text) == [
        (INTEGRITY, _line(text, "class ModelNew"), NO_KERNEL),
        (COMPUTE, _line(text, "return torch.relu"), RELU),
    ]


def test_a_file_that_defines_no_kernel_is_refused():
    text = fixture("no_jit_defined")
    assert found(text) == [
        (INTEGRITY, _line(text, "class ModelNew"), NO_KERNEL),
        (COMPUTE, _line(text, "return x.clone()"), "calls the tensor method .clone() (PyTorch "
         "compute); write a kernel instead"),
    ]  # fmt: skip


def test_the_no_kernel_refusal_holds_under_kernelbench_too():
    judged = judge(file_findings("model_new.py", fixture("no_kernel"), "ModelNew"),
                   RulesProfile.KERNELBENCH)  # fmt: skip
    assert [v.message.split(": ", 1)[1] for v in judged.violations] == [NO_KERNEL]
    assert [o.op for o in judged.torch_ops] == ["torch.relu"]


def test_a_kernel_launched_only_from_a_helper_forward_never_calls_counts_for_nothing():
    text = fixture("partial_torch").replace("torch.relu(_add(a, b))", "torch.relu(a)")
    assert found(text) == [
        (INTEGRITY, _line(text, "class ModelNew"), NO_KERNEL),
        (COMPUTE, _line(text, "return torch.relu"), RELU),
    ]


def test_touching_triton_s_knobs_is_refused():
    text = fixture("knobs_tamper")
    target = "triton.knobs.runtime.add_stages_inspection_hook"
    assert found(text) == [
        (INTEGRITY, _line(text, target), f"assigns to {target} (monkey-patching a library); never "
         "modify torch or other modules"),
    ]  # fmt: skip


HONEST_ADD = fixture("honest_add")
FORWARD_END = "        return out\n"


@pytest.mark.parametrize(
    ("added", "message"),
    [
        ("from triton import knobs\n", f"imports triton.knobs {INTERNALS}"),
        ("import triton.runtime\n", "imports triton.runtime (Triton's compiler, runtime and "
         "driver internals, which the harness controls); import only "),
        ("from triton.compiler import compile\n", "imports triton.compiler (Triton's "),
        ("triton.set_allocator(None)\n", f"calls triton.set_allocator {INTERNALS}"),
        ("HOOK = triton.knobs.runtime.launch_enter_hook\n",
         f"uses triton.knobs.runtime.launch_enter_hook {INTERNALS}"),
        ("STREAM = triton.runtime.driver.active.get_current_stream()\n",
         f"calls triton.runtime.driver.active.get_current_stream {INTERNALS}"),
        ("BENCH = triton.testing.do_bench\n", f"uses triton.testing.do_bench {INTERNALS}"),
        ("TRITON = triton\n", f"uses triton {INTERNALS}"),
        ("HOOKS = tl.core.knobs.runtime\n", f"uses triton.language.core.knobs.runtime {INTERNALS}"),
        ("SEM = tl.core._unwrap_if_constexpr\n",
         f"uses triton.language.core._unwrap_if_constexpr {INTERNALS}"),
    ],
    ids=lambda v: v.strip() if v.endswith("\n") else "",
)  # fmt: skip
def test_triton_beyond_its_kernel_language_and_launch_helpers_is_refused(added, message):
    text = HONEST_ADD.replace("_BLOCK = 1024\n", f"_BLOCK = 1024\n{added}")
    (finding,) = found(text)
    assert finding[0] == INTEGRITY and finding[1] == _line(text, added), finding
    assert finding[2].startswith(message), finding


def test_the_kernel_language_and_libdevice_are_allowed():
    imports = (
        "import triton.language as tl\n"
        "import triton.language.extra.cuda.libdevice as cuda_libdevice\n"
        "from triton import cdiv, next_power_of_2\n"
        "from triton.language.extra import libdevice\n"
    )
    store = "tl.store(out_ptr + offsets, libdevice.fma(a, 1.0, cuda_libdevice.fmin(b, b)), "
    text = HONEST_ADD.replace("import triton.language as tl\n", imports)
    text = text.replace("tl.store(out_ptr + offsets, a + b, ", store)
    text = text.replace("triton.cdiv(n, _BLOCK)", "cdiv(n, next_power_of_2(_BLOCK))")
    assert found(text) == []


def test_a_partial_triton_file_is_refused_by_cuda_agent_and_listed_by_kernelbench():
    text = fixture("partial_torch")
    findings = file_findings("model_new.py", text, "ModelNew")
    refused = judge(findings, RulesProfile.CUDA_AGENT)
    [relu] = refused.violations
    assert relu.message == f"model_new.py:{_line(text, 'return torch.relu')}: {RELU}"
    listed = judge(findings, RulesProfile.KERNELBENCH)
    assert listed.violations == ()
    assert [(o.op, o.file, o.line, o.layer) for o in listed.torch_ops] == [
        ("torch.relu", "model_new.py", _line(text, "return torch.relu"), "static_python")
    ]


KERNEL_LINE = "    tl.store(out_ptr + offsets, a + b, mask=inside)\n"


def test_a_kernel_body_is_read_for_the_integrity_rules():
    cheats = {
        "    ref = Model\n": "references Model (the reference program); ModelNew must compute "
        "with your kernels",
        '    scale = getattr(tl, "exp")\n': "uses getattr (reflection); name attributes directly",
        "    names = globals()\n": "uses globals (namespaces as dicts); use names directly",
        "    import sys\n": "imports sys (the interpreter's own state); import only ",
        "    a = a.half()\n": "calls the tensor method .half() (PyTorch compute); write a kernel "
        "instead",
        "    torch.cuda.synchronize = None\n": "assigns to torch.cuda.synchronize (monkey-patching",
    }
    for line, message in cheats.items():
        text = HONEST_ADD.replace(KERNEL_LINE, line + KERNEL_LINE)
        (finding,) = found(text)
        assert finding[:2] == (INTEGRITY, _line(text, line)), finding
        assert finding[2].startswith(message), finding


def test_what_reads_as_torch_compute_in_a_kernel_body_is_the_kernel_s_own_work():
    body = (
        "    acc = tl.zeros([BLOCK], dtype=tl.float32) + a * b - (a @ b)\n"
        "    acc += tl.where(a > b, a, b).sum(axis=0) + abs(a) + max(a, b)\n"
        "    picked = a[inside]\n"
        "    out = torch.relu(a)\n"
    )
    assert found(HONEST_ADD.replace(KERNEL_LINE, body + KERNEL_LINE)) == []


def test_a_kernel_s_decorators_run_as_python_and_are_read_as_such():
    text = fixture("honest_softmax_autotune").replace(
        'triton.Config({"ROWS": 1}, num_warps=4),',
        'triton.Config({"ROWS": 1}, num_warps=4, pre_hook=lambda args: torch.relu(args["x"])),',
    )
    assert found(text) == [(COMPUTE, _line(text, "pre_hook="), RELU)]


def test_torch_compute_around_a_launch_is_found_as_in_a_cuda_file():
    text = HONEST_ADD.replace(FORWARD_END, "        out = out * 2\n" + FORWARD_END)
    message = "applies * to a tensor (PyTorch compute); write it in your kernel"
    assert found(text) == [(COMPUTE, _line(text, "out = out * 2"), message)]


def test_a_file_mixing_load_inline_and_triton_needs_only_one_of_them():
    extension = HONEST_STRINGS.read_text()
    assert found("import triton\n" + extension) == []  # the extension does the work
    launched = HONEST_ADD.replace(
        "import triton\n", "import triton\nfrom torch.utils.cpp_extension import load_inline\n"
    )
    assert found(launched) == []  # the kernel does; load_inline imported, never called
