"""The harness's binding_registry.h serves both conventions with one macro: ours (the function
itself is defined, with optional pybind11 extras) and CUDA Agent's (a registration function
handed the module defines its functions, py::arg defaults included).

Built here as a plain pybind11 module (no torch, no GPU) with the package's binding.cpp, and
imported in a fresh interpreter."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
import torch

from cuda_agent.sandbox.workspace import INFRA_DIR

SOURCE = r"""
#include "binding_registry.h"

namespace py = pybind11;

static int add(int a, int b) { return a + b; }
REGISTER_BINDING(add, add);

static int scale(int x, int by) { return x * by; }
REGISTER_BINDING(scale, scale, py::arg("x"), py::arg("by") = 3);

static int axpb_forward(int x, int a, int b) { return a * x + b; }
static void register_axpb(pybind11::module& m) {
    m.def("axpb_forward", &axpb_forward, "a * x + b", py::arg("x"), py::arg("a") = 2,
          py::arg("b") = 1);
    m.def("axpb_twice", [](int x) { return 2 * (2 * x + 1); }, py::arg("x"));
}
REGISTER_BINDING(axpb, register_axpb);
"""

PROBE = """
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("cuda_extension", sys.argv[1])
ext = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ext)
print(json.dumps({
    "names": sorted(n for n in dir(ext) if not n.startswith("_")),
    "add": ext.add(2, 5),
    "scale": ext.scale(4),
    "scale_by": ext.scale(x=4, by=5),
    "axpb": ext.axpb_forward(10),
    "axpb_kw": ext.axpb_forward(10, b=0),
    "twice": ext.axpb_twice(3),
}))
"""


@pytest.fixture(scope="module")
def module(tmp_path_factory) -> Path:
    gxx = shutil.which("g++")
    if gxx is None:
        pytest.skip("g++ is not installed")
    work = tmp_path_factory.mktemp("registry")
    (work / "both.cpp").write_text(SOURCE)
    includes = [
        f"-I{INFRA_DIR}",
        f"-isystem{Path(torch.__file__).parent / 'include'}",  # torch ships pybind11's headers
        f"-isystem{sysconfig.get_path('include')}",
    ]
    so = work / f"cuda_extension{sysconfig.get_config_var('EXT_SUFFIX')}"
    cmd = [gxx, "-std=c++17", "-O0", "-shared", "-fPIC", "-Wall", "-Werror", *includes]
    cmd += [str(INFRA_DIR / "binding.cpp"), str(work / "both.cpp"), "-o", str(so)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return so


def test_one_macro_registers_both_conventions(module):
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, str(module)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert got["names"] == ["add", "axpb_forward", "axpb_twice", "scale"]
    assert (got["add"], got["scale"], got["scale_by"]) == (7, 12, 20)
    assert (got["axpb"], got["axpb_kw"], got["twice"]) == (21, 20, 14)
