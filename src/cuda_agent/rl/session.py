"""One RL episode's environment: a workspace, the agent's tools and an evaluator, kept for the
whole episode (veRL's stock tool loop makes and releases a tool instance per call, which cannot
keep a workspace between turns).

The RL engine owns the tokens; this owns everything else. Each turn it takes the text the policy
generated, reads its tool calls the way the agent's text protocol does (a broken call becomes an
error observation the policy can learn from, never a dropped call), runs them on the agent's
workbench and returns the chat messages to append. At the end the milestone reward of the best
verified solution is the episode's reward. With `trajectory` set, the episode is also written
as an agent trajectory, so RL rollouts feed the same RFT filter and replay as sampled ones.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from cuda_agent.agent import (
    NO_TOOL_CALL,
    EndRecord,
    EpisodeRecord,
    Evaluator,
    ModelReply,
    Observation,
    TextTools,
    ToolCall,
    TrajectoryWriter,
    TurnRecord,
    Workbench,
    new_workspace,
)
from cuda_agent.rl.conversation import call_arguments
from cuda_agent.sandbox import Verdict
from cuda_agent.task import Task


@dataclass(frozen=True)
class SessionConfig:
    max_turns: int = 150  # the paper's RL budget
    bash_timeout_s: float = 300.0
    observation_chars: int = 16_000
    profile_at_end: bool = True


@dataclass(frozen=True)
class TurnOutcome:
    assistant: dict  # the reply as a chat message (native tool calls)
    results: list[dict]  # tool messages, or the no-tool-call reminder as a user message
    observations: list[Observation]
    ends_episode: bool


class EpisodeSession:
    def __init__(
        self,
        task: Task,
        workspace: str | Path,
        evaluator: Evaluator,
        config: SessionConfig,
        trajectory: str | Path | None = None,
    ):
        """`workspace`: new or empty; `trajectory`: where to write the episode, if anywhere."""
        self.task = task
        self.config = config
        self.workbench = Workbench(
            task,
            new_workspace(task, workspace),
            evaluator,
            bash_timeout_s=config.bash_timeout_s,
            observation_chars=config.observation_chars,
        )
        self.turns = 0
        self._protocol = TextTools()
        self._writer = TrajectoryWriter(trajectory) if trajectory is not None else None

    @property
    def tools(self) -> list[dict]:
        """The OpenAI schemas of the tools, for the chat template."""
        return self.workbench.schemas()

    @property
    def done(self) -> bool:
        return self.workbench.submitted or self.turns >= self.config.max_turns

    def start(self, messages: list[dict], model: str) -> None:
        """Record the episode's first messages (only needed when writing a trajectory)."""
        if self._writer is not None:
            self._writer.write(
                EpisodeRecord(
                    task=self.task.to_record(),
                    model=model,
                    config={"session": asdict(self.config), "text_tools": False},
                    messages=messages,
                    tools=self.tools,
                    started=datetime.now(UTC).isoformat(timespec="seconds"),
                )
            )

    def turn(self, text: str, prompt_tokens: int = 0, completion_tokens: int = 0) -> TurnOutcome:
        """Run the tool calls in one generated reply; the messages to append come back."""
        started = time.monotonic()
        reply = ModelReply(text, (), prompt_tokens, completion_tokens, tokens_estimated=False)
        content, calls = self._protocol.parse(reply, self.turns)
        best_before = self.workbench.best
        observations: list[Observation] = []
        verdict: Verdict | None = None
        for call in calls:
            step = (
                self.workbench.skip(call)
                if self.workbench.submitted
                else self.workbench.execute(call)
            )
            observations.append(step.observation)
            verdict = step.verdict or verdict
        if observations:
            results = [
                {
                    "role": "tool",
                    "tool_call_id": o.tool_call_id,
                    "name": o.name,
                    "content": o.content,
                }
                for o in observations
            ]
        else:
            results = [{"role": "user", "content": NO_TOOL_CALL}]
        if self._writer is not None:
            self._writer.write(
                TurnRecord(
                    index=self.turns,
                    assistant={
                        "content": content,
                        "tool_calls": [
                            {"id": c.id, "name": c.name, "arguments": c.arguments} for c in calls
                        ],
                    },
                    observations=observations,
                    verdict=verdict,
                    tokens={"prompt": prompt_tokens, "completion": completion_tokens},
                    seconds=round(time.monotonic() - started, 3),
                    files=self.workbench.changes(),
                    best=self.workbench.best if self.workbench.best != best_before else None,
                )
            )
        self.turns += 1
        return TurnOutcome(
            assistant_message(content, calls), results, observations, self.workbench.submitted
        )

    def finish(self, reason: str) -> int:
        """Score the episode: the milestone reward of its best verified solution (-1 if none)."""
        self.workbench.finish(profile=self.config.profile_at_end)
        best = self.workbench.best
        reward = best.verdict.reward if best is not None else -1
        if self._writer is not None:
            self._writer.write(EndRecord(reason=reason, best=best, reward=reward, turns=self.turns))
        return reward


def assistant_message(content: str | None, calls: list[ToolCall]) -> dict:
    """A reply as a chat message; arguments as objects (what chat templates render), raw text
    where the model's JSON was broken."""
    message: dict = {"role": "assistant", "content": content or ""}
    if calls:
        message["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": call_arguments(c.arguments)},
            }
            for c in calls
        ]
    return message
