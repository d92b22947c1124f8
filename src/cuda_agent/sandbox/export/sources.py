"""A solution's C++/CUDA sources reshaped for another harness: translation units merged into one
text (local headers inlined once, `#line` kept so errors name the original file), and the
REGISTER_BINDING calls of a binding read as (name, function, extras).

Reading is token-level, as the static guard reads (cpp_lexer): comments and string literals are
blanked before any parenthesis is counted, so neither can hide or fake a call.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import PurePosixPath

from cuda_agent.sandbox.build.extension import resolve_local
from cuda_agent.sandbox.guard.cpp_lexer import blank
from cuda_agent.sandbox.guard.includes import read_includes
from cuda_agent.sandbox.workspace import INFRA_DIR

REGISTRY = "binding_registry.h"
_REGISTER = re.compile(r"\bREGISTER_BINDING\s*\(")
_PRAGMA_ONCE = re.compile(r"^[ \t]*#[ \t]*pragma[ \t]+once\b.*$", re.M)


@dataclass(frozen=True)
class Registration:
    """One `REGISTER_BINDING(name, fn, extras...)` of a source: where it stands and its parts."""

    start: int  # offset of REGISTER_BINDING
    end: int  # offset after the closing parenthesis (and a `;` right after it)
    name: str
    fn: str
    extras: tuple[str, ...]


def registrations(text: str) -> list[Registration]:
    """Every REGISTER_BINDING call of `text`, in order."""
    code = blank(text, keep_strings=False)
    found = []
    for match in _REGISTER.finditer(code):
        args, close = _arguments(code, match.end())
        if close < 0 or len(args) < 2:
            continue  # unbalanced or malformed: the compiler will say so
        parts = [text[a:b].strip() for a, b in args]
        end = close + 1
        rest = code[end:]
        end += len(rest) - len(rest.lstrip(" \t")) + (rest.lstrip(" \t")[:1] == ";")
        found.append(Registration(match.start(), end, parts[0], parts[1], tuple(parts[2:])))
    return found


def _arguments(code: str, start: int) -> tuple[list[tuple[int, int]], int]:
    """The (start, end) offsets of the macro's arguments, split where the preprocessor splits
    them (commas outside parentheses, brackets and braces), and the closing parenthesis."""
    depth, begin, args = 0, start, []
    for i in range(start, len(code)):
        c = code[i]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                args.append((begin, i))
                return args, i
            depth -= 1
        elif c == "," and depth == 0:
            args.append((begin, i))
            begin = i + 1
    return args, -1


def merge_units(paths: list[str], files: dict[str, str], registry: str | None) -> str:
    """The sources at `paths` as one translation unit: each solution header they include is
    inlined where it is first included (its `#pragma once` dropped), later includes of it are
    dropped; an include of the binding registry gets `registry` (None: left as written)."""
    seen: set[str] = set()
    return "\n".join(_inline(path, files, seen, registry) for path in paths)


def _inline(path: str, files: dict[str, str], seen: set[str], registry: str | None) -> str:
    seen.add(path)
    text = _PRAGMA_ONCE.sub("", files[path])
    lines = text.split("\n")
    for directive in reversed(read_includes(text)):
        if directive.kind != "include" or directive.name is None:
            continue
        index = directive.line - 1
        local = resolve_local(path, directive.name, files)
        if registry is not None and _names_registry(path, directive.name):
            body = (
                ""
                if REGISTRY in seen
                else f'#line 1 "{REGISTRY}"\n' + _PRAGMA_ONCE.sub("", registry)
            )
            seen.add(REGISTRY)
        elif local is not None:
            body = "" if local in seen else _inline(local, files, seen, registry)
        else:
            continue
        lines[index] = f'{body}\n#line {directive.line + 1} "{path}"' if body else ""
    return f'#line 1 "{path}"\n' + "\n".join(lines)


def _names_registry(current: str, name: str) -> bool:
    if PurePosixPath(name).name != REGISTRY:
        return False
    resolved = os.path.normpath(str(PurePosixPath(current).parent / name))
    return name == REGISTRY or resolved == REGISTRY


def infra_text(name: str) -> str:
    """The package's own copy of an infrastructure file (binding.cpp, binding_registry.h)."""
    return (INFRA_DIR / name).read_text()
