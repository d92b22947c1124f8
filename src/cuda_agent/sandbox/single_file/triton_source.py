"""What a submission's text says about Triton, read by AST (Triton itself is never imported):
whether the file uses it, and which of its functions are @triton.jit kernels.

A kernel is a module-level function with `triton.jit` among its decorators, bare or called
(`@triton.jit(do_not_specialize=...)`), alone or under `triton.autotune(...)` and
`triton.heuristics(...)`. Names are read through the file's imports (`from triton import jit`,
`import triton as tr`); a name the file never imports is read as written.
"""

from __future__ import annotations

import ast

TRITON = "triton"
JIT = "triton.jit"


def is_triton(text: str) -> bool:
    """Whether the file imports triton (`import triton`, `import triton.language as tl`,
    `from triton import ...`) or defines a @triton.jit kernel; False where it does not parse
    (such a file is scored invalid before anything asks)."""
    tree = _parsed(text)
    if tree is None:
        return False
    imported = any(q.split(".")[0] == TRITON for q in _imported_names(tree).values())
    return imported or bool(_kernel_names(tree))


def triton_kernel_names(text: str) -> frozenset[str]:
    """The names of the file's module-level @triton.jit functions; none where it does not
    parse."""
    tree = _parsed(text)
    return frozenset() if tree is None else _kernel_names(tree)


def _parsed(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except SyntaxError:
        return None


def _kernel_names(tree: ast.Module) -> frozenset[str]:
    names = _imported_names(tree)
    return frozenset(
        fn.name
        for fn in tree.body
        if isinstance(fn, ast.FunctionDef)
        and any(_qualified(_decorator_name(d), names) == JIT for d in fn.decorator_list)
    )


def _imported_names(tree: ast.Module) -> dict[str, str]:
    """Each name the file's imports bind, as the qualified name it stands for."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:  # `import triton.language` binds `triton`
                names[a.asname or a.name.split(".")[0]] = (
                    a.name if a.asname else a.name.split(".")[0]
                )
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for a in node.names:
                names[a.asname or a.name] = f"{node.module}.{a.name}"
    return names


def _decorator_name(node: ast.expr) -> str | None:
    """The dotted name a decorator applies (`triton.jit`, also for `triton.jit(...)`)."""
    if isinstance(node, ast.Call):
        node = node.func
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


def _qualified(name: str | None, imported: dict[str, str]) -> str | None:
    if name is None:
        return None
    head, _, rest = name.partition(".")
    base = imported.get(head, head)
    return f"{base}.{rest}" if rest else base
