"""The static guard in the single-file shape: the submission's Python before it runs, and each
extension's C++/CUDA sources when its process asks for them to be built.

The Python rules are the workspace's (static_py), in a dialect that lets the file build its
extension (load_inline, load), write the sources it hands to `load` (its process may write only
inside its own folder) and set environment variables; everything else the workspace refuses
stays refused. A Triton file's @triton.jit functions are its kernels: their bodies are device
code, read for the integrity rules only, and launching one (`kernel[grid](...)`) is using the
extension. Of Triton it may use the kernel language (triton.language, libdevice) and what
defines, tunes and launches a kernel (jit, autotune, heuristics, Config, cdiv,
next_power_of_2); the rest of triton (knobs, runtime, compiler, backends, testing, tools,
set_allocator) reaches the compiler, runtime and driver the harness controls, and is refused.
The C++ rules are the workspace's too: wrapper functions may allocate and describe tensors and
call cuBLAS/cuDNN, never compute with ATen, torch:: functions or tensor methods. A single-file
extension defines its own module, so PYBIND11_MODULE and pybind11's own header are allowed
there.
"""

from __future__ import annotations

import ast
import re
from dataclasses import replace

from cuda_agent.sandbox.guard.findings import Finding, texts
from cuda_agent.sandbox.guard.profile import Family, Layer
from cuda_agent.sandbox.guard.rules import ALLOWED_IMPORTS, ALLOWED_INCLUDES
from cuda_agent.sandbox.guard.static_cpp import cpp_findings
from cuda_agent.sandbox.guard.static_py import PythonDialect, python_findings
from cuda_agent.sandbox.process.messages import ExtensionCall
from cuda_agent.sandbox.single_file.triton_source import is_triton, triton_kernel_names
from cuda_agent.sandbox.violation import Rule

BUILDERS = frozenset({"torch.utils.cpp_extension.load_inline", "torch.utils.cpp_extension.load"})
IMPORTS = ALLOWED_IMPORTS | frozenset(
    "torch.utils torch.utils.cpp_extension os os.path tempfile pathlib textwrap hashlib "
    "warnings triton triton.language triton.language.extra triton.language.extra.libdevice "
    "triton.language.extra.cuda triton.language.extra.cuda.libdevice".split()
)
# what defines, tunes and launches a kernel; triton.language (the kernel language) is allowed whole
TRITON_NAMES = frozenset(
    f"triton.{n}" for n in "jit autotune Config heuristics cdiv next_power_of_2".split()
)
_OS_ALLOWED = frozenset(
    "path environ getenv getpid makedirs mkdir getcwd listdir remove unlink sep fspath "
    "cpu_count".split()
)
INCLUDES = (*ALLOWED_INCLUDES, "pybind11/pybind11.h", "pybind11/stl.h")
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")


def _refuse(q: str) -> tuple[str, str] | None:
    """os names other than paths, folders and the environment: processes, signals, exits; and
    triton names beyond its kernel language and what defines, tunes and launches a kernel."""
    parts = q.split(".")
    if parts[0] == "os" and len(parts) > 1 and parts[1] not in _OS_ALLOWED:
        return (
            "process, signal or interpreter access",
            "a submission only writes its sources and builds its extension",
        )
    if parts[0] == "triton" and q not in TRITON_NAMES and not _kernel_language(parts):
        return (
            "Triton's compiler, runtime and driver internals, which the harness controls",
            "use only triton.language and triton.jit, autotune, heuristics, Config, cdiv and "
            "next_power_of_2",
        )
    return None


def _kernel_language(parts: list[str]) -> bool:
    """A public name of triton.language: its modules import Triton's internals too (such as
    `triton.language.core.knobs`), which stay out of reach through them."""
    internal = {"knobs", "runtime", "compiler", "backends", "testing", "tools"}
    return parts[:2] == ["triton", "language"] and not any(
        p.startswith("_") or p in internal for p in parts[2:]
    )


def dialect(
    entry_point: str, kernels: frozenset[str] = frozenset(), triton: bool = False
) -> PythonDialect:
    """The single-file rules for a file entered at `entry_point` whose @triton.jit functions are
    `kernels`; a Triton file (`triton`) is told that it launches no kernel, not that it builds no
    extension."""
    no_extension = (
        f"{entry_point} launches no Triton kernel (a @triton.jit function called as "
        "kernel[grid](...)); the work must run in your kernels"
        if triton
        else f"{entry_point} never builds a CUDA extension (torch.utils.cpp_extension."
        "load_inline or load); the work must run in your kernels"
    )
    return PythonDialect(
        entry_point=entry_point,
        allowed_names=BUILDERS | {"torch.utils.cpp_extension"},
        allowed_builtins=frozenset({"open"}),
        extension_builders=BUILDERS,
        refuse=_refuse,
        assignable=frozenset({"os.environ"}),
        kernels=kernels,
        messages={
            "no_extension": no_extension,
            "model": "references Model (the reference program); "
            f"{entry_point} must compute with your kernels",
            "define_model": f"defines a class named Model (the reference's name); name yours "
            f"{entry_point}",
        },
    )


def check_file(path: str, text: str, entry_point: str) -> list[str]:
    """One line per violation in the submission's Python."""
    return texts(file_findings(path, text, entry_point))


def file_findings(path: str, text: str, entry_point: str) -> list[Finding]:
    """Every finding in the submission's Python, each with its rule's family."""
    rules = dialect(entry_point, triton_kernel_names(text), is_triton(text))
    return python_findings(path, text, IMPORTS, rules)


def check_call(call: ExtensionCall) -> list[str]:
    """One line per violation in the sources of one extension-building call, named as the
    submission gave them (load_inline's pieces joined, load's files by name)."""
    return texts(call_findings(call))


def call_findings(call: ExtensionCall) -> list[Finding]:
    """Every finding in one extension-building call's sources; each names its file as
    `load_inline('name') cuda_sources` (or the file `load` was given)."""
    found: list[Finding] = []
    if call.api == "load_inline":
        pieces = {"cpp_sources": "\n".join(call.cpp_sources)}
        if call.cuda_sources:
            pieces["cuda_sources"] = "\n".join(call.cuda_sources)
        names = frozenset()
    else:
        pieces = dict(call.files)
        names = frozenset(pieces)
    for name, text in pieces.items():
        found += [
            f for f in cpp_findings(name, text, names, INCLUDES) if f.rule != Rule.PYBIND11_MODULE
        ]
    bad = [name for name, _ in call.functions if not _IDENTIFIER.fullmatch(name)]
    found += [
        Finding(
            f"functions: {name!r} is not a C++ function name; name the wrapper",
            Rule.WRAPPER_NAME,
            Family.INTEGRITY,
            Layer.STATIC_CPP,
        )
        for name in bad
    ]
    label = f"{call.api}({call.name!r})"
    return [
        replace(f, text=f"{label} {f.text}", file=f"{label} {f.file}" if f.file else None)
        for f in found
    ]


def lazy_in_forward(text: str, entry_point: str) -> bool:
    """Whether the entry point's forward itself calls a builder (only reached on a GPU)."""
    tree = ast.parse(text)
    for cls in tree.body:
        if isinstance(cls, ast.ClassDef) and cls.name == entry_point:
            for fn in cls.body:
                if isinstance(fn, ast.FunctionDef) and fn.name == "forward":
                    return any(_calls_builder(n) for n in ast.walk(fn))
    return False


def _calls_builder(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return name in ("load_inline", "load")
