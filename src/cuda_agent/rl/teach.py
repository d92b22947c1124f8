"""Teaching episodes: stored honest solutions replayed through the agent's own loop, so that a
policy too weak to write a kernel (a small or freshly initialised model) can first be taught by
RFT what an episode that reaches the environment looks like.

For each task with a workspace solution in SOLUTIONS/TASK_NAME/, a scripted model writes the
solution's files one call a turn (kernels first, model_new.py last), verifies, and submits. The
workspace, the tools, the evaluator and the trajectory are those of `cuda-agent train sample`,
so the episode's reward is the environment's verdict on the files, and a solution that does not
build or verify ends with the reward it earned, which RFT's reward rule then drops. Episodes
land in RUN/teach/ in the sampler's layout (trajectories/TASK/000.jsonl, episodes.jsonl) and a
rerun skips finished ones.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cuda_agent.agent import ModelReply, ToolCall, estimate_message_tokens, estimate_tokens
from cuda_agent.errors import UserError
from cuda_agent.rl.sampling import Episode, plan_episodes
from cuda_agent.sandbox import ENTRY, Solution, read_solution
from cuda_agent.task import Task


@dataclass(frozen=True)
class ScriptedReply:
    content: str
    tool: str
    arguments: dict


def teaching_script(solution: Solution) -> tuple[ScriptedReply, ...]:
    """The replies of one teaching episode: each file written, then verify, then submit."""
    order = sorted(solution.files, key=lambda path: (path == ENTRY, path))
    writes = tuple(
        ScriptedReply(
            f"I write {path}.", "write_file", {"path": path, "content": solution.files[path]}
        )
        for path in order
    )
    return (
        *writes,
        ScriptedReply("I check that it builds and matches the reference.", "verify", {}),
        ScriptedReply("It is correct; I submit it.", "submit", {}),
    )


class ScriptedModel:
    """A ChatModel that answers with the script's next reply: the one after as many as the
    conversation already holds, so a resumed episode goes on where it was cut."""

    def __init__(self, script: Sequence[ScriptedReply], name: str = "scripted"):
        self.script = tuple(script)
        self.name = name

    def complete(self, messages: list[dict], tools: list[dict] | None) -> ModelReply:
        done = sum(message.get("role") == "assistant" for message in messages)
        if done >= len(self.script):
            return ModelReply(None, (), estimate_message_tokens(messages), 0, True, "stop")
        reply = self.script[done]
        arguments = json.dumps(reply.arguments)
        call = ToolCall(f"call_{done}", reply.tool, arguments)
        completion = estimate_tokens(reply.content + arguments)
        return ModelReply(
            reply.content,
            (call,),
            estimate_message_tokens(messages),
            completion,
            True,
            "tool_calls",
        )


def teaching_episodes(tasks: Sequence[Task], solutions: Path, out: Path) -> list[Episode]:
    """One episode for each task that has a solution folder; an error when none has."""
    if not solutions.is_dir():
        raise UserError(f"--solutions {solutions}: no such folder")
    taught = [task for task in tasks if (solutions / task.name).is_dir()]
    if not taught:
        names = ", ".join(t.name for t in tasks[:5])
        raise UserError(
            f"--solutions {solutions}: no folder there is named after a task of the set "
            f"(tasks: {names}{', ...' if len(tasks) > 5 else ''}); lay out one workspace "
            "solution per task as SOLUTIONS/TASK_NAME/model_new.py and kernels/"
        )
    return plan_episodes(taught, 1, out)


def scripted_model_for(solutions: Path):
    """The `model_for` of `sample_episodes` that replays each task's stored solution."""

    def model_for(episode: Episode, _config) -> ScriptedModel:
        folder = solutions / episode.task.name
        return ScriptedModel(teaching_script(read_solution(folder)), f"scripted:{folder}")

    return model_for
