"""The static guard: reads a solution's sources, never runs them, and names each forbidden
shortcut with file:line, the rule, and what to do instead.

It is the first and most readable line of defence, not the last. What a model can hide from
reading (a tensor whose type the reader cannot infer, a C++ macro that pastes a name, an
unqualified ATen call found by argument-dependent lookup) is left to the runtime guard, which
traces every ATen op the candidate's forward runs and profiles its kernels. So the rules aim at no
false alarms on honest code first, and at catching what models actually write second.

Python (model_new.py and any other .py) is read by AST (static_py), C++/CUDA (kernels/*) by
tokens (static_cpp); the rules of both are data in rules.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath

from cuda_agent.sandbox.guard.findings import Finding, texts
from cuda_agent.sandbox.guard.profile import Family, Layer
from cuda_agent.sandbox.guard.rules import ALLOWED_IMPORTS, ALLOWED_INCLUDES
from cuda_agent.sandbox.guard.static_cpp import cpp_findings
from cuda_agent.sandbox.guard.static_py import python_findings
from cuda_agent.sandbox.violation import Rule
from cuda_agent.sandbox.workspace import INFRA_FILES, Solution

CPP_SUFFIXES = (".cu", ".cuh", ".cpp", ".h", ".hpp")


@dataclass(frozen=True)
class StaticRules:
    """What a solution may import (Python module names) and include (header name patterns)."""

    allowed_imports: frozenset[str] = ALLOWED_IMPORTS
    allowed_includes: tuple[str, ...] = ALLOWED_INCLUDES


def check_static(solution: Solution, rules: StaticRules | None = None) -> list[str]:
    """One readable line per violation: `path:line: what it does (why); what to do instead`.
    An empty list means the sources break no static rule (the runtime guard still runs)."""
    return texts(static_findings(solution, rules))


def static_findings(solution: Solution, rules: StaticRules | None = None) -> list[Finding]:
    """Every finding in the solution's sources, each with its rule's family (profile.py)."""
    rules = rules or StaticRules()
    files = frozenset(solution.files)
    found: list[Finding] = []
    for path, text in solution.files.items():
        name = PurePosixPath(path).name
        if name in INFRA_FILES:
            message = (
                f"{path}:1: ships {name}, the harness's own infrastructure, which would shadow "
                "it; remove it (the harness provides binding.cpp and binding_registry.h)"
            )
            layer = Layer.STATIC_PYTHON if path.endswith(".py") else Layer.STATIC_CPP
            found.append(Finding(message, Rule.INFRA_FILE, Family.INTEGRITY, layer, None, path, 1))
        if path.endswith(".py"):
            found += python_findings(path, text, rules.allowed_imports)
        elif path.endswith(CPP_SUFFIXES):
            found += cpp_findings(path, text, files, rules.allowed_includes)
    return found
