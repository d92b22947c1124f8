"""Crafted agent trajectories, written as the JSONL files the agent writes."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from cuda_agent.agent import (
    DEFAULT_TOOLS,
    EndRecord,
    EpisodeRecord,
    TextTools,
    TrajectoryWriter,
    TurnRecord,
    initial_messages,
    skill_text,
)
from cuda_agent.task import Task, load_task

SCHEMAS = [
    {
        "type": "function",
        "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
    }
    for t in DEFAULT_TOOLS
]


@dataclass
class Call:
    name: str
    arguments: dict | str = field(default_factory=dict)  # a str is sent as is (broken JSON)
    result: str = "ok"
    ok: bool = True
    error_kind: str | None = None

    def raw(self) -> str:
        return self.arguments if isinstance(self.arguments, str) else json.dumps(self.arguments)


@dataclass
class Turn:
    content: str | None
    calls: list[Call] = field(default_factory=list)
    files: dict[str, str | None] = field(default_factory=dict)


def write_trajectory(
    path: Path,
    turns: list[Turn],
    reward: int | None,
    task: Task | None = None,
    reason: str = "submitted",
    text_tools: bool = False,
) -> Path:
    """A trajectory file; `reward` None leaves it without an end record (interrupted)."""
    task = task or load_task("rmsnorm")
    addendum = TextTools().system_addendum(SCHEMAS) if text_tools else ""
    writer = TrajectoryWriter(path)
    writer.write(
        EpisodeRecord(
            task=task.to_record(),
            model="crafted",
            config={"agent": {}, "model": None, "text_tools": text_tools},
            messages=initial_messages(task, skill_text(), addendum),
            tools=SCHEMAS,
            started="2025-01-01T00:00:00+00:00",
        )
    )
    for index, turn in enumerate(turns):
        calls = [
            {"id": f"call_{index}_{i}", "name": c.name, "arguments": c.raw()}
            for i, c in enumerate(turn.calls)
        ]
        observations = [
            {
                "tool_call_id": f"call_{index}_{i}",
                "name": c.name,
                "content": c.result,
                "ok": c.ok,
                "error_kind": c.error_kind,
            }
            for i, c in enumerate(turn.calls)
        ]
        writer.write(
            TurnRecord.model_validate(
                {
                    "index": index,
                    "assistant": {"content": turn.content, "tool_calls": calls},
                    "observations": observations,
                    "tokens": {"prompt": 10, "completion": 5},
                    "seconds": 0.1,
                    "files": turn.files,
                }
            )
        )
    if reward is not None:
        writer.write(EndRecord(reason=reason, best=None, reward=reward, turns=len(turns)))
    return path
