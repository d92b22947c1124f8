"""Check that a program has the KernelBench contract, by parsing it (never by running it)."""

from __future__ import annotations

import ast

from cuda_agent.errors import UserError

REQUIRED = ("Model", "get_inputs", "get_init_inputs")


class TaskError(UserError):
    """A task file, folder or dataset row that is not a valid KernelBench-format program."""


def check_program(code: str, where: str) -> None:
    """Raise TaskError naming `where` and what is missing if `code` breaks the contract."""
    if not code or not code.strip():
        raise TaskError(f"{where}: the program is empty; it needs {', '.join(REQUIRED)}")
    try:
        tree = ast.parse(code)
    except SyntaxError as err:
        raise TaskError(f"{where}: syntax error at line {err.lineno}: {err.msg}") from None
    defined = _top_level_names(tree)
    missing = [name for name in REQUIRED if name not in defined]
    if "Model" in defined and not any(
        isinstance(n, ast.ClassDef) and n.name == "Model" for n in tree.body
    ):
        missing.insert(0, "class Model")
    if missing:
        raise TaskError(
            f"{where}: missing {', '.join(missing)}; a task needs class Model(nn.Module), "
            "get_inputs() and get_init_inputs()"
        )
    model = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Model")
    if not _has_forward(model, tree):
        raise TaskError(f"{where}: class Model has no forward() method")


def _top_level_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def _has_forward(cls: ast.ClassDef, tree: ast.Module) -> bool:
    """forward defined on Model, or on a base class defined in the same file."""
    if any(isinstance(n, ast.FunctionDef) and n.name == "forward" for n in cls.body):
        return True
    local = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    for base in cls.bases:
        if isinstance(base, ast.Name) and base.id in local and base.id != cls.name:
            if _has_forward(local[base.id], tree):
                return True
        elif not (isinstance(base, ast.Attribute) and base.attr == "Module"):
            return True  # an imported base may define forward; parsing cannot tell
    return False


def declared_ops(code: str) -> tuple[str, ...]:
    """The operator labels a file declares in a top-level `OPS = [...]` literal, if any."""
    for node in ast.parse(code).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "OPS" for t in node.targets
        ):
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                return ()
            if isinstance(value, list | tuple):
                return tuple(str(v) for v in value)
    return ()
