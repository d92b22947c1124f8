"""A workspace solution as a KernelBench single-file submission: one Python file whose ModelNew
calls an extension built by `torch.utils.cpp_extension.load_inline`.

The kernels/*.cu files become one CUDA source, the bindings one C++ source together with the
harness's binding registry and module definition (sandbox/infra), so REGISTER_BINDING means what
it means here. model_new.py is kept as written, its `import cuda_extension` replaced by the
build. Flags follow the harness's build: -O3 for CUDA, -O2 for C++, hidden visibility (two
submissions loaded in one process must not share the static registry), and the cuBLAS/cuDNN
libraries the bindings include.

KernelBench builds Model and ModelNew from one seed and never loads a state_dict, where this
harness hands ModelNew the reference's weights: a ModelNew that initialises its parameters
differently from Model passes here and fails there. The file's header says so.
"""

from __future__ import annotations

import ast
import re
from pathlib import PurePosixPath

from cuda_agent.errors import UserError
from cuda_agent.sandbox.export.sources import REGISTRY, infra_text, merge_units
from cuda_agent.sandbox.guard.includes import included_names
from cuda_agent.sandbox.workspace import ENTRY, Solution
from cuda_agent.task import Task

_MODULE = re.compile(r"PYBIND11_MODULE\s*\(\s*cuda_extension\s*,")
_LIBRARIES = (("cublasLt", "cublasLt"), ("cublas", "cublas"), ("cudnn", "cudnn"))


def export_kernelbench(task: Task, solution: Solution) -> str:
    """The text of the single-file submission for `solution` to `task`."""
    files = solution.kernel_files
    cu = sorted(p for p in files if p.endswith(".cu"))
    cpp = sorted(p for p in files if p.endswith(".cpp"))
    if not cu and not cpp:
        raise UserError(f"{task.name}: the solution has no kernels/*.cu or *.cpp to export")
    registry = infra_text(REGISTRY)
    cpp_source = merge_units(cpp, files, registry)
    binding = infra_text("binding.cpp").replace(f'#include "{REGISTRY}"', "")
    cpp_source += '\n#line 1 "binding.cpp"\n' + _MODULE.sub(
        "PYBIND11_MODULE(TORCH_EXTENSION_NAME,", binding
    )
    cuda_source = merge_units(cu, files, registry)
    name = re.sub(r"\W+", "_", f"cuda_agent_{task.name}_{solution.hash[:10]}")
    loader = _loader(name, cpp_source, cuda_source, _libraries(files))
    return _header(task, solution) + _replace_imports(solution.files[ENTRY], loader)


def _libraries(files: dict[str, str]) -> list[str]:
    names = {PurePosixPath(n).name for t in files.values() for n in included_names(t)}
    used = []
    for prefix, lib in _LIBRARIES:
        if any(
            n.startswith(prefix) and not (lib == "cublas" and n.startswith("cublasLt"))
            for n in names
        ):
            used.append(f"-l{lib}")
    return used


def _header(task: Task, solution: Solution) -> str:
    return (
        f"# {task.name}: a cuda-agent solution ({solution.hash}) exported as a KernelBench\n"
        "# single-file submission. KernelBench constructs Model and ModelNew from one seed and\n"
        "# loads no state_dict: ModelNew's parameters must be initialised as Model's are.\n"
    )


def _loader(name: str, cpp_source: str, cuda_source: str, ldflags: list[str]) -> str:
    cuda = f"_CUDA_SOURCE = {_literal(cuda_source)}\n" if cuda_source else ""
    return (
        "from torch.utils.cpp_extension import load_inline\n\n"
        f"_CPP_SOURCE = {_literal(cpp_source)}\n"
        f"{cuda}\n"
        "cuda_extension = load_inline(\n"
        f"    name={name!r},\n"
        "    cpp_sources=[_CPP_SOURCE],\n"
        + ("    cuda_sources=[_CUDA_SOURCE],\n" if cuda_source else "")
        + '    extra_cflags=["-O2", "-fvisibility=hidden"],\n'
        + '    extra_cuda_cflags=["-O3", "-Xcompiler", "-fvisibility=hidden"],\n'
        + f"    extra_ldflags={ldflags!r},\n"
        + ")\n\n"
    )


def _literal(text: str) -> str:
    """A readable literal for C++ text: a raw triple-quoted string where one can hold it."""
    if '"""' not in text and not text.endswith(("\\", '"')):
        return f'r"""\n{text}"""' if not text.startswith("\n") else f'r"""{text}"""'
    return repr(text)


def _replace_imports(source: str, loader: str) -> str:
    """model_new.py with its first top-level `import cuda_extension` (or `from cuda_extension
    import ...`) replaced by the loader, later ones by the names they bind."""
    try:
        tree = ast.parse(source)
    except SyntaxError as err:
        raise UserError(f"{ENTRY}:{err.lineno}: not valid Python ({err.msg})") from None
    lines = source.splitlines(keepends=True)
    edits: list[tuple[int, int, str]] = []
    for node in ast.walk(tree):
        if not _imports_extension(node):
            continue
        if node not in tree.body:
            raise UserError(
                f"{ENTRY}:{node.lineno}: imports cuda_extension inside a block; import it at the "
                "top of the file to export"
            )
        binds = "".join(f"{alias} = cuda_extension{attr}\n" for alias, attr in _bindings(node))
        first = not edits
        edits.append((node.lineno - 1, node.end_lineno, (loader if first else "") + binds))
    if not edits:
        raise UserError(f"{ENTRY} never imports cuda_extension; nothing calls the kernels")
    for start, end, text in sorted(edits, reverse=True):
        lines[start:end] = [text]
    return "".join(lines)


def _imports_extension(node: ast.AST) -> bool:
    if isinstance(node, ast.Import):
        return any(a.name == "cuda_extension" for a in node.names)
    return isinstance(node, ast.ImportFrom) and node.module == "cuda_extension"


def _bindings(node: ast.Import | ast.ImportFrom) -> list[tuple[str, str]]:
    """(name bound, what of cuda_extension it is) for each alias the import statement binds."""
    if isinstance(node, ast.ImportFrom):
        return [(a.asname or a.name, f".{a.name}") for a in node.names]
    if len(node.names) > 1:
        raise UserError(
            f"{ENTRY}:{node.lineno}: import cuda_extension on a line of its own to export"
        )
    alias = node.names[0].asname
    return [(alias, "")] if alias else []
