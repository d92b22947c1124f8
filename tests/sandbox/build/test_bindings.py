"""The bindings model_new.py calls against those the kernels register, read from the sources."""

from cuda_agent.sandbox import solution_from_files
from cuda_agent.sandbox.build.bindings import unregistered_calls

BINDING = '#include "../binding_registry.h"\ntorch::Tensor relu(torch::Tensor x);\n'


def _solution(entry: str, binding: str):
    return solution_from_files({"model_new.py": entry, "kernels/relu_binding.cpp": binding})


def test_every_call_registered_by_the_macro_passes():
    entry = "import cuda_extension\n\ndef f(x):\n    return cuda_extension.relu(x)\n"
    assert unregistered_calls(_solution(entry, BINDING + "REGISTER_BINDING(relu, relu);\n")) == []


def test_a_name_registered_by_m_def_in_a_registration_function_passes():
    binding = BINDING + 'void reg(pybind11::module_& m) { m.def("relu_fwd", &relu); }\n'
    binding += "REGISTER_BINDING(relu_module, reg);\n"
    entry = "import cuda_extension as ext\n\ndef f(x):\n    return ext.relu_fwd(x)\n"
    assert unregistered_calls(_solution(entry, binding)) == []


def test_unregistered_names_are_named_with_their_line_under_any_alias():
    entry = (
        "import cuda_extension as ext\n"
        "from cuda_extension import gelu\n"
        "\n"
        "def f(x):\n"
        "    return ext.relu2(gelu(x))\n"
    )
    missing = unregistered_calls(_solution(entry, BINDING + "REGISTER_BINDING(relu, relu);\n"))
    assert missing == [
        "model_new.py:2: cuda_extension.gelu",
        "model_new.py:5: cuda_extension.relu2",
    ]


def test_unparsable_python_is_left_to_the_static_guard():
    assert unregistered_calls(_solution("def (:\n", BINDING)) == []
