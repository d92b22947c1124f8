"""What every tool shares: its context, its result, argument checking and workspace paths.

A tool is a small class with a `name`, a `description`, a JSON-schema `parameters` and
`run(ctx, **arguments) -> ToolOutput`. A tool that cannot do what was asked raises `Refused`
(the call breaks a workspace rule) or `ToolFailure` (it could not be carried out); the workbench
turns both into observations the model can act on.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, ClassVar, Protocol

from cuda_agent.sandbox import Solution, Stage, Verdict
from cuda_agent.task import Task

PROTECTED = frozenset({"model.py", "binding.cpp", "binding_registry.h", "SKILL.md"})
SKIPPED_DIRS = frozenset({"__pycache__", "build"})  # and every dot-folder


class Evaluator(Protocol):
    """What the tools need of the environment: a local Environment or a remote service."""

    def evaluate(self, task: Task, solution: Solution, stage: Stage) -> Verdict: ...


@dataclass(frozen=True)
class ToolContext:
    task: Task
    root: Path  # the workspace, resolved
    evaluator: Evaluator
    bash_timeout_s: float
    output_chars: int  # bash keeps this many characters of head and of tail
    stop: threading.Event | None = None  # set: the run is ending; a running command is killed


@dataclass(frozen=True)
class ToolOutput:
    """`ok`: the tool did what was asked and it worked (exit 0, file written, verdict passed)."""

    content: str
    ok: bool = True
    verdict: Verdict | None = None
    solution: Solution | None = None  # what the verdict is about
    ends_episode: bool = False


class Refused(Exception):
    """The call breaks a workspace rule (a path outside it, a write to a protected file)."""


class ToolFailure(Exception):
    """The call was well-formed but could not be carried out (no such file, ambiguous edit, ...)."""


class Tool(Protocol):
    name: ClassVar[str]
    description: ClassVar[str]
    parameters: ClassVar[dict]

    def run(self, ctx: ToolContext, **arguments: Any) -> ToolOutput: ...


def schema(properties: dict[str, tuple[str, str]], required: tuple[str, ...] = ()) -> dict:
    """A JSON schema from {name: (json type, description)}."""
    return {
        "type": "object",
        "properties": {
            name: {"type": kind, "description": text} for name, (kind, text) in properties.items()
        },
        "required": list(required),
        "additionalProperties": False,
    }


def openai_schema(tool: Tool) -> dict:
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters,
        },
    }


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
}


def check_arguments(parameters: dict, arguments: Any) -> str | None:
    """Why `arguments` do not fit the tool's schema, or None when they do."""
    if not isinstance(arguments, dict):
        return f"arguments must be a JSON object, got {type(arguments).__name__}"
    properties = parameters.get("properties", {})
    missing = [name for name in parameters.get("required", ()) if name not in arguments]
    if missing:
        return f"missing required argument(s): {', '.join(missing)}"
    unknown = [name for name in arguments if name not in properties]
    if unknown:
        return (
            f"unknown argument(s): {', '.join(unknown)}; "
            f"this tool takes: {', '.join(properties) or 'no arguments'}"
        )
    for name, value in arguments.items():
        kind = properties[name]["type"]
        is_bool = isinstance(value, bool)
        if not isinstance(value, _JSON_TYPES[kind]) or (is_bool and kind != "boolean"):
            return f"argument {name!r} must be a JSON {kind}, got {type(value).__name__}"
    return None


def workspace_path(ctx: ToolContext, path: str, for_writing: bool = False) -> Path:
    """`path` (relative to the workspace, or absolute inside it) resolved; refused outside it."""
    if not path.strip():
        raise Refused("empty path; give a path relative to the workspace, e.g. kernels/add.cu")
    target = (ctx.root / path).resolve()
    if target != ctx.root and ctx.root not in target.parents:
        raise Refused(
            f"{path}: outside the workspace; only files under the workspace can be used "
            "(give a path relative to it)"
        )
    rel = relative(ctx, target)
    if for_writing and rel in PROTECTED:
        raise Refused(
            f"{rel} is protected (the harness uses its own copy, so editing it changes nothing); "
            "write model_new.py and files under kernels/ instead"
        )
    return target


def relative(ctx: ToolContext, path: Path) -> str:
    return PurePosixPath(path.relative_to(ctx.root)).as_posix() if path != ctx.root else "."


def workspace_files(root: Path, start: Path | None = None):
    """Regular files under `start` (default: the workspace), without dot-folders and builds."""
    base = start or root
    if base.is_file():
        yield base
        return
    for path in sorted(base.rglob("*")):
        parts = path.relative_to(root).parts
        if any(p.startswith(".") or p in SKIPPED_DIRS for p in parts[:-1]):
            continue
        if path.is_file() and not path.is_symlink():
            yield path


def clip(text: str, limit: int) -> str:
    """`text` whole when short, else its head and tail with a note of what was left out."""
    if len(text) <= limit:
        return text
    half = limit // 2
    omitted = len(text) - 2 * half
    return f"{text[:half]}\n[... {omitted} characters omitted ...]\n{text[-half:]}"
