"""CUDA Agent's workdir convention passes the static guard as written (its includes, a
registration function handed the module, py::arg defaults, a utils/ folder beside), and what the
module opens to a binding beyond defining functions is refused: importing or evaluating Python,
holding Python objects, reaching the module's attributes, and computing with torch in a function
it defines."""

from __future__ import annotations

from pathlib import Path

import pytest

from cuda_agent.sandbox import read_solution, solution_from_files
from cuda_agent.sandbox.guard.static import check_static

WORKDIR = Path(__file__).parents[2] / "fixtures" / "workdirs" / "axpby_cuda_agent"
BINDING = "kernels/axpby_binding.cpp"
HONEST_BODY = (
    '    m.def("axpby_forward", &axpby_forward, "alpha * x + beta * y", py::arg("x"), '
    'py::arg("y"),\n          py::arg("alpha"), py::arg("beta"), py::arg("threads") = 256);\n'
)


def test_the_workdir_passes_as_written():
    solution = read_solution(WORKDIR)
    assert (WORKDIR / "utils").is_dir() and (WORKDIR / "binding_registry.h").is_file()
    assert sorted(solution.files) == ["kernels/axpby.cu", BINDING, "model_new.py"]
    assert check_static(solution) == []


def test_the_registry_reached_from_a_subfolder_is_the_harness_copy():
    files = dict(read_solution(WORKDIR).files)
    text = files.pop(BINDING).replace('"../binding_registry.h"', '"../../binding_registry.h"')
    assert check_static(solution_from_files({**files, "kernels/ops/axpby_binding.cpp": text})) == []
    outside = text.replace('"../../binding_registry.h"', '"../../../binding_registry.h"')
    found = check_static(solution_from_files({**files, "kernels/ops/axpby_binding.cpp": outside}))
    assert any("binding_registry.h" in v for v in found)


CHEATS = {
    "imports_a_python_module": """    auto torch_module = pybind11::module::import("torch");
    m.def("axpby_forward", &axpby_forward);
""",
    "imports_through_module_underscore": """    py::module_::import("os").attr("system")("true");
    m.def("axpby_forward", &axpby_forward);
""",
    "imports_through_the_handed_module": """    auto os = m.import("os");
    m.def("axpby_forward", &axpby_forward);
""",
    "evaluates_python": """    py::eval("__import__('torch').add");
    m.def("axpby_forward", &axpby_forward);
""",
    "execs_python": """    pybind11::exec("import torch");
    m.def("axpby_forward", &axpby_forward);
""",
    "holds_a_python_object": """    static py::object reference;
    m.def("axpby_forward", &axpby_forward);
""",
    "reads_the_module_attributes": """    m.attr("fallback") = m.attr("__dict__");
    m.def("axpby_forward", &axpby_forward);
""",
    "adds_a_submodule": """    auto inner = m.def_submodule("inner");
    m.def("axpby_forward", &axpby_forward);
""",
    "defines_a_lambda_computing_with_torch": """    m.def("axpby_forward",
          [](torch::Tensor x, torch::Tensor y, double a, double b) {
        return torch::add(x * a, y * b);
    });
""",
    "defines_a_lambda_with_tensor_methods": """    m.def("axpby_forward",
          [](torch::Tensor x, torch::Tensor y, double a, double b) {
        return x.mul(a).add_(y, b);
    });
""",
    "takes_a_python_callable": """    m.def("axpby_forward",
          [](py::function f, torch::Tensor x) { return f(x); });
""",
    "defaults_to_a_python_object": """    m.def("axpby_forward", &axpby_forward, py::arg("x"),
          py::arg("y") = py::none());
""",
    "calls_the_python_c_api": """    PyRun_SimpleString("import torch");
    m.def("axpby_forward", &axpby_forward);
""",
    "casts_to_python": """    m.def("axpby_forward", [](torch::Tensor x) { return py::cast(x); });
""",
}


@pytest.mark.parametrize("body", CHEATS.values(), ids=list(CHEATS))
def test_a_registration_function_only_defines_functions(body):
    files = dict(read_solution(WORKDIR).files)
    assert HONEST_BODY in files[BINDING]
    files[BINDING] = files[BINDING].replace(HONEST_BODY, body)
    found = check_static(solution_from_files(files))
    line = files[BINDING][: files[BINDING].index(body)].count("\n") + 1
    flagged = {int(v.split(":")[1]) for v in found if v.startswith(f"{BINDING}:")}
    assert flagged & set(range(line, line + body.count("\n"))), found
