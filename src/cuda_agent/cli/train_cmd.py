"""`cuda-agent train STAGE --config FILE`: prepare a stage's data, print its command, launch it.

    warmup  single-turn PPO on veRL            needs --model, --tasks
    sample  agent episodes from the policy     needs --model (or --base-url), --tasks
    rft     rejection fine-tuning on veRL      needs --model (the stage-1 actor)
    value   critic pre-training on veRL        needs --model (the RFT actor)
    ppo     multi-turn PPO on veRL             needs --model (RFT actor), --critic, --tasks
    all     warmup, rft, value, ppo in order   needs --model (the base), --trajectories, --tasks;
            each stage from the previous one's merged model (cuda_agent.rl.pipeline), the
            configs STAGE+--suffix (default _1gpu: one GPU, a tiny model), resumable

Everything goes under --run-dir (Hydra's outputs included). Before anything starts, a training
stage checks that the rl extra is installed, that --model (and --critic) is a model folder or a
hub id, that a GPU is visible (unless --dry-run), and its config against the installed veRL.
--dry-run prepares the data and prints the command without launching it; extra arguments are
hydra overrides passed to veRL (e.g. trainer.nnodes=4).
"""

from __future__ import annotations

import shlex
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Annotated

import typer

from cuda_agent.cli.writable import check_writable_folder
from cuda_agent.errors import UserError
from cuda_agent.rl import (
    AGENT_LOOPS,
    CONFIG_DIR,
    STAGES,
    RFTRules,
    TrainInputs,
    check_engine,
    check_gpu,
    check_model,
    check_rl_extra,
    compose_stage,
    describe,
    is_sft,
    load_sample_config,
    pipeline,
    plan_episodes,
    prepare,
    sample_dir,
    sample_episodes,
    server_command,
    unknown_keys,
    validate_stage,
    verl_command,
    verl_overrides,
)
from cuda_agent.rl.module_run import module_of, run_module_command
from cuda_agent.task import load_tasks

SERVER_START_S = 1800.0  # loading a large checkpoint onto 8 GPUs can take many minutes


def train(
    stage: Annotated[str, typer.Argument(help=f"One of: {', '.join(STAGES)}, all.")],
    overrides: Annotated[
        list[str] | None, typer.Argument(help="Hydra overrides for veRL, e.g. trainer.nnodes=4.")
    ] = None,
    config: Annotated[
        str | None,
        typer.Option(help="Stage config: a YAML file or a packaged name (ppo, ppo_small, ...)."),
    ] = None,
    run_dir: Annotated[
        Path, typer.Option(help="Folder for the run's data and checkpoints.")
    ] = Path("runs/rl"),
    model: Annotated[str | None, typer.Option(help="Policy to start from (HF folder).")] = None,
    critic: Annotated[
        str | None, typer.Option(help="Critic to start from (default: --model).")
    ] = None,
    tasks: Annotated[
        str | None, typer.Option(help="Task set (file, folder, JSONL, parquet; default builtin).")
    ] = None,
    trajectories: Annotated[
        Path | None, typer.Option(help="Trajectories for rft/value (default: RUN/sample).")
    ] = None,
    agent_loops: Annotated[
        Path, typer.Option(help="Agent-loop registry YAML (evaluator, turn budget).")
    ] = AGENT_LOOPS,
    base_url: Annotated[
        str | None, typer.Option(help="sample: use this running server instead of starting one.")
    ] = None,
    min_reward: Annotated[int, typer.Option(help="rft/value: lowest reward kept.")] = 1,
    max_repeated_calls: Annotated[int, typer.Option(min=1)] = RFTRules.max_repeated_calls,
    max_repeated_failures: Annotated[int, typer.Option(min=1)] = RFTRules.max_repeated_failures,
    suffix: Annotated[
        str, typer.Option(help="all: each stage's config is STAGE+SUFFIX (_1gpu, _small, '').")
    ] = "_1gpu",
    dry_run: Annotated[
        bool, typer.Option(help="Prepare the data and print the command; do not launch.")
    ] = False,
) -> None:
    """Run one stage of the RL recipe (single-turn PPO, sampling, RFT, value pre-training, PPO),
    or `all` of the trainable ones in order."""
    if stage == "all":
        _all_stages(run_dir, model, config, critic, trajectories, tasks, suffix, overrides, dry_run)
        return
    if stage not in STAGES:
        raise UserError(f"unknown stage {stage!r}; the stages are {', '.join(STAGES)}, all")
    if not agent_loops.is_file():
        raise UserError(f"--agent-loops {agent_loops}: no such file")
    inputs = TrainInputs(
        stage=stage,
        config=_config_path(config or stage),
        run_dir=run_dir,
        model=model,
        critic=critic,
        tasks=tasks,
        trajectories=trajectories,
        agent_loops=agent_loops,
        rules=RFTRules(min_reward, max_repeated_calls, max_repeated_failures),
        overrides=tuple(overrides or ()),
    )
    check_writable_folder(run_dir, "--run-dir")
    if stage == "sample":
        _sample(inputs, base_url, dry_run)
        return
    if not model:
        raise UserError(f"missing --model: the policy stage {stage} starts from (an HF folder)")
    check_rl_extra()
    _check_models(inputs)
    if not dry_run:
        check_gpu(stage)
    typer.echo(f"stage {stage}: {inputs.config}")
    prepared = prepare(inputs)
    typer.echo(describe(prepared))
    command = _checked_command(inputs, verl_overrides(inputs, prepared))
    typer.echo("\n" + shlex.join(command) + "\n")
    if dry_run:
        return
    if any("$" in part for part in command):
        raise UserError("a multi-node RFT run needs NODE_RANK and MASTER_ADDR set on every node")
    # veRL's PPO trainer runs in this process, which has imported veRL to check the config; the
    # SFT trainer's torchrun starts its own processes
    code = run_module_command(command) if module_of(command) else subprocess.call(command)
    if code:
        raise typer.Exit(code)


def _all_stages(
    run_dir: Path,
    model: str | None,
    config: str | None,
    critic: str | None,
    trajectories: Path | None,
    tasks: str | None,
    suffix: str,
    overrides: list[str] | None,
    dry_run: bool,
) -> None:
    if config is not None:
        raise UserError("all runs each stage's packaged config STAGE+--suffix; drop --config")
    if critic is not None:
        raise UserError("all trains its own critic (the value stage's); drop --critic")
    if not model:
        raise UserError("missing --model: the policy the first stage (warmup) starts from")
    if trajectories is None:
        raise UserError(
            "missing --trajectories: the episodes rft and value train on "
            "(cuda-agent train sample writes them)"
        )
    for stage in pipeline.ORDER:
        _config_path(stage + suffix)  # a suffix with a missing config fails before any stage
    check_writable_folder(run_dir, "--run-dir")
    plan = pipeline.plan(run_dir, model, trajectories, tasks, suffix, tuple(overrides or ()))
    pipeline.run(plan, dry_run=dry_run)


def _config_path(config: str) -> Path:
    path = Path(config)
    if path.is_file():
        return path
    packaged = CONFIG_DIR / f"{config.removesuffix('.yaml')}.yaml"
    if packaged.is_file():
        return packaged
    names = sorted(p.stem for p in CONFIG_DIR.glob("*.yaml") if p.stem != "agent_loops")
    raise UserError(f"--config {config}: no such file or packaged config ({', '.join(names)})")


def _check_models(inputs: TrainInputs) -> None:
    checked = [("--model", inputs.model)] + ([("--critic", inputs.critic)] if inputs.critic else [])
    for option, name in checked:
        note = check_model(name, option)
        if note is not None:
            typer.echo(f"note: {note}", err=True)


def _checked_command(inputs: TrainInputs, overrides: list[str]) -> list[str]:
    """Compose the stage with veRL's configs, refuse what veRL would refuse, build the command."""
    unknown = unknown_keys(inputs.config)
    if unknown:
        raise UserError(f"{inputs.config}: veRL {_verl_version()} has no key {', '.join(unknown)}")
    cfg = compose_stage(inputs.config, overrides)
    validate_stage(cfg)
    if (inputs.stage == "rft") != is_sft(cfg):
        raise UserError(f"{inputs.config} is not a {inputs.stage} config")
    return verl_command(
        inputs, overrides, int(cfg.trainer.nnodes), int(cfg.trainer.n_gpus_per_node)
    )


def _verl_version() -> str:
    from importlib.metadata import version

    return version("verl")


def _sample(inputs: TrainInputs, base_url: str | None, dry_run: bool) -> None:
    cfg = load_sample_config(inputs.config)
    server = cfg.server.model_copy(update={"model": inputs.model or cfg.server.model})
    if base_url is not None:
        host_port = base_url.split("//", 1)[-1].split("/", 1)[0]
        host, _, port = host_port.partition(":")
        server = server.model_copy(update={"host": host, "port": int(port or 80)})
    cfg = cfg.model_copy(update={"server": server})
    out = sample_dir(inputs)
    episodes = plan_episodes(load_tasks(inputs.tasks), cfg.sampling.samples_per_task, out)
    states = [e.state for e in episodes]
    typer.echo(
        f"stage sample: {len(episodes)} episodes ({states.count('done')} done, "
        f"{states.count('partial')} to resume, {states.count('new')} new) -> {out}"
    )
    launch = base_url is None
    if launch:
        typer.echo("\n" + shlex.join(server_command(server)) + "\n")
    if dry_run:
        return
    if launch:
        check_engine(server)
        check_gpu("sample (serving the policy)")
    process = _start_server(server, out) if launch else None
    try:
        _wait_ready(server.base_url, process, out)
        run = sample_episodes(episodes, cfg, out, on_done=_progress)
    finally:
        if process is not None:
            process.terminate()
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
    rewards = [line["reward"] for line in run.finished]
    positive = sum(r > 0 for r in rewards)
    done = f"{run.skipped} were done"
    typer.echo(f"sampled {len(rewards)} episodes ({positive} with positive reward); {done}")


def _start_server(server, out: Path) -> subprocess.Popen:
    out.mkdir(parents=True, exist_ok=True)
    log = (out / "server.log").open("ab")
    return subprocess.Popen(server_command(server), stdout=log, stderr=subprocess.STDOUT)


def _wait_ready(base_url: str, process: subprocess.Popen | None, out: Path) -> None:
    deadline = time.monotonic() + SERVER_START_S
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise UserError(
                f"the policy server exited ({process.returncode}); see {out / 'server.log'}"
            )
        try:
            with urllib.request.urlopen(f"{base_url}/models", timeout=5):
                return
        except (urllib.error.URLError, OSError):
            time.sleep(2)
    raise UserError(f"{base_url}: no answer after {SERVER_START_S:.0f} s; see {out / 'server.log'}")


def _progress(line: dict) -> None:
    episode = f"{line['task']} #{line['sample']}"
    typer.echo(f"{episode}: {line['reason']}, {line['turns']} turns, reward {line['reward']}")
