"""Agent episodes for the runner: the bench's only use of `cuda_agent.agent`.

An episode's trajectory is kept in the run folder; a rerun continues an interrupted episode
from it, reads back one that ended, and starts over only after a model error (the endpoint, not
the policy, failed) or when the task's program changed.
"""

from __future__ import annotations

import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from cuda_agent.agent import (
    AgentConfig,
    Evaluator,
    ModelConfig,
    OpenAIModel,
    load_trajectory,
    resume_episode,
    run_episode,
)
from cuda_agent.bench.store import MODEL_ERROR
from cuda_agent.sandbox import Solution, Verdict
from cuda_agent.task import Task


@dataclass(frozen=True)
class AgentPolicy:
    """The model to run and the episode budgets; `workers` episodes run at once."""

    model: ModelConfig
    agent: AgentConfig = AgentConfig()
    workers: int = 4


@dataclass(frozen=True)
class EpisodeOutcome:
    solution: Solution | None  # the episode's answer: its best verified solution, else its last
    verdict: Verdict | None
    reason: str  # why the episode ended (submitted, turn_budget, ..., model_error)
    turns: int
    message: str | None


def run_task(
    task: Task,
    policy: AgentPolicy,
    evaluator: Evaluator,
    trajectory: Path,
    stop: threading.Event | None = None,
) -> EpisodeOutcome:
    """Run, continue or read back the episode of `task` recorded at `trajectory`; once `stop` is
    set the episode ends unfinished (EpisodeStopped), to be continued by a rerun."""
    if trajectory.is_file() and trajectory.stat().st_size:
        record = load_trajectory(trajectory)
        stale = record.episode.task.get("hash") != task.hash
        if record.end is not None and not stale and record.end.reason != MODEL_ERROR:
            best = record.end.best
            return EpisodeOutcome(
                best.solution if best else None,
                best.verdict if best else None,
                record.end.reason,
                record.end.turns,
                record.end.message,
            )
        if record.end is None and not stale:
            with tempfile.TemporaryDirectory(prefix="cuda-agent-episode-") as tmp:
                result = resume_episode(
                    trajectory,
                    Path(tmp) / "workspace",
                    OpenAIModel(policy.model),
                    evaluator,
                    stop=stop,
                )
            return _outcome(result)
        _set_aside(trajectory)
    with tempfile.TemporaryDirectory(prefix="cuda-agent-episode-") as tmp:
        result = run_episode(
            task,
            Path(tmp) / "workspace",
            OpenAIModel(policy.model),
            evaluator,
            trajectory,
            config=policy.agent,
            model_config=policy.model,
            stop=stop,
        )
    return _outcome(result)


def _outcome(result) -> EpisodeOutcome:
    chosen = result.best or result.final
    return EpisodeOutcome(
        chosen.solution if chosen else None,
        chosen.verdict if chosen else None,
        result.reason,
        result.turns,
        result.message,
    )


def _set_aside(trajectory: Path) -> None:
    """Keep a failed or stale episode's file next to the new one (NAME.1.jsonl, NAME.2.jsonl...)."""
    n = 1
    while (aside := trajectory.with_suffix(f".{n}.jsonl")).exists():
        n += 1
    trajectory.rename(aside)
