"""C++/CUDA source read as the static guard and the build read it: comments (and, where asked,
string literals) blanked out with line numbers kept, then split into tokens. Nothing is
preprocessed."""

from __future__ import annotations

import bisect
import re

_TOKEN = re.compile(r"[A-Za-z_]\w*|::|->|##|\d[\w.']*|\S")
_RAW_OPEN = re.compile(r'(?:u8|[uUL])?R"([^()\\\s]{0,16})\(')


def blank(text: str, keep_strings: bool) -> str:
    """`text` with comments (and, unless keep_strings, string and char literals) turned into
    spaces; newlines stay, so line numbers stay right."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c, two = text[i], text[i : i + 2]
        raw = _RAW_OPEN.match(text, i) if c in "uULR" else None
        if two == "//":
            j, literal = _end(text.find("\n", i), n, 0), False
        elif two == "/*":
            j, literal = _end(text.find("*/", i + 2), n, 2), False
        elif raw and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            j, literal = (
                _end(text.find(f'){raw.group(1)}"', raw.end()), n, 2 + len(raw.group(1))),
                True,
            )
        elif c in "\"'" and not (c == "'" and i and text[i - 1].isalnum()):  # 1'000 is a number
            j = i + 1
            while j < n and text[j] not in (c, "\n"):
                j += 2 if text[j] == "\\" else 1
            j, literal = min(j + 1, n), True
        else:
            out.append(c)
            i += 1
            continue
        out.append(text[i:j] if literal and keep_strings else re.sub(r"[^\n]", " ", text[i:j]))
        i = j
    return "".join(out)


def _end(found: int, n: int, extra: int) -> int:
    return n if found < 0 else found + extra


def tokens(text: str) -> list[tuple[str, int]]:
    starts = [0] + [m.end() for m in re.finditer("\n", text)]
    return [(m.group(), bisect.bisect_right(starts, m.start())) for m in _TOKEN.finditer(text)]
