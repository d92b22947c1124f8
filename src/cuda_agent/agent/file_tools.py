"""Reading, writing, editing and searching files of the workspace."""

from __future__ import annotations

import re
from pathlib import Path
from typing import ClassVar

from cuda_agent.agent.tools import (
    ToolContext,
    ToolFailure,
    ToolOutput,
    relative,
    schema,
    workspace_files,
    workspace_path,
)

MAX_WRITE_BYTES = 512 * 1024
MAX_LISTED = 500
MAX_MATCHES = 200
MAX_GREP_FILE_BYTES = 1024 * 1024


def _read_text(path: Path, shown: str) -> str:
    if not path.exists():
        raise ToolFailure(f"{shown}: no such file (list_files shows what is there)")
    if path.is_dir():
        raise ToolFailure(f"{shown}: is a folder; use list_files")
    try:
        return path.read_text()
    except UnicodeDecodeError:
        raise ToolFailure(f"{shown}: not a UTF-8 text file") from None


class ReadFile:
    name: ClassVar[str] = "read_file"
    description: ClassVar[str] = (
        "Read a text file of the workspace, whole or a range of lines (1-based, inclusive)."
    )
    parameters: ClassVar[dict] = schema(
        {
            "path": ("string", "Path relative to the workspace, e.g. model.py"),
            "start_line": ("integer", "First line to show (default 1)"),
            "end_line": ("integer", "Last line to show (default: the end)"),
        },
        required=("path",),
    )

    def run(
        self, ctx: ToolContext, path: str, start_line: int = 1, end_line: int | None = None
    ) -> ToolOutput:
        target = workspace_path(ctx, path)
        text = _read_text(target, path)
        if start_line == 1 and end_line is None:
            return ToolOutput(text if text else f"{path} is empty")
        lines = text.splitlines(keepends=True)
        last = len(lines) if end_line is None else min(end_line, len(lines))
        if start_line < 1 or start_line > max(last, 1):
            raise ToolFailure(f"{path} has {len(lines)} lines; start_line {start_line} is outside")
        shown = "".join(lines[start_line - 1 : last])
        return ToolOutput(f"[{path}: lines {start_line}-{last} of {len(lines)}]\n{shown}")


class WriteFile:
    name: ClassVar[str] = "write_file"
    description: ClassVar[str] = (
        "Create or overwrite a file of the workspace with the given content "
        "(folders are created as needed). model.py, binding.cpp, binding_registry.h and SKILL.md "
        "are protected."
    )
    parameters: ClassVar[dict] = schema(
        {
            "path": ("string", "Path relative to the workspace, e.g. kernels/fused.cu"),
            "content": ("string", "The whole new content of the file"),
        },
        required=("path", "content"),
    )

    def run(self, ctx: ToolContext, path: str, content: str) -> ToolOutput:
        target = workspace_path(ctx, path, for_writing=True)
        size = len(content.encode())
        if size > MAX_WRITE_BYTES:
            raise ToolFailure(f"{path}: {size} bytes; files are limited to {MAX_WRITE_BYTES} bytes")
        if target.is_dir():
            raise ToolFailure(f"{path}: is a folder")
        target.parent.mkdir(parents=True, exist_ok=True)
        existed = target.exists()
        target.write_text(content)
        lines = content.count("\n") + (0 if content.endswith("\n") or not content else 1)
        verb = "overwrote" if existed else "created"
        return ToolOutput(f"{verb} {relative(ctx, target)} ({lines} lines, {size} bytes)")


class EditFile:
    name: ClassVar[str] = "edit_file"
    description: ClassVar[str] = (
        "Replace one exact occurrence of old_string with new_string in a workspace file. "
        "old_string must occur exactly once (include surrounding lines to make it unique)."
    )
    parameters: ClassVar[dict] = schema(
        {
            "path": ("string", "Path relative to the workspace"),
            "old_string": ("string", "Exact text to replace, whitespace included"),
            "new_string": ("string", "The replacement text"),
        },
        required=("path", "old_string", "new_string"),
    )

    def run(self, ctx: ToolContext, path: str, old_string: str, new_string: str) -> ToolOutput:
        target = workspace_path(ctx, path, for_writing=True)
        text = _read_text(target, path)
        if not old_string:
            raise ToolFailure("old_string is empty; give the exact text to replace")
        count = text.count(old_string)
        if count == 0:
            raise ToolFailure(
                f"old_string not found in {path}; read the file and copy the text exactly "
                "(whitespace and indentation included)"
            )
        if count > 1:
            raise ToolFailure(
                f"old_string occurs {count} times in {path}; include more surrounding text so it "
                "occurs exactly once"
            )
        updated = text.replace(old_string, new_string, 1)
        if len(updated.encode()) > MAX_WRITE_BYTES:
            raise ToolFailure(f"{path}: the edit makes it larger than {MAX_WRITE_BYTES} bytes")
        target.write_text(updated)
        line = text[: text.index(old_string)].count("\n") + 1
        return ToolOutput(f"edited {relative(ctx, target)} at line {line}")


class ListFiles:
    name: ClassVar[str] = "list_files"
    description: ClassVar[str] = (
        "List the files under a folder of the workspace (recursively), with their sizes."
    )
    parameters: ClassVar[dict] = schema(
        {"path": ("string", "Folder relative to the workspace (default: the workspace)")}
    )

    def run(self, ctx: ToolContext, path: str = ".") -> ToolOutput:
        target = workspace_path(ctx, path)
        if not target.exists():
            raise ToolFailure(f"{path}: no such file or folder")
        files = list(workspace_files(ctx.root, target))
        if not files:
            return ToolOutput(f"{path}: no files")
        rows = [f"{relative(ctx, f)}  ({f.stat().st_size} bytes)" for f in files[:MAX_LISTED]]
        if len(files) > MAX_LISTED:
            rows.append(f"[... {len(files) - MAX_LISTED} more files]")
        return ToolOutput("\n".join(rows))


class Grep:
    name: ClassVar[str] = "grep"
    description: ClassVar[str] = (
        "Search workspace text files for a regular expression (Python syntax); prints "
        "path:line: text for each matching line."
    )
    parameters: ClassVar[dict] = schema(
        {
            "pattern": ("string", "Regular expression, e.g. __global__|REGISTER_BINDING"),
            "path": ("string", "File or folder to search (default: the workspace)"),
        },
        required=("pattern",),
    )

    def run(self, ctx: ToolContext, pattern: str, path: str = ".") -> ToolOutput:
        try:
            regex = re.compile(pattern)
        except re.error as err:
            raise ToolFailure(
                f"pattern {pattern!r} is not a valid regular expression: {err}"
            ) from None
        target = workspace_path(ctx, path)
        if not target.exists():
            raise ToolFailure(f"{path}: no such file or folder")
        hits: list[str] = []
        for file in workspace_files(ctx.root, target):
            if file.stat().st_size > MAX_GREP_FILE_BYTES:
                continue
            try:
                text = file.read_text()
            except UnicodeDecodeError:
                continue
            for number, line in enumerate(text.splitlines(), start=1):
                if regex.search(line):
                    hits.append(f"{relative(ctx, file)}:{number}: {line}")
            if len(hits) > MAX_MATCHES:
                break
        if not hits:
            return ToolOutput(f"no line matches {pattern!r}")
        if len(hits) > MAX_MATCHES:
            hits = hits[:MAX_MATCHES] + [
                f"[... more than {MAX_MATCHES} matches; narrow the search]"
            ]
        return ToolOutput("\n".join(hits))
