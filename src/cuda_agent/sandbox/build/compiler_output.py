"""Compiler output an agent can read: the first errors with file:line, not pages of template noise.

Understands gcc/g++ (`file:line:col: error: ...`, `In instantiation of`, `required from`, notes
with candidate lists, `In file included from`), nvcc's front end (`file(line): error: ...`,
`detected during instantiation of ... at line N of file`), ptxas, nvcc and ld fatal lines. An
error raised inside a system or torch header is reported at the workspace line that caused it
(the outermost `required from` / `at line N of` that lies in the workspace).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

_GCC_DIAG = re.compile(
    r"^(?P<path>[^\s:(][^:]*?):(?P<line>\d+):(?:(?P<col>\d+):)?\s+"
    r"(?P<kind>fatal error|error|warning|note):\s?(?P<msg>.*)$"
)
_GCC_REQUIRED = re.compile(
    r"^(?P<path>[^\s:][^:]*?):(?P<line>\d+):(?:(?P<col>\d+):)?\s+required (?:from|by) "
)
_NVCC_DIAG = re.compile(
    r"^(?P<path>[^\s(][^(]*?)\((?P<line>\d+)\): (?P<kind>catastrophic error|error|warning|"
    r"remark|note)(?: #[\w-]+)?: ?(?P<msg>.*)$"
)
_NVCC_AT_LINE = re.compile(r"\bat line (?P<line>\d+) of (?P<path>\S+?)\s*$")
_TOOL_ERROR = re.compile(
    r"^(?:(?:ptxas|nvcc|nvlink|fatbinary) (?:fatal|error)\s*:"
    r"|(?:\S*-)?(?:g\+\+|c\+\+|gcc|cc1plus)(?:-\d+)?: (?:fatal )?error:"
    r"|(?:\S*/)?ld(?:\.\w+)?: .*(?:undefined reference|cannot find|multiple definition|error)"
    r"|.*: (?:undefined reference to|multiple definition of) )"
)
_LD_IN_FUNCTION = re.compile(r"^(?:\S*/)?ld(?:\.\w+)?: (?P<obj>\S+): in function [`'](?P<fn>.*)':$")
_CONTEXT = re.compile(
    r"^(?:In file included from |\s+from |.*: In (?:instantiation of|function|member function|"
    r"static member function|constructor|destructor|lambda function|substitution of)|"
    r".*: At global scope:|.*: (?:At|In) .*:$)"
)
_SUMMARY = re.compile(
    r"^(?:\d+ errors? detected in the compilation of|compilation terminated\.|collect2: error: "
    r"ld returned|Remark: The warnings can be suppressed|\s*detected during)"
)
_MAX_MESSAGE = 400
_MAX_BODY_LINES = 3


@dataclass
class _Error:
    """One error as the parser assembles it (mutable only while parsing)."""

    where: str
    message: str
    origin: str | None = None  # where the compiler raised it, when that is outside the workspace
    body: list[str] = field(default_factory=list)

    def render(self) -> str:
        message = self.message
        if len(message) > _MAX_MESSAGE:
            message = message[:_MAX_MESSAGE] + "..."
        head = f"{self.where}: error: {message}" if self.where else message
        if self.origin and self.origin != self.where:
            head += f"  [raised in {self.origin}]"
        return "\n".join([head, *self.body[:_MAX_BODY_LINES]])


def trim_compiler_output(
    text: str, root: str | Path, max_errors: int = 8, max_chars: int = 4000
) -> str:
    """The first `max_errors` distinct errors of `text`, paths relative to `root` (the build
    folder mirrors the workspace, so its paths are workspace paths), at most `max_chars` long."""
    lines = _relativize(text, root).splitlines()
    errors = _parse(lines)
    if not errors:
        return _fallback(lines, max_chars)
    unique: list[_Error] = []
    seen: set[tuple[str, str]] = set()
    for error in errors:
        if (error.where, error.message) not in seen:
            seen.add((error.where, error.message))
            unique.append(error)
    shown = [e.render() for e in unique[:max_errors]]
    omitted = len(unique) - len(shown)
    out = "\n".join(shown)
    while len(out) > max_chars and len(shown) > 1:
        shown.pop()
        omitted += 1
        out = "\n".join(shown)
    if len(out) > max_chars:
        out = out[: max_chars - 16] + "\n[... truncated]"
    if omitted:
        out += f"\n... and {omitted} more error{'s' if omitted > 1 else ''} omitted"
    return out


def _relativize(text: str, root: str | Path) -> str:
    prefixes = {str(root), os.path.abspath(root), os.path.realpath(root)}
    for prefix in sorted(prefixes, key=len, reverse=True):
        text = text.replace(prefix.rstrip("/") + "/", "")
    text = re.sub(r"(?<![\w/.])\./(?=[\w])", "", text)
    # The build links objects as obj/<workspace path>.o; name the source instead.
    return re.sub(r"(?<![\w/])obj/(\S+?\.(?:cu|cpp))\.o\b", r"\1", text)


def _in_workspace(path: str) -> bool:
    return not path.startswith(("/", "<")) and ".." not in Path(path).parts


def _location(path: str, line: str, col: str | None = None) -> str:
    return f"{path}:{line}:{col}" if col else f"{path}:{line}"


def _parse(lines: list[str]) -> list[_Error]:
    """Errors in order; notes, warnings, context and summaries are dropped."""
    errors: list[_Error] = []
    trigger: str | None = None  # the innermost-to-outermost last workspace `required from`
    current: _Error | None = None  # the error whose body lines we are collecting
    linking = ""  # the object and function ld is complaining about
    for line in lines:
        if (m := _LD_IN_FUNCTION.match(line)) is not None:
            linking = f" (in {m['fn']}, {m['obj']})"
            continue
        if (m := _GCC_REQUIRED.match(line)) is not None:
            if _in_workspace(m["path"]):
                trigger = _location(m["path"], m["line"], m["col"])
            current = None
            continue
        if (m := _NVCC_AT_LINE.search(line)) is not None:
            last = errors[-1] if errors else None
            if last is not None and last.origin and _in_workspace(m["path"]):
                last.where = _location(m["path"], m["line"])
            current = None
            continue
        diag = _GCC_DIAG.match(line) or _NVCC_DIAG.match(line)
        if diag is not None:
            if diag["kind"] in ("error", "fatal error", "catastrophic error"):
                current = _new_error(diag, trigger)
                errors.append(current)
            else:
                current = None
            trigger = None
            continue
        if _CONTEXT.match(line):
            current = None
            continue
        if not line.strip():
            current = None
            continue
        if _SUMMARY.match(line):
            continue
        if _TOOL_ERROR.match(line):
            errors.append(_Error(where="", message=line.strip() + linking))
            current = None
            continue
        if current is not None:
            current.body.append(line.rstrip())
    return errors


def _new_error(diag: re.Match[str], trigger: str | None) -> _Error:
    where = _location(diag["path"], diag["line"], diag.groupdict().get("col"))
    message = diag["msg"].strip()
    if diag["kind"] == "fatal error":
        message = f"fatal: {message}"
    if _in_workspace(diag["path"]):
        return _Error(where=where, message=message)
    # Raised inside a header we do not own: point at the workspace line that led there (gcc
    # printed it before the error; nvcc prints it after, see `at line N of`).
    return _Error(where=trigger or where, message=message, origin=where)


def _fallback(lines: list[str], max_chars: int) -> str:
    """No recognised diagnostic: the lines that mention an error, else the tail of the output."""
    picked = [line for line in lines if re.search(r"\berror\b|fatal", line, re.IGNORECASE)]
    picked = [line for line in picked if not _SUMMARY.match(line)] or lines[-20:]
    out = "\n".join(picked).strip()
    return out if len(out) <= max_chars else out[: max_chars - 16] + "\n[... truncated]"
