"""The #include directives of a C++/CUDA source, read one way for every rule that needs them: the
static guard's allowed headers, the build's refusal of torch headers in kernels/*.cu, and the
libraries the build links.

Directives are read after comments are blanked out (string literals kept: `#include "x.h"`), so
a commented-out include is none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cuda_agent.sandbox.guard.cpp_lexer import blank

_DIRECTIVE = re.compile(r"^[ \t]*#[ \t]*(include_next|include|import)\b[ \t]*(.*)$", re.M)
_LITERAL = re.compile(r'"([^"]+)"|<([^>]+)>')


@dataclass(frozen=True)
class Include:
    kind: str  # include | include_next | import
    target: str  # what follows the directive
    name: str | None  # the header named in quotes or brackets; None: computed (a macro)
    line: int


def read_includes(text: str) -> list[Include]:
    """Every #include, #include_next and #import directive of `text`, in order."""
    code = blank(text, keep_strings=True)
    found = []
    for match in _DIRECTIVE.finditer(code):
        target = match.group(2).strip()
        literal = _LITERAL.fullmatch(target)
        name = (literal.group(1) or literal.group(2)) if literal else None
        line = code.count("\n", 0, match.start()) + 1
        found.append(Include(match.group(1), target, name, line))
    return found


def included_names(text: str) -> list[str]:
    """The headers `text` includes by name (#include only)."""
    return [d.name for d in read_includes(text) if d.kind == "include" and d.name is not None]


def without_includes(code: str) -> str:
    """`code` with every directive's line emptied (its newline kept, so line numbers stay)."""
    return _DIRECTIVE.sub("", code)
