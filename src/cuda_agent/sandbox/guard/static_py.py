"""Static rules for a solution's Python (model_new.py), read by AST.

Deny by default: every `torch.*` name is PyTorch compute unless it is on the allow-list in
rules.py (allocation, dtypes, types, metadata, views). Names are resolved through import and
assignment aliases (`F = torch.nn.functional`, `from torch.nn.functional import gelu as g`), and
a reference that is not a call counts too (`self.act = F.gelu`). Tensor operators and methods are
judged on what the reader can tell is a tensor: forward's parameters, allocations, extension
outputs, parameters and buffers, and names assigned from them; the rest is left to the runtime.

`__init__` is treated apart: it builds parameters and buffers and never sees an input, so it may
construct nn modules as parameter holders and call torch functions (a causal mask, an init);
storing a torch function for later, or calling a held module in forward, is refused.

A dialect may name kernels: module-level functions another compiler builds (a Triton file's
@triton.jit functions). Their bodies are device code, never run as Python, so the PyTorch
compute rules skip them (arithmetic on pointers and blocks is the kernel's own work) while the
integrity rules still read them; launching one, `kernel[grid](...)`, is using the extension.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from cuda_agent.sandbox.guard.findings import Finding, texts
from cuda_agent.sandbox.guard.profile import Family, Layer
from cuda_agent.sandbox.guard.rules import (
    ALLOCATION,
    ALLOWED_DUNDER_ATTRS,
    ALLOWED_DUNDER_METHODS,
    ALLOWED_DUNDER_NAMES,
    ALLOWED_REGISTER,
    ALLOWED_TORCH,
    ATEN_OPS,
    COMPARISONS,
    COMPUTE,
    COMPUTE_METHODS,
    FLOAT32_NAMES,
    FORBIDDEN_BUILTINS,
    HOLDER_TENSORS,
    IMPORT_REASONS,
    INTEGRITY_METHODS,
    MESSAGES,
    PY_COMMON_METHODS,
    PY_CONVERSION_METHODS,
    PY_FAMILIES,
    SYMBOLS,
    TENSOR_BUILTINS,
    TENSOR_RETURNING,
    TENSOR_VIEW_FUNCTIONS,
    TORCH_CATEGORIES,
    TORCH_DTYPES,
    TORCH_HIGH_DTYPES,
    TORCH_MODULES,
    VIEW_PROPERTIES,
)
from cuda_agent.sandbox.violation import Rule

_PIECES = ("split", "chunk", "unbind")  # views that return a tuple of tensors
_PIECE_FUNCTIONS = frozenset(f"torch.{n}" for n in _PIECES)
# a conversion reaches the method rule only where it names another dtype (see _method_call)
_STRICT_METHODS = INTEGRITY_METHODS | PY_CONVERSION_METHODS


@dataclass(frozen=True)
class PythonDialect:
    """What a submission format changes in these rules. The workspace's is the default; a
    single-file submission (KernelBench's) builds its extension itself, so it may call the
    `extension_builders` (whose result counts as the extension) and use a few more names."""

    entry_point: str = "ModelNew"
    allowed_names: frozenset[str] = frozenset()  # qualified names allowed beyond the rules
    allowed_builtins: frozenset[str] = frozenset()
    extension_builders: frozenset[str] = frozenset()
    refuse: Callable[[str], tuple[str, str] | None] | None = None  # other modules' names
    assignable: frozenset[str] = frozenset()  # library names it may assign into (os.environ)
    messages: dict[str, str] = field(default_factory=dict)  # rule -> message, over MESSAGES
    kernels: frozenset[str] = frozenset()  # module-level device functions, see the docstring


def check_python(
    path: str, text: str, allowed_imports: frozenset[str], dialect: PythonDialect | None = None
) -> list[str]:
    """One line per violation in the Python source `path`."""
    return texts(python_findings(path, text, allowed_imports, dialect))


def python_findings(
    path: str, text: str, allowed_imports: frozenset[str], dialect: PythonDialect | None = None
) -> list[Finding]:
    """Every finding in the Python source `path`, by line, each with its rule's family."""
    dialect = dialect or PythonDialect()
    try:
        tree = ast.parse(text)
    except SyntaxError as err:
        message = f"{path}:{err.lineno}: does not parse ({err.msg}); fix the syntax"
        family = PY_FAMILIES["syntax"]
        return [Finding(message, Rule.SYNTAX, family, Layer.STATIC_PYTHON, None, path)]
    checker = _Checker(tree, allowed_imports, dialect)
    checker.visit(tree)
    entry = dialect.entry_point
    model_new = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == entry]
    if model_new and not checker.uses_extension:
        checker.flag(model_new[0], "no_extension")
    unique: dict[tuple[int, str], tuple[str, str | None]] = {}
    for line, msg, rule, op in checker.found:
        unique.setdefault((line, msg), (rule, op))
    layer = Layer.STATIC_PYTHON
    return [
        Finding(f"{path}:{line}: {msg}", Rule(rule), PY_FAMILIES[rule], layer, op, path, line)
        for (line, msg), (rule, op) in sorted(unique.items(), key=lambda f: f[0][0])
    ]


@dataclass
class _ClassInfo:
    methods: set[str] = field(default_factory=set)
    tensors: set[str] = field(default_factory=set)  # self.X holding a tensor
    holders: dict[str, str] = field(default_factory=dict)  # self.X = nn.Linear(...)
    init_only: set[str] = field(default_factory=set)  # methods only __init__ calls


class _Checker(ast.NodeVisitor):
    def __init__(self, tree: ast.Module, allowed_imports: frozenset[str], dialect: PythonDialect):
        self.allowed_imports = allowed_imports
        self.dialect = dialect
        self.found: list[tuple[int, str, str, str | None]] = []  # line, message, rule, op
        nodes = list(ast.walk(tree))
        self.parent = {c: p for p in nodes for c in ast.iter_child_nodes(p)}
        self.bound = _bound_names(nodes)
        self.loaded = {
            n.id for n in nodes if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
        }
        self.attr_uses = Counter(n.attr for n in nodes if isinstance(n, ast.Attribute))
        self.aliases: dict[str, str] = {}
        self._collect_aliases(nodes)
        self.local_classes = {n.name for n in nodes if isinstance(n, ast.ClassDef)}
        self.cls: _ClassInfo | None = None
        self.in_init = False
        self.in_kernel = False
        self.tensors: set[str] = set()
        self.uses_extension = False  # calls the extension or launches one of the kernels

    def flag(self, node: ast.AST, rule: str, op: str | None = None, **fields: str) -> None:
        """A finding of `rule` at `node`; `op` names what PyTorch computes, for its listing."""
        if self.in_kernel and PY_FAMILIES[rule] == Family.TORCH_COMPUTE:
            return  # device code: what reads as PyTorch compute there is the kernel's own work
        message = self.dialect.messages.get(rule, MESSAGES[rule])
        self.found.append((getattr(node, "lineno", 1), message.format(**fields), rule, op))

    # ---- names: aliases and resolution to qualified names

    def _collect_aliases(self, nodes: list[ast.AST]) -> None:
        for node in nodes:
            if isinstance(node, ast.Import):
                for a in node.names:
                    root = a.name.split(".")[0]
                    self.aliases[a.asname or root] = a.name if a.asname else root
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for a in node.names:
                    self.aliases[a.asname or a.name] = f"{node.module}.{a.name}"
        assigns = [n for n in nodes if isinstance(n, ast.Assign)]
        for _ in range(3):  # alias chains: t = torch; F = t.nn.functional; g = F.gelu
            for node in assigns:
                target = self.resolve(node.value)
                if self._builds_extension(node.value):
                    target = "cuda_extension"
                for t in node.targets:
                    if target and isinstance(t, ast.Name):
                        self.aliases[t.id] = target
                    elif (target or "").split(".")[0] == "cuda_extension" and _is_self(
                        getattr(t, "value", None)
                    ):  # self.ext = load_inline(...): self.ext.f(x); self.mm = ext.f: self.mm(x)
                        self.aliases[f"self.{t.attr}"] = target

    def _builds_extension(self, value: ast.AST) -> bool:
        """A call of the dialect's extension builders (load_inline in a single-file submission)."""
        builders = self.dialect.extension_builders
        return isinstance(value, ast.Call) and self.resolve(value.func) in builders

    def resolve(self, node: ast.AST | None) -> str | None:
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id)
        if isinstance(node, ast.Attribute):
            if _is_self(node.value) and f"self.{node.attr}" in self.aliases:
                return self.aliases[f"self.{node.attr}"]
            base = self.resolve(node.value)
            return f"{base}.{node.attr}" if base else None
        return None

    @staticmethod
    def torch_rule(q: str) -> tuple[str, str, str] | None:
        """(category, what it is, what to do) for a torch name that is refused; None if allowed."""
        parts = q.split(".")
        if q in ALLOWED_TORCH or (parts[:2] == ["torch", "Tensor"] and len(parts) == 3):
            if q in ALLOWED_TORCH or parts[2] not in COMPUTE_METHODS:
                return None
            return ("compute", "a PyTorch tensor method", COMPUTE[2])
        if parts[:2] == ["torch", "nn"] and len(parts) == 3 and parts[2][:1].isupper():
            return ("nn", "", "")
        for prefixes, what, fix in TORCH_CATEGORIES:
            for p in prefixes.split():
                if q == p or q.startswith(p + ".") or (p.endswith("_") and q.startswith(p)):
                    return ("other", what, fix)
        return COMPUTE

    def _check_reference(self, node: ast.AST, q: str) -> None:
        root, dialect = q.split(".")[0], self.dialect
        self.uses_extension |= root == "cuda_extension" or q in dialect.extension_builders
        if q in dialect.allowed_names:
            return
        if root != "torch":
            refused = self._refused(q)
            if refused:
                parent = self.parent.get(node)
                verb = "calls" if isinstance(parent, ast.Call) and parent.func is node else "uses"
                self.flag(node, "torch", verb=verb, q=q, what=refused[0], fix=refused[1])
            return
        parent = self.parent.get(node)
        if q in TORCH_MODULES:
            alias = isinstance(parent, ast.Assign) and parent.value is node
            if not (alias and all(isinstance(t, ast.Name) for t in parent.targets)):
                self.flag(node, "module_value", q=q)
            return
        rule = self.torch_rule(q)
        called = isinstance(parent, ast.Call) and parent.func is node
        if rule is None or (rule[0] in ("compute", "nn") and self.in_init and called):
            return
        if rule[0] == "nn":
            if called:  # named without building (isinstance, a default) it computes nothing
                self.flag(node, "nn_outside_init", op=q, q=q)
        else:
            verb = "calls" if called else "uses"
            kind = self._compute_kind(q, rule, parent if called else None)
            self.flag(node, kind, op=q, verb=verb, q=q, what=rule[1], fix=rule[2])

    def _compute_kind(self, q: str, rule: tuple[str, str, str], call: ast.Call | None) -> str:
        """The rule of a refused torch name: compute (an ATen operator by torch.ops.aten too),
        compute that names a lower dtype, or another of the torch rules."""
        parts = q.split(".")
        aten = parts[:3] == ["torch", "ops", "aten"] and len(parts) > 3 and parts[3] in ATEN_OPS
        if rule[0] != "compute" and not aten:
            return "torch"
        if parts[-1] in INTEGRITY_METHODS or (call is not None and self._names_low_dtype(call)):
            return "torch_integrity"
        return "torch_compute"

    # ---- tensors: what the reader can tell holds one

    def is_tensor(self, node: ast.AST | None) -> bool:
        if isinstance(node, ast.Name):
            return node.id in self.tensors
        if isinstance(node, ast.Attribute):
            base, cls = node.value, self.cls
            if _is_self(base):
                return bool(cls) and node.attr in cls.tensors
            if _is_self(getattr(base, "value", None)) and cls and base.attr in cls.holders:
                return node.attr in HOLDER_TENSORS
            return node.attr in VIEW_PROPERTIES and self.is_tensor(base)
        if isinstance(node, ast.Subscript | ast.Starred):
            return self.is_tensor(node.value)
        if isinstance(node, ast.Call):
            q, func = self.resolve(node.func), node.func
            if q:
                rule = self.torch_rule(q) if q.startswith("torch.") else None
                compute = rule is not None and rule[0] == "compute"
                made = q in ALLOCATION or q in TENSOR_VIEW_FUNCTIONS
                return q.startswith("cuda_extension.") or made or compute
            return isinstance(func, ast.Attribute) and self.is_tensor(func.value) and (
                func.attr in TENSOR_RETURNING or func.attr in COMPUTE_METHODS
            )  # fmt: skip
        if isinstance(node, ast.BinOp):
            return self.is_tensor(node.left) or self.is_tensor(node.right)
        if isinstance(node, ast.UnaryOp):
            return self.is_tensor(node.operand)
        if isinstance(node, ast.IfExp):
            return self.is_tensor(node.body) or self.is_tensor(node.orelse)
        if isinstance(node, ast.Compare) and not all(
            isinstance(o, ast.Is | ast.IsNot) for o in node.ops
        ):
            return any(self.is_tensor(x) for x in (node.left, *node.comparators))
        return False

    # ---- scopes

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        if node.name == "Model" and self.dialect.entry_point != "Model":
            self.flag(node, "define_model")
        for base in node.bases:
            local = isinstance(base, ast.Name) and base.id in self.local_classes | {"object"}
            if not (local or self.resolve(base) == "torch.nn.Module" or _is_name(base, "Model")):
                self.flag(base, "base", cls=node.name, base=ast.unparse(base))
        if node.keywords:
            self.flag(node, "keywords", cls=node.name)
        info = _ClassInfo()
        methods = {
            item.name: item
            for item in node.body
            if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
        }
        info.methods = set(methods)
        info.init_only = _init_only(methods, self.attr_uses)
        for name, item in methods.items():
            if _is_dunder(name) and name not in ALLOWED_DUNDER_METHODS:
                self.flag(item, "dunder_method", name=name)
            if name == "__init__" or name in info.init_only:
                self._collect_init(item, info)
        outer, self.cls = self.cls, info
        self.generic_visit(node)
        self.cls = outer

    def _collect_init(self, init: ast.FunctionDef | ast.AsyncFunctionDef, info: _ClassInfo) -> None:
        """self.X = torch.*(...) holds a tensor; self.X = nn.Linear(...) holds a module."""
        for node in ast.walk(init):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                q = self.resolve(node.value.func) or ""
                rule = self.torch_rule(q) if q.startswith("torch.") else None
                for t in node.targets:
                    if not (isinstance(t, ast.Attribute) and _is_self(t.value) and q):
                        continue
                    if rule and rule[0] == "nn" and q != "torch.nn.Parameter":
                        info.holders[t.attr] = q
                    elif q.startswith("torch."):
                        info.tensors.add(t.attr)
            elif isinstance(node, ast.Call) and _attr(node.func) in _REGISTER_TENSOR and node.args:
                if isinstance(node.args[0], ast.Constant):
                    info.tensors.add(str(node.args[0].value))

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        module_level = isinstance(self.parent.get(node), ast.Module)
        if module_level and node.name not in self.loaded:
            # nothing in the file calls it (get_inputs, a leftover helper): its body never
            # runs; what runs as it is defined (decorators, defaults) is still read
            self._visit_definition(node)
            return
        if module_level and node.name in self.dialect.kernels:
            # its definition runs as Python (autotune's hooks, heuristics); its body is read
            # as device code, where no name holds a torch tensor
            self._visit_definition(node)
            saved = (self.in_kernel, self.tensors)
            self.in_kernel, self.tensors = True, set()
            for statement in node.body:
                self.visit(statement)
            self.in_kernel, self.tensors = saved
            return
        saved = (self.in_init, self.tensors)
        method = isinstance(self.parent.get(node), ast.ClassDef)
        init_only = method and self.cls is not None and node.name in self.cls.init_only
        self.in_init = self.in_init or (method and node.name == "__init__") or init_only
        self.tensors = set() if self.in_init else self._tensor_names(node)
        self.generic_visit(node)
        self.in_init, self.tensors = saved

    visit_AsyncFunctionDef = visit_FunctionDef

    def _visit_definition(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        """What runs as a function is defined: its decorators, defaults and annotations."""
        for part in (*node.decorator_list, node.args, node.returns):
            if part is not None:
                self.visit(part)

    def _tensor_names(self, fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
        """Parameters (unless annotated or defaulted as scalars) and names assigned from them."""
        args = fn.args.posonlyargs + fn.args.args
        defaults = [None] * (len(args) - len(fn.args.defaults)) + fn.args.defaults
        pairs = list(zip(args, defaults, strict=True))
        pairs += list(zip(fn.args.kwonlyargs, fn.args.kw_defaults, strict=True))
        self.tensors = {
            a.arg
            for a, default in pairs
            if a.arg not in ("self", "cls")
            and (a.annotation is None or "Tensor" in ast.unparse(a.annotation))
            and not (isinstance(default, ast.Constant) and default.value is not None)
        }
        flow = [
            n
            for n in ast.walk(fn)
            if isinstance(n, ast.Assign | ast.AnnAssign | ast.NamedExpr | ast.For)
        ]
        for _ in range(2):
            for node in flow:
                if isinstance(node, ast.Assign | ast.AnnAssign | ast.NamedExpr) and node.value:
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    self._mark(targets, node.value)
                elif isinstance(node, ast.For) and self.is_tensor(node.iter):
                    self._mark([node.target], node.iter)
        return self.tensors

    def _mark(self, targets: list[ast.expr], value: ast.expr) -> None:
        func = value.func if isinstance(value, ast.Call) else None
        pieces = isinstance(func, ast.Attribute) and func.attr in _PIECES
        if pieces and self.resolve(func) in _PIECE_FUNCTIONS:
            pieces = bool(value.args) and self.is_tensor(value.args[0])  # torch.chunk(x, 2)
        else:
            pieces = pieces and self.is_tensor(func.value)  # x.chunk(2)
        for t in targets:
            if isinstance(t, ast.Name) and (self.is_tensor(value) or pieces):
                self.tensors.add(t.id)
            elif isinstance(t, ast.Tuple | ast.List):
                values = value.elts if isinstance(value, ast.Tuple | ast.List) else []
                for k, elt in enumerate(t.elts):
                    known = k < len(values) and self.is_tensor(values[k])
                    if isinstance(elt, ast.Name) and (pieces or known):
                        self.tensors.add(elt.id)

    # ---- imports

    def visit_Import(self, node: ast.Import) -> None:
        for a in node.names:
            self._check_module(node, a.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            self.flag(node, "relative")
            return
        module = node.module or ""
        allowed = self._check_module(node, module)
        from_torch = module.split(".")[0] == "torch"
        for a in node.names:
            q = f"{module}.{a.name}"
            rule = self.torch_rule(q) if from_torch else None
            # an allowed module's refused names (from triton import knobs), named where imported
            refused = self._refused(q) if allowed and not from_torch else None
            if a.name == "*":
                self.flag(node, "star", module=module)
            elif a.name == "Model":
                self.flag(node, "model")
            elif rule and rule[0] != "nn" and q not in TORCH_MODULES | self.dialect.allowed_names:
                kind = "imports_torch_compute" if rule[0] == "compute" else "imports_torch"
                self.flag(node, kind, op=q, q=q, what=rule[1], fix=rule[2])
            elif refused:
                self.flag(node, "imports_torch", q=q, what=refused[0], fix=refused[1])

    def _check_module(self, node: ast.AST, name: str) -> bool:
        """Whether `name` may be imported; flagged, with the dialect's reason first, if not."""
        if name in self.allowed_imports:
            return True
        root, refused = name.split(".")[0], self._refused(name)
        reason = refused[0] if refused else IMPORT_REASONS.get(name) or IMPORT_REASONS.get(root)
        allowed = ", ".join(sorted(self.allowed_imports - {"__future__"}))
        self.flag(node, "import", name=name, why=f" ({reason})" if reason else "", allowed=allowed)
        return False

    def _refused(self, q: str) -> tuple[str, str] | None:
        """(what it is, what to do) for a name outside torch the dialect refuses, or None."""
        return self.dialect.refuse(q) if self.dialect.refuse else None

    # ---- references

    def visit_Name(self, node: ast.Name) -> None:
        name = node.id
        # a file entered at Model names its own class so: the reference never enters its process
        if name == "Model" and self.dialect.entry_point != "Model":
            self.flag(node, "model")
        elif (
            name in FORBIDDEN_BUILTINS
            and name not in self.dialect.allowed_builtins
            and (name not in self.bound or name == "__import__")
            and not self._reads_own_attribute(node)
        ):
            what, fix = FORBIDDEN_BUILTINS[name]
            self.flag(node, "builtin", name=name, what=what, fix=fix)
        elif _is_dunder(name) and name not in ALLOWED_DUNDER_NAMES:
            self.flag(node, "dunder", name=name)
        self._maybe_reference(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr == "Model":
            self.flag(node, "model")
        elif _is_dunder(node.attr) and (
            node.attr not in ALLOWED_DUNDER_ATTRS or not isinstance(node.ctx, ast.Load)
        ):
            self.flag(node, "dunder", name=f".{node.attr}")
        self._maybe_reference(node)
        self.generic_visit(node)

    def _reads_own_attribute(self, node: ast.Name) -> bool:
        """getattr(self.gru, f"weight_l{k}") or hasattr(self, "ready"): reading the module's
        own attributes by name, not reaching other modules."""
        call = self.parent.get(node)
        if node.id not in _READERS or not isinstance(call, ast.Call) or call.func is not node:
            return False
        owner = call.args[0] if call.args else None
        return _is_self(owner) if node.id == "hasattr" else _is_self_attribute(owner)

    def _maybe_reference(self, node: ast.Name | ast.Attribute) -> None:
        parent = self.parent.get(node)
        if not isinstance(node.ctx, ast.Load) or (
            isinstance(parent, ast.Attribute) and parent.value is node
        ):
            return  # a target (see _check_targets), or part of a longer name judged whole
        q = self.resolve(node)
        if q:
            self._check_reference(node, q)

    # ---- calls, operators, indexing

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Subscript) and isinstance(func.value, ast.Name):
            self.uses_extension |= func.value.id in self.dialect.kernels  # kernel[grid](...)
        if isinstance(func, ast.Attribute) and self.resolve(func) is None:
            self._method_call(node, func)
        elif (
            isinstance(func, ast.Name)
            and func.id in TENSOR_BUILTINS
            and func.id not in self.bound
            and not self.in_init
            and any(self.is_tensor(a) for a in node.args)
        ):
            self.flag(node, "builtin_on_tensor", op=f"{func.id}()", name=func.id)
        self.generic_visit(node)

    def _method_call(self, call: ast.Call, func: ast.Attribute) -> None:
        name, recv, cls = func.attr, func.value, self.cls
        if name.startswith("register_") and name not in ALLOWED_REGISTER:
            self.flag(func, "hook", name=name)
        if self.in_init or _is_dunder(name):
            return
        if _is_self(recv) and cls and name in cls.holders:
            held = cls.holders[name]
            self.flag(func, "held_module", op=f"self.{name} ({held})", name=name, q=held)
        elif (_is_self(recv) and cls and name in cls.methods) or _is_super_call(recv):
            return
        elif name in PY_CONVERSION_METHODS and not self._names_other_dtype(call):
            return
        elif name in COMPUTE_METHODS and (name not in PY_COMMON_METHODS or self.is_tensor(recv)):
            strict = name in _STRICT_METHODS or self._names_low_dtype(call)
            self.flag(func, "integrity_method" if strict else "method", op=f".{name}()", name=name)
        elif name.startswith("_") and not _is_self(recv):
            self.flag(func, "private", name=name)

    def _names_low_dtype(self, call: ast.Call) -> bool:
        """Whether a call's arguments name a dtype other than float32 and float64."""
        values = [*call.args, *(k.value for k in call.keywords)]
        names = {self.resolve(v) for v in values}
        return any(q in TORCH_DTYPES and q not in TORCH_HIGH_DTYPES for q in names)

    def _names_other_dtype(self, call: ast.Call) -> bool:
        """Whether a conversion's arguments name a dtype other than float32 (x.to(torch.half))."""
        values = [*call.args, *(k.value for k in call.keywords)]
        names = {self.resolve(v) for v in values}
        return any(q in TORCH_DTYPES and q not in FLOAT32_NAMES for q in names)

    def _operator(self, node: ast.AST, op: ast.AST, operands: list[ast.expr]) -> None:
        if self.in_init:
            return
        if isinstance(op, ast.MatMult):
            self.flag(node, "matmul", op="@")
        elif any(self.is_tensor(x) for x in operands):
            symbol = SYMBOLS.get(type(op), type(op).__name__)
            self.flag(node, "operator", op=symbol, symbol=symbol)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        self._operator(node, node.op, [node.left, node.right])
        self.generic_visit(node)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> None:
        self._operator(node, node.op, [node.operand])
        self.generic_visit(node)

    def visit_BoolOp(self, node: ast.BoolOp) -> None:
        self._operator(node, ast.Not(), node.values)
        self.generic_visit(node)

    def visit_Compare(self, node: ast.Compare) -> None:
        identity = all(isinstance(op, ast.Is | ast.IsNot) for op in node.ops)
        operands = [node.left, *node.comparators]
        if not (identity or self.in_init) and any(self.is_tensor(x) for x in operands):
            self.flag(node, "compare", op=_compare_symbol(node))
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        index = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if not self.in_init and self.is_tensor(node.value):
            if not isinstance(node.ctx, ast.Load):
                self.flag(node, "slice_write", op="a slice write")
            elif any(self.is_tensor(i) for i in index):
                self.flag(node, "tensor_index", op="a tensor index")
        self.generic_visit(node)

    # ---- assignments: monkey-patching

    def _visit_targets(self, node: ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Delete) -> None:
        targets = node.targets if isinstance(node, ast.Assign | ast.Delete) else [node.target]
        self._check_targets(targets, "deletes" if isinstance(node, ast.Delete) else "assigns to")
        if isinstance(node, ast.AugAssign):
            self._operator(node, node.op, [node.target, node.value])
        self.generic_visit(node)

    visit_Assign = visit_AugAssign = visit_AnnAssign = visit_Delete = _visit_targets

    def _check_targets(self, targets: list[ast.expr], verb: str) -> None:
        for target in targets:
            if isinstance(target, ast.Tuple | ast.List):
                self._check_targets(list(target.elts), verb)
                continue
            root, reached = target, False
            while isinstance(root, ast.Attribute | ast.Subscript | ast.Call):
                reached |= isinstance(root, ast.Call) or _attr(root) == "__class__"
                root = root.func if isinstance(root, ast.Call) else root.value
            if reached:  # x.__class__.add = ..., type(x).add = ...: patches a class
                self.flag(target, "patch", verb=verb, target=ast.unparse(target))
            elif root is not target and isinstance(root, ast.Name) and root.id in self.aliases:
                base = target.value if isinstance(target, ast.Subscript) else None
                if base is None or self.resolve(base) not in self.dialect.assignable:
                    self.flag(target, "patch", verb=verb, target=ast.unparse(target))


_REGISTER_TENSOR = ("register_buffer", "register_parameter")
_READERS = frozenset({"getattr", "hasattr"})


def _compare_symbol(node: ast.Compare) -> str:
    return " ".join(dict.fromkeys(COMPARISONS.get(type(op), type(op).__name__) for op in node.ops))


def _attr(node: ast.AST) -> str | None:
    return node.attr if isinstance(node, ast.Attribute) else None


def _is_self(node: ast.AST | None) -> bool:
    return _is_name(node, "self")


def _is_name(node: ast.AST | None, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def _is_self_attribute(node: ast.AST | None) -> bool:
    """self.x, self.x.y, self.x[0]: something the module itself holds."""
    while isinstance(node, ast.Attribute | ast.Subscript):
        if _is_self(node.value):
            return True
        node = node.value
    return False


def _is_super_call(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and _is_name(node.func, "super")


def _is_dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


def _init_only(
    methods: dict[str, ast.FunctionDef | ast.AsyncFunctionDef], uses: Counter
) -> set[str]:
    """Methods only __init__ runs (self.reset_parameters()): reached from it by direct calls,
    and named nowhere else in the file, so they run once, on no input, as __init__ does."""
    if "__init__" not in methods:
        return set()
    calls = {
        name: [
            n
            for n in ast.walk(fn)
            if isinstance(n, ast.Call)
            and isinstance(n.func, ast.Attribute)
            and _is_self(n.func.value)
        ]
        for name, fn in methods.items()
    }
    found: set[str] = set()
    todo = ["__init__"]
    while todo:
        for call in calls[todo.pop()]:
            name = call.func.attr
            if name in methods and name not in found | {"forward"} and not _is_dunder(name):
                found.add(name)
                todo.append(name)
    while True:  # a method named elsewhere leaves the set, and so do the calls it makes
        direct = Counter(c.func.attr for m in ["__init__", *found] for c in calls[m])
        kept = {name for name in found if uses[name] == direct[name]}
        if kept == found:
            return found
        found = kept


def _bound_names(nodes: list[ast.AST]) -> set[str]:
    """Every name the file binds (arguments, assignments, loops, definitions), so a parameter
    called `input` is not taken for the builtin."""
    names: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
    return names
