"""Static rules for a solution's C++/CUDA sources (kernels/*.cu, *.cuh, *_binding.cpp, headers).

Sources are read as tokens after comments and string literals are blanked out; nothing is
preprocessed, so a macro that pastes tokens (`a##b`), a C++ operator on tensors (`x * s`) or an
unqualified call that C++ resolves by argument-dependent lookup (`relu(x)` on an at::Tensor) is
invisible here. The runtime guard (a dispatch trace of the candidate's forward and a profile of
the kernels it ran) is the net for those; these rules give early, readable feedback on what a
model usually writes. The tables are in rules.py; #include directives are read in includes.py.
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatch
from os.path import normpath
from pathlib import PurePosixPath

from cuda_agent.sandbox.guard.cpp_lexer import blank, tokens
from cuda_agent.sandbox.guard.findings import Finding, texts
from cuda_agent.sandbox.guard.includes import Include, read_includes, without_includes
from cuda_agent.sandbox.guard.profile import Layer
from cuda_agent.sandbox.guard.rules import (
    ALLOWED_ATEN,
    ALLOWED_PYBIND,
    ATEN_FIX,
    ATEN_INCLUDES,
    ATEN_OP_ROOTS,
    ATEN_OPS,
    ATEN_REASONS,
    CPP_COMPUTE_METHODS,
    CPP_FAMILIES,
    CPP_KEYWORDS,
    CPP_LOW_DTYPE_PREFIXES,
    CPP_LOW_DTYPES,
    CUDA_FIX,
    FORBIDDEN_CUDA_PREFIXES,
    FORBIDDEN_MACROS,
    INCLUDE_FIX,
    INCLUDE_REASONS,
    INFRA_HEADERS,
    INTEGRITY_METHODS,
    NS_ROOTS,
    PY_C_API,
    PY_FIX,
    PY_MODULE_METHODS,
    STD_FORBIDDEN,
    SYS_COMMON,
    SYS_DISTINCT,
    SYS_FIX,
)
from cuda_agent.sandbox.violation import Rule

# ------------------------------------------------------------------------------------- checks


@dataclass(frozen=True)
class _Problem:
    rule: str  # a key of CPP_FAMILIES
    text: str
    op: str | None = None  # what PyTorch computes, for a torch_compute rule


def check_cpp(path: str, text: str, files: frozenset[str], includes: tuple[str, ...]) -> list[str]:
    """One line per violation in the C++/CUDA source `path` (solution-relative); `files` are the
    solution's paths (its own headers may be included), `includes` the allowed header patterns."""
    return texts(cpp_findings(path, text, files, includes))


def cpp_findings(
    path: str, text: str, files: frozenset[str], includes: tuple[str, ...]
) -> list[Finding]:
    """Every finding in the C++/CUDA source `path`, by line, each with its rule's family."""
    found: list[tuple[int, _Problem]] = []
    for directive in read_includes(text):
        problem = _include_problem(directive, path, files, includes)
        if problem:
            found.append((directive.line, problem))
    code = without_includes(blank(text, keep_strings=False))
    toks = tokens(code)
    defined = _defined_functions(toks)
    for i, (_tok, line) in enumerate(toks):
        problem = _token_problem(toks, i, defined)
        if problem:
            found.append((line, problem))
    unique: dict[tuple[int, str], _Problem] = {}
    for line, problem in found:
        unique.setdefault((line, problem.text), problem)
    layer = Layer.STATIC_CPP
    return [
        Finding(
            f"{path}:{line}: {p.text}", Rule(p.rule), CPP_FAMILIES[p.rule], layer, p.op, path, line
        )
        for (line, _), p in sorted(unique.items(), key=lambda f: f[0][0])
    ]


def _include_problem(
    directive: Include, path: str, files: frozenset[str], allowed: tuple[str, ...]
) -> _Problem | None:
    if directive.kind != "include":
        return _Problem("directive", f"uses #{directive.kind}; {INCLUDE_FIX}")
    name = directive.name
    if name is None:
        return _Problem(
            "computed_include",
            f"uses a computed #include ({directive.target}); write the header's name literally",
        )
    own = (PurePosixPath(path).parent / name).as_posix()
    if ".." not in PurePosixPath(name).parts and (own in files or f"kernels/{name}" in files):
        return None
    if normpath(own) in INFRA_HEADERS:  # "../binding_registry.h": the harness's own copy
        return None
    if any(fnmatch(name, pattern) for pattern in allowed):
        return None
    reason = next((why for pattern, why in INCLUDE_REASONS if fnmatch(name, pattern)), None)
    text = f"includes <{name}>{f' ({reason})' if reason else ''}; {INCLUDE_FIX}"
    if any(fnmatch(name, pattern) for pattern in ATEN_INCLUDES):
        return _Problem("include_aten", text, f"<{name}>")
    return _Problem("include", text)


def _defined_functions(toks: list[tuple[str, int]]) -> frozenset[str]:
    """Names the source defines with a body (`T name(...) {`), so a kernel's own `read()` helper
    is not taken for the system call (a bare declaration does not count)."""
    names = set()
    for i in range(1, len(toks) - 1):
        prev = toks[i - 1][0]
        if toks[i + 1][0] != "(" or not prev.isidentifier() or prev in CPP_KEYWORDS:
            continue
        depth, j = 0, i + 1
        while j < len(toks):
            depth += {"(": 1, ")": -1}.get(toks[j][0], 0)
            if depth == 0:
                break
            j += 1
        while j + 1 < len(toks) and toks[j + 1][0] in ("const", "noexcept", "override"):
            j += 1
        if j + 1 < len(toks) and toks[j + 1][0] == "{":
            names.add(toks[i][0])
    return frozenset(names)


def _token_problem(toks: list[tuple[str, int]], i: int, defined: frozenset[str]) -> _Problem | None:
    tok = toks[i][0]
    if not tok.isidentifier():
        return None
    prev, prev2 = (toks[i - 1][0] if i else ""), (toks[i - 2][0] if i > 1 else "")
    nxt = toks[i + 1][0] if i + 1 < len(toks) else ""
    if tok in FORBIDDEN_MACROS:
        # a module of its own is a rule apart: a single-file extension defines one
        rule = "pybind11_module" if tok == "PYBIND11_MODULE" else "macro"
        return _Problem(rule, f"uses {tok}: {FORBIDDEN_MACROS[tok]}")
    if tok == "__attribute__" and {"constructor", "destructor"} & {t for t, _ in toks[i : i + 6]}:
        return _Problem(
            "load_hook",
            "marks a function to run when the library loads or unloads; run code only when called",
        )
    if PY_C_API.fullmatch(tok):
        return _Problem("python_c_api", f"uses the Python C API ({tok}); {PY_FIX}")
    if prev in (".", "->"):
        if tok in CPP_COMPUTE_METHODS and nxt in ("(", "<"):
            text = f"calls the tensor method .{tok}() (ATen compute); write a kernel instead"
            strict = tok in INTEGRITY_METHODS or _names_low_dtype(toks, i + 1)
            return _Problem("integrity_method" if strict else "method", text, f".{tok}()")
        if tok in PY_MODULE_METHODS and nxt == "(":
            text = f"calls pybind11's .{tok}() (Python objects from C++); {PY_FIX}"
            return _Problem("pybind_method", text)
        return None
    if prev == "::" and (prev2.isidentifier() or prev2 == ">"):
        return None  # an inner part of a qualified name, judged with its first part
    if prev == "namespace" and tok in NS_ROOTS and prev2 == "using":
        text = f"uses `using namespace {tok}`; name ATen, torch and pybind11 in full"
        return _Problem("using_namespace", text)
    if prev == "namespace" and nxt == "=" and i + 2 < len(toks) and toks[i + 2][0] in NS_ROOTS:
        text = f"aliases the namespace {toks[i + 2][0]}; name ATen, torch and pybind11 in full"
        return _Problem("namespace_alias", text)
    chain, j = [tok], i
    while j + 2 < len(toks) and toks[j + 1][0] == "::" and toks[j + 2][0].isidentifier():
        chain.append(toks[j + 2][0])
        j += 2
    if len(chain) > 1:
        return _qualified_problem(chain, _names_low_dtype(toks, j + 1))
    if tok in defined and prev != "::":
        return None
    called = nxt == "(" or prev == "&"
    if tok in SYS_DISTINCT or (tok in SYS_COMMON and called):
        return _Problem("sys", f"uses {tok} (process, file or environment access); {SYS_FIX}")
    if tok.startswith(tuple(FORBIDDEN_CUDA_PREFIXES)):
        return _Problem("cuda_state", f"calls {tok}; {CUDA_FIX}")
    return None


def _qualified_problem(chain: list[str], low_dtype: bool) -> _Problem | None:
    """The problem of a qualified name; `low_dtype`: the call it makes names a dtype other than
    float32 and float64."""
    root, qualified = chain[0], "::".join(chain)
    if root in ("at", "torch", "c10"):
        if any(p.fullmatch(qualified) for p in ALLOWED_ATEN):
            return None
        reason = next((why for p, why in ATEN_REASONS if qualified.startswith(p)), None)
        text = f"uses {qualified} ({reason or 'not on the ATen allow-list'}); {ATEN_FIX}"
        return _Problem("aten_compute" if _is_aten_op(chain) and not low_dtype else "aten", text,
                        qualified)  # fmt: skip
    if root in ("pybind11", "py"):
        if len(chain) == 2 and chain[1] in ALLOWED_PYBIND:
            return None
        return _Problem("pybind", f"uses {qualified} (the Python interpreter from C++); {PY_FIX}")
    if root == "std" and chain[1] in STD_FORBIDDEN:
        text = f"uses {qualified} (process, file, thread or environment access); {SYS_FIX}"
        return _Problem("std", text)
    if root == "cub" and chain[1].startswith("Device"):
        return _Problem(
            "cub_device",
            f"uses {qualified} (cub's device-wide algorithms launch their own kernels); "
            "use cub's block and warp primitives inside your kernel",
        )
    if root == "thrust":
        text = f"uses {qualified} (thrust launches its own kernels); write the kernel yourself"
        return _Problem("thrust", text)
    return None


def _is_aten_op(chain: list[str]) -> bool:
    """An ATen operator (at::gelu, at::native::relu, at::_ops::gelu::call, torch's GEMM
    wrappers), as opposed to the rest of ATen (streams, events, generators, from_blob)."""
    if chain[:3] == ["at", "cuda", "blas"]:
        return len(chain) > 3
    return any(
        tuple(chain[: len(r)]) == r and len(chain) > len(r) and chain[len(r)] in ATEN_OPS
        for r in ATEN_OP_ROOTS
    )


def _names_low_dtype(toks: list[tuple[str, int]], start: int) -> bool:
    """Whether the parenthesised arguments opening at token `start` (if any) name a dtype
    other than float32 and float64 (at::kHalf, torch::kBFloat16, ScalarType::Half)."""
    if start >= len(toks) or toks[start][0] != "(":
        return False
    depth = 0
    for tok, _ in toks[start:]:
        depth += {"(": 1, ")": -1}.get(tok, 0)
        if depth == 0:
            return False
        if tok in CPP_LOW_DTYPES or tok.startswith(CPP_LOW_DTYPE_PREFIXES):
            return True
    return False
