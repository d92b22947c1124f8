"""The harness's side of a Triton file's compilation, on the CPU: ptxas on a kernel's PTX and the
host compiler on Triton's C modules, each cached by content, and what the candidate's process may
not ask of them (other module names, a changed driver source, flags Triton never passes)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from cuda_agent.sandbox import Check, Rule
from cuda_agent.sandbox.process.messages import TritonCubin, TritonLauncher
from cuda_agent.sandbox.single_file.triton_build import (
    DRIVER_MODULE,
    LAUNCHER_MODULE,
    TritonBuildError,
    TritonTools,
    build_launcher,
    entry_names,
    run_ptxas,
)
from cuda_agent.sandbox.verdict import Status

PTX = (Path(__file__).parents[2] / "fixtures" / "triton" / "fill_index.ptx").read_text()
PTXAS = shutil.which("ptxas")
CC = shutil.which("gcc") or shutil.which("cc")
FLAGS = ("-lineinfo", "-v", "--gpu-name=sm_90a")
DRIVER = "int triton_driver_marker(void) { return 7; }\n"


class _Tools(TritonTools):
    """Triton's tools with the CUDA toolkit's ptxas in place of Triton's own bundled one."""

    def ptxas(self, arch: int) -> tuple[str, str]:
        version = subprocess.run([PTXAS, "--version"], capture_output=True, text=True).stdout
        return PTXAS, version


@pytest.fixture
def tools() -> TritonTools:
    if PTXAS is None or CC is None:
        pytest.skip("needs the CUDA toolkit's ptxas and a C compiler")
    return _Tools("test", CC, (), (), (), DRIVER)


def test_ptxas_builds_the_cubin_once_and_names_its_kernel(tools, tmp_path):
    request = TritonCubin(ptx=PTX, flags=FLAGS, arch=90)
    cubin, ran = run_ptxas(request, tools, tmp_path, 60.0)
    assert cubin[:4] == b"\x7fELF" and ran
    again, ran_again = run_ptxas(request, tools, tmp_path, 60.0)
    assert again == cubin and not ran_again
    assert entry_names(PTX) == {"fill_index"}


@pytest.mark.parametrize("flag", ["-o/tmp/elsewhere", "--input-as-string", "-arch=sm_80 -v"])
def test_ptxas_takes_only_the_flags_triton_passes(tools, tmp_path, flag):
    with pytest.raises(TritonBuildError) as err:
        run_ptxas(TritonCubin(ptx=PTX, flags=(*FLAGS, flag), arch=90), tools, tmp_path, 60.0)
    assert err.value.failure.status == Status.VIOLATION
    assert flag in err.value.failure.message
    assert [v.rule for v in err.value.failure.violations] == [Rule.PTXAS_FLAGS]


def test_a_ptxas_error_is_the_kernel_s_compile_error(tools, tmp_path):
    broken = PTX.replace("st.global.u32", "st.global.nonsense")
    with pytest.raises(TritonBuildError) as err:
        run_ptxas(TritonCubin(ptx=broken, flags=FLAGS, arch=90), tools, tmp_path, 60.0)
    assert err.value.failure.status == Status.COMPILE_ERROR
    assert "ptxas on a Triton kernel" in err.value.failure.message


def test_triton_s_c_modules_are_compiled_once(tools, tmp_path):
    launcher = TritonLauncher(name=LAUNCHER_MODULE, source="int launch_marker(void) { return 1; }")
    so, ran = build_launcher(launcher, tools, tmp_path, 60.0)
    assert so.is_file() and so.name.startswith(LAUNCHER_MODULE) and ran
    assert build_launcher(launcher, tools, tmp_path, 60.0) == (so, False)
    driver, _ = build_launcher(TritonLauncher(DRIVER_MODULE, DRIVER), tools, tmp_path, 60.0)
    assert driver.is_file() and driver != so


@pytest.mark.parametrize(
    ("name", "source", "rule"),
    [
        ("my_helper", "int f(void) { return 0; }", Rule.TRITON_MODULE),
        (DRIVER_MODULE, DRIVER + "int extra;\n", Rule.TRITON_DRIVER),
    ],
    ids=["other_module", "changed_driver"],
)
def test_only_the_modules_triton_generates_are_compiled(tools, tmp_path, name, source, rule):
    with pytest.raises(TritonBuildError) as err:
        build_launcher(TritonLauncher(name=name, source=source), tools, tmp_path, 60.0)
    assert err.value.failure.status == Status.VIOLATION
    [violation] = err.value.failure.violations
    assert (violation.rule, violation.check) == (rule, Check.RUNTIME_GUARD)
    assert not list(tmp_path.rglob("*.so"))


def test_a_c_error_in_a_launcher_is_a_compile_error(tools, tmp_path):
    with pytest.raises(TritonBuildError) as err:
        build_launcher(TritonLauncher(LAUNCHER_MODULE, "int f(void) {"), tools, tmp_path, 60.0)
    assert err.value.failure.status == Status.COMPILE_ERROR
