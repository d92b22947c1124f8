"""The names model_new.py calls on `cuda_extension`, against the names the kernels register.

Read from the sources, never run: on a machine without a GPU nothing built can be loaded, and a
call to a binding that no kernel registers would otherwise surface only as an AttributeError on
the first GPU run. A binding registers its Python name either as REGISTER_BINDING's first
argument or, where it registers a function that takes the module, in that function's
`m.def("name", ...)`; both are read, so a name either way counts as registered.
"""

from __future__ import annotations

import ast
import re

from cuda_agent.sandbox.workspace import ENTRY, Solution

EXTENSION = "cuda_extension"
_REGISTERED = re.compile(r"\bREGISTER_BINDING\s*\(\s*(\w+)|\.def\s*\(\s*\"(\w+)\"")


def unregistered_calls(solution: Solution) -> list[str]:
    """`file:line: cuda_extension.NAME` for each name ModelNew's module uses that no kernel
    source registers; empty when every one is registered (or model_new.py does not parse:
    the static guard reports that)."""
    registered = _registered(solution)
    try:
        tree = ast.parse(solution.files.get(ENTRY, ""))
    except SyntaxError:
        return []
    missing = []
    for name, line in _used(tree):
        if name not in registered:
            missing.append(f"{ENTRY}:{line}: {EXTENSION}.{name}")
    return missing


def _registered(solution: Solution) -> set[str]:
    names: set[str] = set()
    for path, text in solution.files.items():
        if path.endswith((".cpp", ".cu", ".cuh", ".h", ".hpp")):
            for match in _REGISTERED.finditer(text):
                names.add(match.group(1) or match.group(2))
    return names


def _used(tree: ast.Module) -> list[tuple[str, int]]:
    """(name, line) of every attribute read on the extension module, under any alias, and of
    every name imported from it."""
    aliases: set[str] = set()
    used: list[tuple[str, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            aliases.update(a.asname or a.name for a in node.names if a.name == EXTENSION)
        elif isinstance(node, ast.ImportFrom) and node.module == EXTENSION:
            used.extend((a.name, node.lineno) for a in node.names if a.name != "*")
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in aliases
        ):
            used.append((node.attr, node.lineno))
    return sorted(set(used), key=lambda u: (u[1], u[0]))
