"""The workbench: one task's workspace, the tools that act on it, and what the episode found.

It is the environment half of the agent (the loop is the other): it turns a tool call into an
observation without ever raising for anything the model sent, tracks the best verified solution
(highest reward, then fastest), and records which files each turn changed so an episode can be
replayed onto a fresh workspace.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.resources import files as package_files
from pathlib import Path

from cuda_agent.agent.bash import Bash
from cuda_agent.agent.env_tools import Compile, Profile, Submit, Verify
from cuda_agent.agent.file_tools import EditFile, Grep, ListFiles, ReadFile, WriteFile
from cuda_agent.agent.model import ToolCall
from cuda_agent.agent.tools import (
    PROTECTED,
    Evaluator,
    Refused,
    Tool,
    ToolContext,
    ToolFailure,
    check_arguments,
    clip,
    openai_schema,
    workspace_files,
)
from cuda_agent.agent.trajectory import Best, ErrorKind, Observation
from cuda_agent.errors import UserError
from cuda_agent.sandbox import (
    Solution,
    Stage,
    Status,
    Verdict,
    create_workspace,
    read_solution,
)
from cuda_agent.task import Task

DEFAULT_TOOLS: tuple[Tool, ...] = (
    Bash(),
    ReadFile(),
    WriteFile(),
    EditFile(),
    ListFiles(),
    Grep(),
    Compile(),
    Verify(),
    Profile(),
    Submit(),
)
SNAPSHOT_MAX_BYTES = 512 * 1024
_STAGE_ORDER = {Stage.COMPILE: 0, Stage.VERIFY: 1, Stage.PROFILE: 2}


def skill_text() -> str:
    """The SKILL.md shipped with the package: how to work in a workspace."""
    return (package_files("cuda_agent.agent") / "SKILL.md").read_text()


def new_workspace(task: Task, folder: str | Path) -> Path:
    """A fresh workspace for `task`, with SKILL.md."""
    return create_workspace(task, folder, extra_files={"SKILL.md": skill_text()})


@dataclass(frozen=True)
class Step:
    observation: Observation
    verdict: Verdict | None
    ends_episode: bool


def rank(verdict: Verdict) -> tuple[int, float]:
    """Higher is better: reward first, then speed (an untimed verdict ranks below a timed one)."""
    ms = verdict.candidate_ms
    return (verdict.reward, -ms if ms is not None else float("-inf"))


class Workbench:
    def __init__(
        self,
        task: Task,
        root: str | Path,
        evaluator: Evaluator,
        tools: Sequence[Tool] = DEFAULT_TOOLS,
        bash_timeout_s: float = 300.0,
        observation_chars: int = 16_000,
        stop: threading.Event | None = None,
    ):
        self.task = task
        self.root = Path(root).resolve()
        self.tools = {tool.name: tool for tool in tools}
        self.observation_chars = observation_chars
        self.ctx = ToolContext(task, self.root, evaluator, bash_timeout_s, observation_chars, stop)
        self.submitted = False
        self.best: Best | None = None
        # The most authoritative verdict seen for each solution (by hash), with the solution.
        self._seen: dict[str, Best] = {}
        self._snapshot = self.files()

    def schemas(self) -> list[dict]:
        return [openai_schema(tool) for tool in self.tools.values()]

    def execute(self, call: ToolCall) -> Step:
        """Run one call; whatever the model sent, the result is an observation."""
        try:
            arguments = json.loads(call.arguments) if call.arguments.strip() else {}
        except json.JSONDecodeError as err:
            return self._error(
                call,
                "bad_json",
                f"the arguments are not valid JSON ({err.msg} at line {err.lineno} column "
                f"{err.colno}); send them as one JSON object",
            )
        tool = self.tools.get(call.name)
        if tool is None:
            named = f"unknown tool {call.name!r}" if call.name else "the call names no tool"
            return self._error(
                call, "unknown_tool", f"{named}; the tools are {', '.join(self.tools)}"
            )
        problem = check_arguments(tool.parameters, arguments)
        if problem is not None:
            return self._error(call, "bad_arguments", f"{call.name}: {problem}")
        try:
            output = tool.run(self.ctx, **arguments)
        except Refused as err:
            return self._error(call, "refused", f"refused: {err}")
        except ToolFailure as err:
            return self._error(call, "tool_error", f"{call.name} failed: {err}")
        except (OSError, ValueError) as err:  # e.g. a path through a file, unencodable text
            return self._error(call, "tool_error", f"{call.name} failed: {err}")
        if output.verdict is not None and output.solution is not None:
            self.consider(output.solution, output.verdict)
        if output.ends_episode:
            self.submitted = True
        observation = Observation(
            tool_call_id=call.id,
            name=call.name,
            content=clip(output.content, self.observation_chars),
            ok=output.ok,
        )
        return Step(observation, output.verdict, output.ends_episode)

    def skip(self, call: ToolCall) -> Step:
        """The answer to a call that came after submit in the same reply."""
        return self._error(
            call, "tool_error", "not run: the episode was submitted before this call"
        )

    def consider(self, solution: Solution, verdict: Verdict) -> bool:
        """Record a verdict; True when it made `best` change. A harness_error (the harness
        failed, not the solution) never replaces a verdict already known: an episode's reward
        must not drop to -1 because the GPU was short of memory when its best was profiled."""
        known = self._seen.get(solution.hash)
        if verdict.status == Status.HARNESS_ERROR and known is not None:
            return False
        if known is None or _STAGE_ORDER[verdict.stage] >= _STAGE_ORDER[known.verdict.stage]:
            self._seen[solution.hash] = Best(solution=solution, verdict=verdict)
        correct = [b for b in self._seen.values() if b.verdict.correct]
        best = max(correct, key=lambda b: rank(b.verdict)) if correct else None
        changed = best != self.best
        self.best = best
        return changed

    def restore_best(self, best: Best) -> None:
        self._seen[best.solution.hash] = best
        self.best = best

    def finish(self, profile: bool) -> Best | None:
        """Profile the final workspace and the best solution where not yet profiled; the final
        workspace's latest verdict (None when it is not a solution)."""
        try:
            final = read_solution(self.root)
        except UserError:
            final = None
        if profile:
            pending = [final] if final is not None else []
            if self.best is not None:
                pending.append(self.best.solution)
            for solution in pending:
                known = self._seen.get(solution.hash)
                if known is None or known.verdict.stage != Stage.PROFILE:
                    self.consider(
                        solution, self.ctx.evaluator.evaluate(self.task, solution, Stage.PROFILE)
                    )
        return self._seen.get(final.hash) if final is not None else None

    def files(self) -> dict[str, str]:
        """The workspace's text files that the model may change (what a replay must restore)."""
        found = {}
        for path in workspace_files(self.root):
            rel = path.relative_to(self.root).as_posix()
            if rel in PROTECTED or rel.startswith(".") or path.stat().st_size > SNAPSHOT_MAX_BYTES:
                continue
            try:
                found[rel] = path.read_text()
            except UnicodeDecodeError:
                continue
        return found

    def changes(self) -> dict[str, str | None]:
        """Files changed since the last call (new text, or None when deleted)."""
        now = self.files()
        changed: dict[str, str | None] = {
            p: t for p, t in now.items() if self._snapshot.get(p) != t
        }
        changed.update({p: None for p in self._snapshot if p not in now})
        self._snapshot = now
        return changed

    def apply(self, changes: dict[str, str | None]) -> None:
        """Replay a turn's file changes onto the workspace."""
        for rel, text in changes.items():
            target = (self.root / rel).resolve()
            if self.root not in target.parents or rel in PROTECTED:
                raise UserError(f"{rel}: a recorded change outside the workspace's own files")
            if text is None:
                target.unlink(missing_ok=True)
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text)
        self._snapshot = self.files()

    def _error(self, call: ToolCall, kind: ErrorKind, message: str) -> Step:
        observation = Observation(
            tool_call_id=call.id,
            name=call.name,
            content=f"error: {message}",
            ok=False,
            error_kind=kind,
        )
        return Step(observation, None, False)
