"""Trajectory files: written as they happen, read back whole or truncated, converted to OpenAI
messages."""

from __future__ import annotations

import json

import pytest

from cuda_agent.agent import (
    NO_TOOL_CALL,
    EndRecord,
    EpisodeRecord,
    Observation,
    TrajectoryWriter,
    TurnRecord,
    load_trajectory,
)
from cuda_agent.agent.trajectory import AssistantRecord, Tokens, ToolCallRecord
from cuda_agent.errors import UserError

SYSTEM = {"role": "system", "content": "sys"}
USER = {"role": "user", "content": "task"}


def episode(task) -> EpisodeRecord:
    return EpisodeRecord(
        task=task.to_record(),
        model="m",
        config={},
        messages=[SYSTEM, USER],
        tools=[],
        started="now",
    )


def turn(index: int, calls: int = 1) -> TurnRecord:
    tool_calls = [
        ToolCallRecord(id=f"c{index}_{i}", name="bash", arguments='{"command": "ls"}')
        for i in range(calls)
    ]
    return TurnRecord(
        index=index,
        assistant=AssistantRecord(content=f"step {index}", tool_calls=tool_calls),
        observations=[
            Observation(tool_call_id=c.id, name="bash", content="out", ok=True) for c in tool_calls
        ],
        tokens=Tokens(prompt=10, completion=5),
        seconds=0.5,
    )


def write(path, task, turns: int, end: bool) -> None:
    writer = TrajectoryWriter(path)
    writer.write(episode(task))
    for i in range(turns):
        writer.write(turn(i, calls=0 if i == 1 else 1))
    if end:
        writer.write(EndRecord(reason="turn_budget", best=None, reward=-1, turns=turns))


def test_round_trip_and_openai_messages(tmp_path, task):
    path = tmp_path / "t.jsonl"
    write(path, task, turns=3, end=True)
    record = load_trajectory(path)
    assert record.task == task and len(record.turns) == 3 and record.end.reason == "turn_budget"
    roles = [m["role"] for m in record.to_openai_messages()]
    # turn 1 had no tool call: it is answered with the nudge, as the live loop does
    assert roles == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
        "assistant",
        "tool",
    ]
    messages = record.to_openai_messages()
    assert messages[5]["content"] == NO_TOOL_CALL
    assert messages[2]["tool_calls"] == [
        {
            "id": "c0_0",
            "type": "function",
            "function": {"name": "bash", "arguments": '{"command": "ls"}'},
        }
    ]
    assert messages[3] == {"role": "tool", "tool_call_id": "c0_0", "content": "out"}
    assert all(json.loads(line)["type"] for line in path.read_text().splitlines())


def test_a_partial_last_line_is_ignored(tmp_path, task):
    path = tmp_path / "t.jsonl"
    write(path, task, turns=2, end=False)
    whole = path.stat().st_size
    with path.open("a") as fh:
        fh.write(turn(2).model_dump_json()[:40])
    record = load_trajectory(path)
    assert len(record.turns) == 2 and record.end is None and record.complete_bytes == whole


def test_corrupt_or_misordered_files_are_user_errors(tmp_path, task):
    path = tmp_path / "t.jsonl"
    write(path, task, turns=2, end=False)
    lines = path.read_text().splitlines(keepends=True)
    path.write_text(lines[0] + "{not json}\n" + lines[1])
    with pytest.raises(UserError, match=r"t.jsonl:2: not a trajectory record"):
        load_trajectory(path)
    path.write_text(lines[0] + lines[2] + lines[1])
    with pytest.raises(UserError, match="turn indices"):
        load_trajectory(path)
    path.write_text(lines[1])
    with pytest.raises(UserError, match="starts with an episode record"):
        load_trajectory(path)
    with pytest.raises(UserError, match="no such trajectory"):
        load_trajectory(tmp_path / "missing.jsonl")
