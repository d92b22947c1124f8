"""Stage 2: sample agent episodes from the stage-1 policy, served by vLLM, SGLang or, on one GPU,
plain transformers (`engine: hf`, cuda_agent.rl.hf_server).

The episodes are the agent's own (`cuda_agent.agent.run_episode`, native tool calls through the
server's tool parser), so RFT imitates exactly what the agent does at evaluation time. Each
episode writes its trajectory to `OUT/trajectories/TASK/NNN.jsonl` as it goes, and a line in
`OUT/episodes.jsonl` when it ends; a rerun skips finished episodes and resumes interrupted ones.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
import tempfile
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from cuda_agent.agent import (
    AgentConfig,
    ChatModel,
    EpisodeResult,
    ModelConfig,
    OpenAIModel,
    load_trajectory,
    resume_episode,
    run_episode,
)
from cuda_agent.errors import UserError
from cuda_agent.rl.evaluators import EvaluatorSpec, open_evaluator
from cuda_agent.task import Task

TOOL_PARSERS = {"vllm": "hermes", "sglang": "qwen25", "hf": "hermes"}


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ServerSettings(_Frozen):
    engine: Literal["vllm", "sglang", "hf"] = "vllm"  # hf: cuda_agent.rl.hf_server, one GPU
    model: str | None = None  # HF folder of the stage-1 policy; --model fills it
    served_name: str = "policy"
    host: str = "127.0.0.1"
    port: int = 8000
    tensor_parallel_size: int = 1
    data_parallel_size: int = 1
    max_model_len: int = 131072
    tool_call_parser: str | None = None  # default: hermes (vLLM), qwen25 (SGLang)
    extra_args: list[str] = Field(default_factory=list)

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"


class SamplingSettings(_Frozen):
    samples_per_task: int = Field(default=4, ge=1)
    temperature: float = 1.0
    max_tokens: int = 8192  # per reply
    concurrency: int = Field(default=32, ge=1)
    max_turns: int = Field(default=150, ge=1)
    max_context_tokens: int = 131072


class EvaluatorSettings(_Frozen):
    factory: str = EvaluatorSpec().factory
    kwargs: dict[str, Any] = Field(default_factory=dict)


class SampleConfig(_Frozen):
    server: ServerSettings = ServerSettings()
    sampling: SamplingSettings = SamplingSettings()
    evaluator: EvaluatorSettings = EvaluatorSettings()


def load_sample_config(path: str | Path) -> SampleConfig:
    try:
        data = yaml.safe_load(Path(path).read_text()) or {}
        return SampleConfig.model_validate(data)
    except FileNotFoundError:
        raise UserError(f"{path}: no such config file") from None
    except (yaml.YAMLError, ValidationError) as err:
        raise UserError(f"{path}: {_first(err)}") from None


def check_engine(server: ServerSettings) -> None:
    """One line where the engine that would serve the policy is not installed here."""
    missing = (
        server.engine == "vllm" and shutil.which("vllm") is None,
        server.engine == "sglang" and importlib.util.find_spec("sglang") is None,
    )
    if any(missing):
        what = "no vllm command on PATH" if missing[0] else "no sglang module"
        raise UserError(
            f"{server.engine} is not installed here ({what}): install it, serve the policy "
            "yourself and pass --base-url, or set server.engine: hf (plain transformers on one "
            "GPU, as configs/sample_1gpu.yaml does)"
        )


def server_command(server: ServerSettings) -> list[str]:
    """The command that serves the policy with tool calling on (OpenAI-compatible API)."""
    if server.model is None:
        raise UserError(
            "no policy to serve: give --model (an HF folder, e.g. the merged stage-1 actor)"
        )
    parser = server.tool_call_parser or TOOL_PARSERS[server.engine]
    if server.engine == "hf":
        if parser != "hermes":
            raise UserError(f"engine hf reads hermes tool calls only, not {parser!r}")
        command = [
            sys.executable, "-m", "cuda_agent.rl.hf_server", "--model", server.model,
            "--served-model-name", server.served_name,
            "--host", server.host, "--port", str(server.port),
            "--max-model-len", str(server.max_model_len),
        ]  # fmt: skip
    elif server.engine == "vllm":
        command = [
            "vllm", "serve", server.model,
            "--served-model-name", server.served_name,
            "--host", server.host, "--port", str(server.port),
            "--tensor-parallel-size", str(server.tensor_parallel_size),
            "--data-parallel-size", str(server.data_parallel_size),
            "--max-model-len", str(server.max_model_len),
            "--enable-auto-tool-choice", "--tool-call-parser", parser,
        ]  # fmt: skip
    else:
        command = [
            "python", "-m", "sglang.launch_server",
            "--model-path", server.model,
            "--served-model-name", server.served_name,
            "--host", server.host, "--port", str(server.port),
            "--tp-size", str(server.tensor_parallel_size),
            "--dp-size", str(server.data_parallel_size),
            "--context-length", str(server.max_model_len),
            "--tool-call-parser", parser,
        ]  # fmt: skip
    return command + list(server.extra_args)


@dataclass(frozen=True)
class Episode:
    task: Task
    sample: int
    trajectory: Path

    @property
    def state(self) -> Literal["new", "partial", "done"]:
        """new: nothing recorded yet (at most a line cut off mid-write); partial: resumable."""
        if not self.trajectory.is_file() or b"\n" not in self.trajectory.read_bytes():
            return "new"
        return "done" if load_trajectory(self.trajectory).end is not None else "partial"


@dataclass
class SampleRun:
    """What a `sample_episodes` call did."""

    finished: list[dict] = field(default_factory=list)  # the episodes.jsonl lines written
    skipped: int = 0


def plan_episodes(tasks: Sequence[Task], samples: int, out: Path) -> list[Episode]:
    return [
        Episode(task, k, out / "trajectories" / task.name / f"{k:03d}.jsonl")
        for task in tasks
        for k in range(samples)
    ]


def sample_episodes(
    episodes: Sequence[Episode],
    config: SampleConfig,
    out: Path,
    on_done: Callable[[dict], None] | None = None,
    model_for: Callable[[Episode, ModelConfig], ChatModel] | None = None,
) -> SampleRun:
    """Run every episode not yet done, `concurrency` at a time, each with the model `model_for`
    gives it (default: the server's, through its OpenAI-compatible API)."""
    model_for = model_for or (lambda _episode, config: OpenAIModel(config))
    settings = config.sampling
    model_config = ModelConfig(
        model=config.server.served_name,
        base_url=config.server.base_url,
        temperature=settings.temperature,
        max_tokens=settings.max_tokens,
    )
    agent_config = AgentConfig.for_training(max_context_tokens=settings.max_context_tokens)
    agent_config = agent_config.model_copy(update={"max_turns": settings.max_turns})
    spec = EvaluatorSpec(config.evaluator.factory, dict(config.evaluator.kwargs))
    run, lock = SampleRun(), threading.Lock()
    pending = [e for e in episodes if e.state != "done"]
    run.skipped = len(episodes) - len(pending)
    summary = out / "episodes.jsonl"
    out.mkdir(parents=True, exist_ok=True)

    def one(episode: Episode) -> None:
        model = model_for(episode, model_config)
        result = _play(episode, model, spec, agent_config, model_config)
        line = {
            "task": episode.task.name,
            "task_hash": episode.task.hash,
            "sample": episode.sample,
            "reason": result.reason,
            "turns": result.turns,
            "reward": result.reward,
            "trajectory": str(episode.trajectory),
        }
        with lock:
            with summary.open("a") as fh:
                fh.write(json.dumps(line) + "\n")
                fh.flush()
            run.finished.append(line)
            if on_done is not None:
                on_done(line)

    with ThreadPoolExecutor(max_workers=settings.concurrency) as pool:
        for future in [pool.submit(one, e) for e in pending]:
            future.result()
    return run


def _play(
    episode: Episode, model, spec: EvaluatorSpec, agent: AgentConfig, model_config
) -> EpisodeResult:
    with (
        open_evaluator(spec) as evaluator,
        tempfile.TemporaryDirectory(prefix="cuda-agent-sample-") as tmp,
    ):
        workspace = Path(tmp) / "workspace"
        if episode.state == "partial":
            return resume_episode(episode.trajectory, workspace, model, evaluator)
        episode.trajectory.parent.mkdir(parents=True, exist_ok=True)
        episode.trajectory.unlink(missing_ok=True)
        return run_episode(
            episode.task, workspace, model, evaluator, episode.trajectory, agent, model_config
        )


def _first(err: Exception) -> str:
    if isinstance(err, ValidationError):
        first = err.errors()[0]
        return f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']}"
    return str(err).splitlines()[0]
