"""The agent: ask the model, run its tool calls on the workbench, record the turn; until it
submits or a budget (turns, context tokens, wall time) runs out. The answer is the best verified
solution of the episode, not the last one.

    model (OpenAIModel or anything with `name` and `complete`)  ─┐
    workbench (workspace + tools + best solution)               ─┼─► Agent.run ─► trajectory.jsonl
    protocol (native or text tool calls)                        ─┘
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from cuda_agent.agent.config import AgentConfig, ModelConfig
from cuda_agent.agent.context import Context
from cuda_agent.agent.model import ModelError, ModelReply
from cuda_agent.agent.prompts import initial_messages
from cuda_agent.agent.protocol import NativeTools, TextTools, assistant_record, protocol_for
from cuda_agent.agent.tools import Evaluator
from cuda_agent.agent.trajectory import (
    Best,
    EndReason,
    EndRecord,
    EpisodeRecord,
    Tokens,
    TrajectoryWriter,
    TurnRecord,
    load_trajectory,
)
from cuda_agent.agent.workbench import Workbench, new_workspace, skill_text
from cuda_agent.errors import UserError
from cuda_agent.task import Task


class EpisodeStopped(Exception):
    """The run was interrupted (`stop` set): the episode ends without an end record, so it can
    be resumed from its trajectory."""


class ChatModel(Protocol):
    name: str

    def complete(self, messages: list[dict], tools: list[dict] | None) -> ModelReply: ...


@dataclass(frozen=True)
class EpisodeResult:
    reason: EndReason
    turns: int
    best: Best | None  # the best verified solution: the episode's answer
    final: Best | None  # the final workspace and its latest verdict
    reward: int
    trajectory: Path
    message: str | None = None  # why it ended, where more needs saying (model, context)


class Agent:
    def __init__(
        self,
        model: ChatModel,
        workbench: Workbench,
        config: AgentConfig,
        protocol: NativeTools | TextTools,
        messages: list[dict],
        reply_tokens: int | None = None,
        on_turn: Callable[[TurnRecord], None] | None = None,
        stop: threading.Event | None = None,
    ):
        """`reply_tokens`: the completion limit sent to the server, kept free in the context;
        `on_turn`: called with each turn's record once it is written (progress output);
        `stop`: once set, the episode stops at the next turn (EpisodeStopped)."""
        self.model = model
        self.on_turn = on_turn
        self.stop = stop
        self.workbench = workbench
        self.config = config
        self.protocol = protocol
        self.context = Context(
            messages,
            max_tokens=config.max_context_tokens,
            reserve=reply_tokens or config.reserve_tokens,
            shorten_at=config.shorten_at,
            shorten_to=config.shorten_to,
            keep_recent_turns=config.keep_recent_turns,
        )

    def run(
        self, writer: TrajectoryWriter, first_turn: int = 0, elapsed_s: float = 0.0
    ) -> EpisodeResult:
        started = time.monotonic() - elapsed_s
        schemas = self.workbench.schemas()
        turn, message = first_turn, None
        while True:
            if self.stop is not None and self.stop.is_set():
                raise EpisodeStopped(f"stopped before turn {turn}")
            reason = self._out_of_budget(turn, started)
            if reason == "token_budget":
                message = self._no_room(turn)
            if reason is not None:
                break
            turn_started = time.monotonic()
            sent = list(self.context.messages)
            try:
                reply = self.model.complete(sent, self.protocol.request_tools(schemas))
            except ModelError as err:
                reason, message = "model_error", str(err)
                break
            if not reply.tokens_estimated:
                self.context.calibrate(reply.prompt_tokens, sent)
            self._turn(writer, turn, reply, turn_started)
            turn += 1
            if self.workbench.submitted:
                reason = "submitted"
                break
        final = self.workbench.finish(profile=self.config.profile_at_end)
        best = self.workbench.best
        reward = best.verdict.reward if best is not None else -1
        writer.write(
            EndRecord(
                reason=reason, best=best, reward=reward, turns=turn, message=message, final=final
            )
        )
        return EpisodeResult(reason, turn, best, final, reward, writer.path, message)

    def _out_of_budget(self, turn: int, started: float) -> EndReason | None:
        if turn >= self.config.max_turns:
            return "turn_budget"
        limit = self.config.max_seconds
        if limit is not None and time.monotonic() - started >= limit:
            return "time_budget"
        if not self.context.fit(turn):
            return "token_budget"
        return None

    def _no_room(self, turn: int) -> str:
        ctx = self.context
        budget = f"the context of {ctx.max_tokens} tokens ({ctx.reserve} kept for the reply)"
        if turn == 0:
            return (
                f"the task's prompt alone is about {ctx.tokens()} tokens, too large for {budget}; "
                "give a smaller program or a model with a larger context (max_context_tokens)"
            )
        return f"the conversation, old observations shortened, no longer fits {budget}"

    def _turn(self, writer: TrajectoryWriter, turn: int, reply: ModelReply, started: float) -> None:
        content, calls = self.protocol.parse(reply, turn)
        best_before = self.workbench.best
        observations, verdict = [], None
        for call in calls:
            if self.workbench.submitted:
                step = self.workbench.skip(call)
            else:
                step = self.workbench.execute(call)
            observations.append(step.observation)
            verdict = step.verdict or verdict
        assistant = assistant_record(content, calls)
        self.context.add_turn(
            turn,
            self.protocol.assistant_message(assistant),
            self.protocol.result_messages(observations),
        )
        best = self.workbench.best
        record = TurnRecord(
            index=turn,
            assistant=assistant,
            observations=observations,
            verdict=verdict,
            tokens=Tokens(prompt=reply.prompt_tokens, completion=reply.completion_tokens),
            seconds=round(time.monotonic() - started, 3),
            files=self.workbench.changes(),
            best=best if best != best_before else None,
        )
        writer.write(record)
        if self.on_turn is not None:
            self.on_turn(record)


def run_episode(
    task: Task,
    workspace: str | Path,
    model: ChatModel,
    evaluator: Evaluator,
    trajectory: str | Path,
    config: AgentConfig | None = None,
    model_config: ModelConfig | None = None,
    on_turn: Callable[[TurnRecord], None] | None = None,
    stop: threading.Event | None = None,
) -> EpisodeResult:
    """One episode from a fresh workspace (created at `workspace`, which must be new or empty);
    `stop`, once set, ends it at the next turn or bash command (EpisodeStopped)."""
    config = config or AgentConfig()
    text_tools = model_config.text_tools if model_config is not None else False
    protocol = protocol_for(text_tools)
    if Path(trajectory).exists() and Path(trajectory).stat().st_size:
        raise UserError(f"{trajectory}: a trajectory is already there; resume it or choose another")
    workbench = _workbench(task, new_workspace(task, workspace), evaluator, config, stop)
    schemas = workbench.schemas()
    messages = initial_messages(task, skill_text(), protocol.system_addendum(schemas))
    writer = TrajectoryWriter(trajectory)
    writer.write(
        EpisodeRecord(
            task=task.to_record(),
            model=model.name,
            config={
                "agent": config.model_dump(),
                "model": model_config.model_dump() if model_config is not None else None,
                "text_tools": text_tools,
            },
            messages=messages,
            tools=schemas,
            started=datetime.now(UTC).isoformat(timespec="seconds"),
        )
    )
    reply_tokens = model_config.max_tokens if model_config is not None else None
    agent = Agent(model, workbench, config, protocol, messages, reply_tokens, on_turn, stop)
    return agent.run(writer)


def resume_episode(
    trajectory: str | Path,
    workspace: str | Path,
    model: ChatModel,
    evaluator: Evaluator,
    on_turn: Callable[[TurnRecord], None] | None = None,
    stop: threading.Event | None = None,
) -> EpisodeResult:
    """Continue an interrupted episode: the workspace is rebuilt at `workspace` (new or empty)
    from the recorded file changes, the conversation from the recorded turns."""
    record = load_trajectory(trajectory)
    if record.end is not None:
        raise UserError(f"{trajectory}: the episode already ended ({record.end.reason})")
    episode = record.episode
    config = AgentConfig(**episode.config["agent"])
    protocol = protocol_for(bool(episode.config.get("text_tools")))
    task = record.task
    workbench = _workbench(task, new_workspace(task, workspace), evaluator, config, stop)
    model_config = episode.config.get("model") or {}
    agent = Agent(
        model,
        workbench,
        config,
        protocol,
        episode.messages,
        model_config.get("max_tokens"),
        on_turn,
        stop,
    )
    for turn in record.turns:
        workbench.apply(turn.files)
        if turn.best is not None:
            workbench.restore_best(turn.best)
        agent.context.add_turn(
            turn.index,
            protocol.assistant_message(turn.assistant),
            protocol.result_messages(list(turn.observations)),
        )
    writer = TrajectoryWriter(trajectory, truncate_to=record.complete_bytes)
    elapsed = sum(t.seconds for t in record.turns)
    return agent.run(writer, first_turn=len(record.turns), elapsed_s=elapsed)


def _workbench(
    task: Task, root: Path, evaluator: Evaluator, config: AgentConfig, stop: threading.Event | None
) -> Workbench:
    return Workbench(
        task,
        root,
        evaluator,
        bash_timeout_s=config.bash_timeout_s,
        observation_chars=config.observation_chars,
        stop=stop,
    )
