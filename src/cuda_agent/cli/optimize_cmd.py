"""`cuda-agent optimize MODEL.py --model NAME --base-url URL`: one agent episode on a program.

DIR (--out) receives workspace/ (where the agent worked), trajectory.jsonl (every turn, as it
happens), best/ (the best verified solution, or the final workspace when none verified) and
verdict.json (its verdict). An interrupted run (Ctrl-C: exit 130) continues with --resume.
"""

from __future__ import annotations

import shlex
import shutil
from datetime import datetime
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from cuda_agent.agent import (
    EVALUATION_TURNS,
    REQUEST_TIMEOUT_S,
    AgentConfig,
    Best,
    EpisodeResult,
    ModelConfig,
    OpenAIModel,
    TurnRecord,
    check_endpoint,
    load_trajectory,
    resume_episode,
    run_episode,
)
from cuda_agent.cli.writable import check_cache, check_writable_folder
from cuda_agent.errors import Interrupted, UserError
from cuda_agent.sandbox import EnvConfig, Environment
from cuda_agent.task import load_task


def optimize(
    program: Annotated[
        str, typer.Argument(help="A KernelBench-format .py file, or a built-in task name.")
    ],
    model: Annotated[str, typer.Option(help="Model name as the server knows it.")],
    base_url: Annotated[
        str, typer.Option(help="OpenAI-compatible endpoint, e.g. http://localhost:8000/v1.")
    ],
    api_key_env: Annotated[
        str | None, typer.Option(help="Environment variable holding the API key (none: no key).")
    ] = None,
    out: Annotated[
        Path | None, typer.Option(help="Output folder (default: runs/optimize/TASK-TIME).")
    ] = None,
    max_turns: Annotated[int, typer.Option(min=1, help="Turn budget.")] = EVALUATION_TURNS,
    max_minutes: Annotated[float, typer.Option(min=0.1, help="Wall-time budget.")] = 240.0,
    text_tools: Annotated[
        bool, typer.Option(help="Tool calls as <tool_call> text blocks (servers without tools).")
    ] = False,
    max_tokens: Annotated[
        int | None, typer.Option(min=1, help="Completion tokens per turn (default: the server's).")
    ] = None,
    temperature: Annotated[float | None, typer.Option(help="Sampling temperature.")] = None,
    timeout: Annotated[
        float, typer.Option(min=1, help="Seconds per model request.")
    ] = REQUEST_TIMEOUT_S,
    resume: Annotated[
        bool, typer.Option(help="Continue the interrupted episode in --out.")
    ] = False,
) -> None:
    """Let an agent make a PyTorch program faster: writes its best solution and verdict."""
    console = Console()
    if resume and out is None:
        raise UserError("--resume needs --out: the folder of the interrupted run")
    model_config = ModelConfig(
        model=model,
        base_url=base_url,
        api_key_env=api_key_env,
        text_tools=text_tools,
        temperature=temperature,
        max_tokens=max_tokens,
        timeout_s=timeout,
    )
    client = OpenAIModel(model_config)
    task = load_task(program)
    folder = out or Path("runs") / "optimize" / f"{task.name}-{datetime.now():%Y%m%d-%H%M%S}"
    trajectory, live = folder / "trajectory.jsonl", folder / "workspace"
    check_writable_folder(folder, "--out")
    env_config = EnvConfig()
    check_cache(env_config.cache_dir)
    if resume:
        ended = load_trajectory(trajectory).end
        if ended is not None:
            raise UserError(f"{trajectory}: the episode already ended ({ended.reason})")
        shutil.rmtree(live, ignore_errors=True)  # rebuilt from the trajectory
    elif folder.exists() and any(folder.iterdir()):
        raise UserError(f"{folder}: not empty; choose another --out, or --resume the run there")
    config = AgentConfig(max_turns=max_turns, max_seconds=max_minutes * 60)
    check_endpoint(model_config)
    console.print(f"[bold]{task.name}[/] with {model} at {base_url}; working in {live}")
    try:
        with Environment(env_config) as env:
            if resume:
                result = resume_episode(trajectory, live, client, env, on_turn=_progress(console))
            else:
                result = run_episode(
                    task, live, client, env, trajectory, config, model_config, _progress(console)
                )
    except KeyboardInterrupt:
        again = ["cuda-agent", "optimize", program, "--model", model, "--base-url", base_url]
        if api_key_env is not None:
            again += ["--api-key-env", api_key_env]
        raise Interrupted(
            f"the episode so far is in {trajectory}; continue it with: "
            f"{shlex.join([*again, '--out', str(folder), '--resume'])}"
        ) from None
    answer = result.best or result.final
    if answer is not None:
        shutil.rmtree(folder / "best", ignore_errors=True)
        answer.solution.write_to(folder / "best")
        (folder / "verdict.json").write_text(answer.verdict.model_dump_json(indent=2) + "\n")
    _summary(console, result, answer, folder)
    if result.reason == "model_error":
        raise typer.Exit(1)


def _progress(console: Console):
    def show(turn: TurnRecord) -> None:
        calls = ", ".join(c.name or "?" for c in turn.assistant.tool_calls) or "no tool call"
        verdict = (
            f" → {turn.verdict.stage.value}: {turn.verdict.status.value}" if turn.verdict else ""
        )
        console.print(f"turn {turn.index}: {calls}{verdict} [dim]({turn.seconds:.1f} s)[/]")

    return show


def _summary(console: Console, result: EpisodeResult, answer: Best | None, folder: Path) -> None:
    table = Table(show_header=False)
    table.add_row("ended", result.reason + (f": {result.message}" if result.message else ""))
    table.add_row("turns", str(result.turns))
    if answer is None:
        table.add_row("solution", "none (the workspace never held model_new.py)")
    else:
        verdict = answer.verdict
        kind = "best verified" if result.best is not None else "final (none verified)"
        table.add_row("solution", f"{kind}: {verdict.status.value}, {folder / 'best'}")
        table.add_row("vs eager", _speedup(verdict.speedup_vs_eager, verdict.eager_ms))
        table.add_row("vs torch.compile", _speedup(verdict.speedup_vs_compile, verdict.compile_ms))
    table.add_row("reward", str(result.reward))
    table.add_row("trajectory", str(result.trajectory))
    console.print(table)


def _speedup(value: float | None, baseline_ms: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:.2f}x ({baseline_ms:.3f} ms)" if baseline_ms is not None else f"{value:.2f}x"
