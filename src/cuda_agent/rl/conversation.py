"""A stored trajectory as the conversation a policy is trained on.

The agent stores calls with their raw JSON arguments; chat templates render arguments as
objects, so they are parsed here. An episode sampled with the text tool protocol loses the
protocol's addendum from its system prompt: training uses the model's native tool calls.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from cuda_agent.agent import NO_TOOL_CALL, TextTools, Trajectory
from cuda_agent.task import Task


@dataclass(frozen=True)
class Conversation:
    task: Task
    messages: list[dict]  # system, user, then the episode's turns
    tools: list[dict]  # OpenAI tool schemas
    reward: int

    @property
    def parallel_calls(self) -> bool:
        """Whether a reply made several calls (their results are consecutive tool messages)."""
        return any(len(m.get("tool_calls") or ()) > 1 for m in self.messages)


def to_conversation(trajectory: Trajectory) -> Conversation:
    episode = trajectory.episode
    messages = [dict(m) for m in episode.messages]
    if episode.config.get("text_tools") and messages and messages[0].get("role") == "system":
        addendum = TextTools().system_addendum(episode.tools)
        content = messages[0]["content"]
        if content.endswith(addendum):
            messages[0] = {**messages[0], "content": content[: -len(addendum)]}
    for turn in trajectory.turns:
        calls = turn.assistant.tool_calls
        assistant: dict = {"role": "assistant", "content": turn.assistant.content or ""}
        if calls:
            assistant["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": call_arguments(c.arguments)},
                }
                for c in calls
            ]
        messages.append(assistant)
        messages += [
            {"role": "tool", "tool_call_id": o.tool_call_id, "name": o.name, "content": o.content}
            for o in turn.observations
        ]
        if not calls:
            messages.append({"role": "user", "content": NO_TOOL_CALL})
    reward = trajectory.end.reward if trajectory.end is not None else -1
    return Conversation(trajectory.task, messages, list(episode.tools), reward)


def call_arguments(raw: str) -> dict | str:
    """Arguments as an object when they are a JSON object, else the raw text the model sent."""
    try:
        parsed = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError:
        return raw
    return parsed if isinstance(parsed, dict) else raw
