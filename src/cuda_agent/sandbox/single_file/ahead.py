"""The load_inline calls a submission's text fixes without running: built while its process
starts.

A cold single-file verdict waits for the candidate's process to start (CUDA, the GPU trace: about
5 s) and only then, when the submission's import calls load_inline, for the build (15-20 s). Most
submissions write their sources as literals: strings, module-level names bound once, f-strings and
`.format` of those, concatenations, lists. Those calls are read here from the syntax tree, never
by running the file, and the builder compiles them while the process starts. What the process
then asks for is still what is built and loaded: a call read here that the file never makes only
warms the cache, and one it makes differently is built when it is asked for.
"""

from __future__ import annotations

import ast
import functools
import inspect
import re
import string
import textwrap

from cuda_agent.sandbox.process.messages import ExtensionCall
from cuda_agent.sandbox.single_file.hook import inline_call

_NEEDED = (
    "name", "cpp_sources", "cuda_sources", "functions", "extra_cflags", "extra_cuda_cflags",
    "extra_ldflags", "extra_include_paths", "with_cuda",
)  # fmt: skip
_DEPTH = 32  # names that refer to names, at most
_MAX_CHARS = 4 * 2**20  # a value past this is not a source anyone writes by hand
_FIELD = re.compile(r"\w*")  # a format field: positional or named, no attribute or index
_SPEC = re.compile(r"[<>^=]?[-+ ]?#?0?\d{0,3}(\.\d{1,3})?[bcdoxXeEfFgGns%]?")


class _Unknown(Exception):
    """The value is not fixed by the text alone."""


@functools.cache
def torch_signature() -> inspect.Signature:
    """load_inline's signature, torch's own (this imports torch)."""
    from torch.utils.cpp_extension import load_inline

    return inspect.signature(load_inline)


def literal_calls(source: str, signature: inspect.Signature | None = None) -> list[ExtensionCall]:
    """The load_inline calls of `source` whose arguments the text fixes, in the file's order;
    the arguments are bound as `signature` (default: torch's load_inline) binds them."""
    signature = signature or torch_signature()
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    module_names = _bindings(tree.body)
    calls: list[ExtensionCall] = []
    for scope, node in _load_inline_calls(tree):
        if _spread(node):
            continue
        names = {**module_names, **_bindings(scope.body)} if scope is not tree else module_names
        try:
            bound = signature.bind(*node.args, **{k.arg: k.value for k in node.keywords})
        except TypeError:
            continue
        bound.apply_defaults()
        try:
            args = {
                k: _value(v, names, 0) if isinstance(v, ast.AST) else v
                for k, v in bound.arguments.items()
                if k in _NEEDED
            }
            call = inline_call(args)
        except (_Unknown, ValueError, TypeError, KeyError, IndexError, AttributeError):
            continue
        if call not in calls:
            calls.append(call)
    return calls


def _load_inline_calls(tree: ast.Module):
    """(the innermost function or module around it, the call) of each call to a name or
    attribute load_inline."""
    scopes: list[ast.AST] = [tree]

    def visit(node: ast.AST):
        is_scope = isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        if is_scope:
            scopes.append(node)
        if isinstance(node, ast.Call) and _called_name(node.func) == "load_inline":
            yield scopes[-1], node
        for child in ast.iter_child_nodes(node):
            yield from visit(child)
        if is_scope:
            scopes.pop()

    yield from visit(tree)


def _spread(call: ast.Call) -> bool:
    """Whether a call passes *args or **kwargs (what they hold is not read)."""
    return any(isinstance(a, ast.Starred) for a in call.args) or any(
        k.arg is None for k in call.keywords
    )


def _called_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _bindings(body: list[ast.stmt]) -> dict[str, ast.expr]:
    """Names a block binds exactly once, by plain assignment, to their expression; a name
    bound twice, or also bound otherwise (augmented, in a loop, imported, a parameter), is left
    out."""
    counts: dict[str, int] = {}
    values: dict[str, ast.expr] = {}
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
                counts[node.id] = counts.get(node.id, 0) + 1
            elif isinstance(node, ast.arg):  # a parameter hides the module's name
                counts[node.arg] = counts.get(node.arg, 0) + 1
            elif isinstance(node, ast.alias):
                name = (node.asname or node.name).split(".")[0]
                counts[name] = counts.get(name, 0) + 1
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and isinstance(stmt.targets[0], ast.Name)
        ):
            values[stmt.targets[0].id] = stmt.value
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value:
            values[stmt.target.id] = stmt.value
    return {n: v for n, v in values.items() if counts.get(n) == 1}


def _value(node: ast.expr, names: dict[str, ast.expr], depth: int):
    """The value of an expression built from literals and once-bound names only."""
    value = _evaluated(node, names, depth)
    if isinstance(value, str | list) and len(value) > _MAX_CHARS:
        raise _Unknown
    return value


def _evaluated(node: ast.expr, names: dict[str, ast.expr], depth: int):
    if depth > _DEPTH:
        raise _Unknown
    deeper = depth + 1
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in names:
            raise _Unknown
        return _value(names[node.id], names, deeper)
    if isinstance(node, ast.List | ast.Tuple):
        return [_value(e, names, deeper) for e in node.elts]
    if isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            raise _Unknown
        return {_value(k, names, deeper): _value(v, names, deeper)
                for k, v in zip(node.keys, node.values, strict=True)}  # fmt: skip
    if isinstance(node, ast.JoinedStr):
        return "".join(_formatted(part, names, deeper) for part in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _value(node.left, names, deeper), _value(node.right, names, deeper)
        if type(left) is not type(right) or not isinstance(left, str | list | int):
            raise _Unknown
        return left + right
    if isinstance(node, ast.Call):
        return _called(node, names, deeper)
    raise _Unknown


def _formatted(part: ast.expr, names: dict[str, ast.expr], depth: int) -> str:
    if isinstance(part, ast.Constant):
        return str(part.value)
    if not isinstance(part, ast.FormattedValue) or part.conversion not in (-1, ord("s")):
        raise _Unknown
    value = _value(part.value, names, depth)
    if not isinstance(value, str | int) or isinstance(value, bool):
        raise _Unknown
    spec = "" if part.format_spec is None else _value(part.format_spec, names, depth)
    if not isinstance(spec, str) or not _SPEC.fullmatch(spec):
        raise _Unknown
    return format(value, spec)


def _called(node: ast.Call, names: dict[str, ast.expr], depth: int):
    """`str.format`, `str.join`, `str.strip` and `textwrap.dedent` of literal values."""
    if _spread(node):
        raise _Unknown
    args = [_value(a, names, depth) for a in node.args]
    kwargs = {k.arg: _value(k.value, names, depth) for k in node.keywords}
    func = node.func
    if _called_name(func) == "dedent" and len(args) == 1 and not kwargs:
        if not isinstance(args[0], str):
            raise _Unknown
        return textwrap.dedent(args[0])
    if not isinstance(func, ast.Attribute):
        raise _Unknown
    owner = _value(func.value, names, depth)
    if not isinstance(owner, str):
        raise _Unknown
    plain = all(isinstance(v, str | int) and not isinstance(v, bool) for v in
                [*args, *kwargs.values()])  # fmt: skip
    if func.attr == "format" and plain and _plain_fields(owner):
        return owner.format(*args, **kwargs)
    if func.attr == "join" and len(args) == 1 and not kwargs and isinstance(args[0], list):
        if not all(isinstance(s, str) for s in args[0]):
            raise _Unknown
        return owner.join(args[0])
    if func.attr in ("strip", "lstrip", "rstrip") and not args and not kwargs:
        return getattr(owner, func.attr)()
    raise _Unknown


def _plain_fields(template: str) -> bool:
    """Whether every field of a format string is a bare name or position with a small spec:
    no attribute or item lookups (they would run in the harness's process), no huge widths."""
    try:
        fields = [
            (f, spec) for _, f, spec, _ in string.Formatter().parse(template) if f is not None
        ]
    except ValueError:
        return False
    return all(_FIELD.fullmatch(f) and _SPEC.fullmatch(spec or "") for f, spec in fields)
