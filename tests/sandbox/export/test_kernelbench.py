"""A workspace solution exported as a KernelBench single-file submission: valid Python that
ruff's syntax and undefined-name checks pass, model_new.py kept with its import replaced by the
load_inline build, and the C++/CUDA text it carries compiling through the project's build."""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from cuda_agent.errors import UserError
from cuda_agent.sandbox import read_solution, solution_from_files
from cuda_agent.sandbox.build.extension import build_extension
from cuda_agent.sandbox.export import export_kernelbench
from cuda_agent.sandbox.single_file.ahead import literal_calls
from cuda_agent.sandbox.single_file.flags import call_flags
from cuda_agent.sandbox.single_file.guard import check_call, check_file
from cuda_agent.task import load_task

FIXTURES = Path(__file__).parents[2] / "fixtures"
SOLUTIONS = FIXTURES / "solutions"
WORKDIR = FIXTURES / "workdirs" / "axpby_cuda_agent"
CASES = {
    "elementwise_chain": (load_task("elementwise_chain"), SOLUTIONS / "elementwise_chain"),
    "rmsnorm": (load_task("rmsnorm"), SOLUTIONS / "rmsnorm"),
    "axpby_cuda_agent": (load_task(WORKDIR / "model.py"), WORKDIR),
}


def _export(case: str) -> str:
    task, folder = CASES[case]
    return export_kernelbench(task, read_solution(folder))


def _constants(text: str) -> dict[str, str]:
    tree = ast.parse(text)
    return {
        node.targets[0].id: ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
        and isinstance(node.value, ast.Constant)
    }  # fmt: skip


@pytest.mark.parametrize("case", list(CASES))
def test_the_file_is_python_that_ruff_accepts(case, tmp_path):
    text = _export(case)
    tree = ast.parse(text)
    classes = [n.name for n in tree.body if isinstance(n, ast.ClassDef)]
    assert classes == ["ModelNew"]
    assert "import cuda_extension" not in text and "load_inline(" in text
    if importlib.util.find_spec("ruff") is None:
        pytest.skip("ruff is not installed")
    path = tmp_path / "submission.py"
    path.write_text(text)
    proc = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--isolated", "--select", "E9,F63,F7,F82",
         str(path)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("case", list(CASES))
def test_the_sources_compile(case, toolchain, build_cache):
    sources = _constants(_export(case))
    # load_inline puts <torch/extension.h> before the C++ source; the build's precompiled header
    # does the same here. Compile only: the module's init is defined twice, as binding.cpp is
    # built beside it.
    files = {
        "model_new.py": "import cuda_extension\n",
        "kernels/exported_binding.cpp": "#include <torch/extension.h>\n" + sources["_CPP_SOURCE"],
        "kernels/exported.cu": sources["_CUDA_SOURCE"],
    }
    result = build_extension(solution_from_files(files), toolchain, build_cache, link=False)
    assert result.ok, result.log


@pytest.mark.parametrize("case", list(CASES))
def test_our_own_guard_accepts_the_file(case):
    # an exported file is scored here too (`cuda-agent compare` runs both harnesses on it)
    text = _export(case)
    assert check_file("model_new.py", text, "ModelNew") == []
    calls = literal_calls(text)
    assert len(calls) == 1
    assert check_call(calls[0]) == []
    flags = call_flags(calls[0], "sm_90")
    assert flags.refused == () and "-fvisibility=hidden" in flags.host


def test_imports_of_the_extension_become_the_build(tmp_path):
    task, folder = CASES["elementwise_chain"]
    files = dict(read_solution(folder).files)
    files["model_new.py"] = files["model_new.py"].replace(
        "import cuda_extension\n",
        "import cuda_extension as ext\nfrom cuda_extension import elementwise_chain as chain\n",
    )
    text = export_kernelbench(task, solution_from_files(files))
    assert "ext = cuda_extension\n" in text and "chain = cuda_extension.elementwise_chain\n" in text
    assert text.count("load_inline(") == 1


def test_an_import_inside_a_function_is_a_user_error():
    task, folder = CASES["elementwise_chain"]
    files = dict(read_solution(folder).files)
    files["model_new.py"] = files["model_new.py"].replace("import cuda_extension\n", "") + (
        "\n\ndef late():\n    import cuda_extension\n    return cuda_extension\n"
    )
    with pytest.raises(UserError, match="inside a block"):
        export_kernelbench(task, solution_from_files(files))
