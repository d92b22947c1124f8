"""Trimming real nvcc, g++ and ld output from broken sources compiled here."""

from __future__ import annotations

import os
import subprocess

import pytest

from cuda_agent.sandbox.build.compiler_output import trim_compiler_output

SORT_CPP = """#include <algorithm>
#include <vector>

struct NoLess { int x; };

void sort_them(std::vector<NoLess>& v) {
    std::sort(v.begin(), v.end());
}

int twice(int x) { return x * undefined_factor; }
"""

SORT_CU = """#include <algorithm>
#include <vector>

struct NoLess { int x; };

void sort_them(std::vector<NoLess>& v) { std::sort(v.begin(), v.end()); }

__global__ void k(float* a) { a[0] = 1.0f; }
"""

MANY_ERRORS_CU = "".join(
    f"__global__ void k{i}(float* a) {{ a[0] = missing_{i}; }}\n" for i in range(12)
)

LINK_CPP = """extern "C" int missing_fn(int);
int main() { return missing_fn(1); }
"""


def compile_in(root, cmd: list[str]) -> str:
    """Run a compiler from outside `root` with absolute paths, as a build folder would show."""
    env = {**os.environ, "LC_ALL": "C"}
    proc = subprocess.run(cmd, cwd="/", capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode != 0, "the broken source compiled"
    return proc.stdout + proc.stderr


@pytest.fixture
def root(tmp_path):
    (tmp_path / "kernels").mkdir()
    return tmp_path


def test_gcc_template_noise_is_dropped_and_the_user_line_kept(root, toolchain):
    (root / "kernels" / "sort.cpp").write_text(SORT_CPP)
    raw = compile_in(root, [toolchain.cxx, "-c", str(root / "kernels/sort.cpp"), "-o", os.devnull])
    assert "required from" in raw and "note:" in raw  # the noise is really there
    out = trim_compiler_output(raw, root)
    lines = out.splitlines()
    sort_errors = [line for line in lines if line.startswith("kernels/sort.cpp:7:")]
    assert len(sort_errors) == 1, out  # one entry for the whole instantiation chain
    assert "operator<" in sort_errors[0] and "[raised in /usr/include/" in sort_errors[0]
    assert any(
        line.startswith("kernels/sort.cpp:10:") and "undefined_factor" in line for line in lines
    )
    for noise in ("required from", "In instantiation", "note:", "candidate", str(root)):
        assert noise not in out
    assert len(out) < len(raw) / 3


def test_nvcc_instantiation_error_points_at_the_workspace_line(root, toolchain):
    (root / "kernels" / "sort.cu").write_text(SORT_CU)
    cmd = [toolchain.nvcc, "-std=c++17", "-c", str(root / "kernels/sort.cu"), "-o", os.devnull]
    raw = compile_in(root, cmd)
    assert "detected during" in raw and "note #" in raw  # the noise is really there
    out = trim_compiler_output(raw, root)
    assert out.startswith('kernels/sort.cu:6: error: no operator "<" matches these operands')
    assert "[raised in /usr/include/" in out.splitlines()[0]
    assert out.count(": error:") == 1  # every error of the chain comes from that one line
    for noise in ("detected during", "instantiation of", "note #", str(root)):
        assert noise not in out


def test_nvcc_errors_beyond_the_first_few_are_counted(root, toolchain):
    (root / "kernels" / "many.cu").write_text(MANY_ERRORS_CU)
    raw = compile_in(root, [toolchain.nvcc, "-c", str(root / "kernels/many.cu"), "-o", os.devnull])
    out = trim_compiler_output(raw, root, max_errors=8)
    assert out.startswith('kernels/many.cu:1: error: identifier "missing_0" is undefined')
    assert out.count(": error:") == 8
    assert out.endswith("... and 4 more errors omitted")


def test_nvcc_fatal_and_linker_errors_are_kept(root, toolchain):
    (root / "kernels" / "ok.cu").write_text("__global__ void k() {}\n")
    arch = compile_in(root, [toolchain.nvcc, "-arch=sm_1", "-c", str(root / "kernels/ok.cu")])
    assert "Unsupported gpu architecture" in trim_compiler_output(arch, root)
    (root / "kernels" / "main.cpp").write_text(LINK_CPP)
    raw = compile_in(
        root, [toolchain.cxx, str(root / "kernels/main.cpp"), "-o", str(root / "a.out")]
    )
    out = trim_compiler_output(raw, root)
    assert "undefined reference to `missing_fn'" in out
    assert "collect2" not in out


def test_output_respects_max_chars(root, toolchain):
    (root / "kernels" / "many.cu").write_text(MANY_ERRORS_CU)
    raw = compile_in(root, [toolchain.nvcc, "-c", str(root / "kernels/many.cu"), "-o", os.devnull])
    out = trim_compiler_output(raw, root, max_errors=50, max_chars=600)
    assert len(out) <= 600 + len("\n... and 99 more errors omitted")
    assert "more errors omitted" in out


def test_unrecognised_output_falls_back_to_the_lines_that_matter():
    text = "step 1 ok\nstep 2 ok\nsomething failed: Error 42\n"
    assert trim_compiler_output(text, "/nowhere") == "something failed: Error 42"
    assert trim_compiler_output("just\nnoise\n", "/nowhere") == "just\nnoise"
