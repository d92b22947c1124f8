"""A workspace solution as a CUDA Agent workdir: their layout and their binding convention.

    model.py                 the task's reference program
    model_new.py             as written
    kernels/*                as written, but each binding's `#include "binding_registry.h"`
                             becomes the relative `../binding_registry.h` their build needs, and
                             each `REGISTER_BINDING(name, fn, extras...)` a registration function
                             handed the module (`m.def("name", &fn, extras...)`), as theirs are
    binding.cpp, binding_registry.h   this harness's (they serve both conventions)
    utils/                   left for CUDA Agent's own tools, which are theirs to copy in

A registration already in their convention (a function taking the module) is kept as written.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

from cuda_agent.errors import UserError
from cuda_agent.sandbox.export.sources import REGISTRY, infra_text, registrations
from cuda_agent.sandbox.guard.includes import read_includes
from cuda_agent.sandbox.workspace import ENTRY, INFRA_FILES, REFERENCE, Solution
from cuda_agent.task import Task

TOOLS = "utils"
_TOOLS_NOTE = (
    "CUDA Agent's workdir keeps its compile, verification and profiling tools here\n"
    "(agent_workdir/utils/ of BytedTsinghua-SIA/CUDA-Agent); copy them in to use them.\n"
)


def export_cuda_agent(task: Task, solution: Solution, out: Path) -> Path:
    """Write the workdir for `solution` to `task` into the new folder `out`."""
    if out.exists() and any(out.iterdir()):
        raise UserError(f"{out}: folder exists and is not empty; choose a new folder")
    files = {REFERENCE: task.code, ENTRY: solution.files[ENTRY]}
    for path, text in solution.kernel_files.items():
        files[path] = _their_convention(path, text) if path.endswith((".cpp", ".cu")) else text
    files.update({name: infra_text(name) for name in INFRA_FILES})
    files[f"{TOOLS}/README"] = _TOOLS_NOTE
    for path, text in files.items():
        dest = out / path
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(text)
    return out


def _their_convention(path: str, text: str) -> str:
    """`text` with the registry included relatively and registrations as functions."""
    up = "../" * (len(PurePosixPath(path).parts) - 1)
    lines = text.split("\n")
    for directive in read_includes(text):
        if directive.kind == "include" and directive.name == REGISTRY:
            line = lines[directive.line - 1]
            lines[directive.line - 1] = line.replace(f'"{REGISTRY}"', f'"{up}{REGISTRY}"')
    text = "\n".join(lines)
    for reg in reversed(registrations(text)):
        if _takes_module(text, reg.fn):
            continue
        extras = "".join(f", {e}" for e in reg.extras)
        helper = f"cuda_agent_register_{reg.name}"
        replacement = (
            f"static void {helper}(pybind11::module& m) {{\n"
            f'    m.def("{reg.name}", &{reg.fn}{extras});\n'
            f"}}\n"
            f"REGISTER_BINDING({reg.name}, {helper});"
        )
        text = text[: reg.start] + replacement + text[reg.end :]
    return text


def _takes_module(text: str, fn: str) -> bool:
    """Whether `fn` is defined here as a function whose parameter is the pybind11 module."""
    pattern = rf"\b{re.escape(fn)}\s*\(\s*(?:pybind11|py)::module_?\s*&"
    return re.search(pattern, text) is not None
