"""Trajectories: one JSONL file per episode, appended and flushed as the episode happens.

    {"type": "episode", "task": Task.to_record(), "model", "config", "messages": [system, user],
     "tools": [OpenAI tool schemas], "started": ISO time}
    {"type": "turn", "index", "assistant": {"content", "tool_calls": [{"id", "name", "arguments"}]},
     "observations": [{"tool_call_id", "name", "content", "ok", "error_kind"}], "verdict",
     "tokens": {"prompt", "completion"}, "seconds", "files", "best"}        (one per turn)
    {"type": "end", "reason", "best": {"solution", "verdict"} | null, "reward", "turns", "message",
     "final": {"solution", "verdict"} | null}

`arguments` is the raw JSON text the model sent. A turn's `verdict` is the last one its calls
produced. `files` holds the workspace files the turn changed (text; null for a deleted file) and
`best` the best verified solution when the turn improved it: together they let an interrupted
episode be resumed exactly. Observations are stored whole, even when the live context shortened
them. A turn without tool calls was answered with `NO_TOOL_CALL` as a user message.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from cuda_agent.errors import UserError
from cuda_agent.sandbox import Solution, Verdict
from cuda_agent.task import Task

ErrorKind = Literal["bad_json", "unknown_tool", "bad_arguments", "refused", "tool_error"]
EndReason = Literal["submitted", "turn_budget", "token_budget", "time_budget", "model_error"]
NO_TOOL_CALL = (
    "Your reply had no tool call. Call a tool to continue; call submit when you are done."
)


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True)


class ToolCallRecord(_Record):
    id: str
    name: str
    arguments: str


class AssistantRecord(_Record):
    content: str | None
    tool_calls: list[ToolCallRecord] = Field(default_factory=list)


class Observation(_Record):
    """`ok`: the call worked and so did what it did (exit 0, verdict passed its stage).
    `error_kind`: set when the call itself was bad or could not be carried out."""

    tool_call_id: str
    name: str
    content: str
    ok: bool
    error_kind: ErrorKind | None = None


class Tokens(_Record):
    prompt: int
    completion: int


class Best(_Record):
    solution: Solution
    verdict: Verdict


class EpisodeRecord(_Record):
    type: Literal["episode"] = "episode"
    task: dict
    model: str
    config: dict
    messages: list[dict]
    tools: list[dict]
    started: str


class TurnRecord(_Record):
    type: Literal["turn"] = "turn"
    index: int
    assistant: AssistantRecord
    observations: list[Observation]
    verdict: Verdict | None = None
    tokens: Tokens
    seconds: float
    files: dict[str, str | None] = Field(default_factory=dict)
    best: Best | None = None


class EndRecord(_Record):
    type: Literal["end"] = "end"
    reason: EndReason
    best: Best | None
    reward: int
    turns: int = 0
    message: str | None = None  # why it ended, where more needs saying (model, context)
    final: Best | None = None  # the final workspace and its latest verdict


_LINE = TypeAdapter(Annotated[EpisodeRecord | TurnRecord | EndRecord, Field(discriminator="type")])


class Trajectory(_Record):
    episode: EpisodeRecord
    turns: list[TurnRecord]
    end: EndRecord | None
    complete_bytes: int  # length of the file's whole lines; a resumed run truncates it to this

    @property
    def task(self) -> Task:
        return Task.from_record(self.episode.task)

    @property
    def tools(self) -> list[dict]:
        return self.episode.tools

    @property
    def best(self) -> Best | None:
        if self.end is not None:
            return self.end.best
        return next((t.best for t in reversed(self.turns) if t.best is not None), None)

    def to_openai_messages(self) -> list[dict]:
        """The conversation as OpenAI chat messages with native tool calls (pair with `tools`)."""
        messages = [dict(m) for m in self.episode.messages]
        for turn in self.turns:
            messages.append(assistant_message(turn.assistant))
            messages += [
                {"role": "tool", "tool_call_id": o.tool_call_id, "content": o.content}
                for o in turn.observations
            ]
            if not turn.assistant.tool_calls:
                messages.append({"role": "user", "content": NO_TOOL_CALL})
        return messages


def assistant_message(assistant: AssistantRecord) -> dict:
    message: dict = {"role": "assistant", "content": assistant.content}
    if assistant.tool_calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in assistant.tool_calls
        ]
    return message


class TrajectoryWriter:
    """Appends one record a line, flushed and synced, so a killed run loses at most a turn."""

    def __init__(self, path: str | Path, truncate_to: int | None = None):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if truncate_to is not None:
            with self.path.open("r+b") as fh:
                fh.truncate(truncate_to)

    def write(self, record: EpisodeRecord | TurnRecord | EndRecord) -> None:
        with self.path.open("a") as fh:
            fh.write(record.model_dump_json() + "\n")
            fh.flush()
            os.fsync(fh.fileno())


def load_trajectory(path: str | Path) -> Trajectory:
    """Read a trajectory; a partial last line (a run killed mid-write) is ignored."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"{path}: no such trajectory file")
    data = path.read_bytes()
    records: list = []
    complete = 0
    # What follows the last newline is the line being written when the run stopped: ignored.
    whole = data.split(b"\n")[:-1]
    for number, raw in enumerate(whole, start=1):
        if raw.strip():
            try:
                records.append(_LINE.validate_json(raw))
            except ValidationError as err:
                where = f"{path}:{number}"
                raise UserError(f"{where}: not a trajectory record: {_first_error(err)}") from None
        complete += len(raw) + 1
    return _assemble(path, records, complete)


def _assemble(path: Path, records: list, complete: int) -> Trajectory:
    if not records or not isinstance(records[0], EpisodeRecord):
        raise UserError(f"{path}: a trajectory starts with an episode record")
    turns = [r for r in records[1:] if isinstance(r, TurnRecord)]
    ends = [r for r in records[1:] if isinstance(r, EndRecord)]
    if len(turns) + len(ends) != len(records) - 1 or len(ends) > 1:
        raise UserError(f"{path}: records out of order (one episode, turns, at most one end)")
    if ends and records[-1] is not ends[0]:
        raise UserError(f"{path}: records follow the end record")
    if [t.index for t in turns] != list(range(len(turns))):
        raise UserError(f"{path}: turn indices are not 0, 1, 2, ...")
    return Trajectory(
        episode=records[0], turns=turns, end=ends[0] if ends else None, complete_bytes=complete
    )


def _first_error(err: ValidationError) -> str:
    first = err.errors()[0]
    where = ".".join(str(p) for p in first["loc"])
    return f"{where}: {first['msg']}" if where else first["msg"]
