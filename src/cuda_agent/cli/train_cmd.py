"""`cuda-agent train STAGE --config FILE`: prepare a stage's data, print its command, launch it.

    teach   stored solutions as agent episodes needs --solutions, --tasks (no model, no veRL)
    pre_rft RFT on the teaching episodes       needs --model (the policy to teach)
    warmup  single-turn PPO on veRL            needs --model, --tasks
    sample  agent episodes from the policy     needs --model (or --base-url), --tasks
    rft     rejection fine-tuning on veRL      needs --model (the stage-1 actor)
    value   critic pre-training on veRL        needs --model (the RFT actor)
    ppo     multi-turn PPO on veRL             needs --model (RFT actor), --critic, --tasks
    all     the stages in order                needs --model (the base), --tasks; teach and pre_rft
            first with --solutions, sample unless --trajectories gives the episodes; each
            stage from the previous one's merged model (cuda_agent.rl.pipeline), the configs
            STAGE+--suffix (default _1gpu: one GPU, a tiny model), resumable

Everything goes under --run-dir (Hydra's outputs included). Before anything starts, a training
stage checks that the rl extra is installed, that --model (and --critic) is a model folder or a
hub id, that a GPU is visible (unless --dry-run), and its config against the installed veRL.
--dry-run prepares the data and prints the command without launching it; extra arguments are
hydra overrides passed to veRL (e.g. trainer.nnodes=4).
"""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path
from typing import Annotated

import typer

from cuda_agent.cli.train_episodes import run_sample, run_teach
from cuda_agent.cli.writable import check_writable_folder
from cuda_agent.errors import UserError
from cuda_agent.rl import (
    AGENT_LOOPS,
    CONFIG_DIR,
    SFT_STAGES,
    STAGES,
    RFTRules,
    TrainInputs,
    check_gpu,
    check_model,
    check_rl_extra,
    compose_stage,
    config_stem,
    describe,
    is_sft,
    pipeline,
    prepare,
    unknown_keys,
    validate_stage,
    verl_command,
    verl_overrides,
)
from cuda_agent.rl.module_run import module_of, run_module_command


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
        Path | None,
        typer.Option(help="Trajectories for pre_rft/rft/value (default: RUN/teach, RUN/sample)."),
    ] = None,
    solutions: Annotated[
        Path | None,
        typer.Option(help="teach: stored workspace solutions, one folder per task name."),
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
        _all_stages(
            run_dir, model, config, critic, trajectories, solutions, tasks, suffix, overrides,
            dry_run,
        )  # fmt: skip
        return
    if stage not in STAGES:
        raise UserError(f"unknown stage {stage!r}; the stages are {', '.join(STAGES)}, all")
    if not agent_loops.is_file():
        raise UserError(f"--agent-loops {agent_loops}: no such file")
    inputs = TrainInputs(
        stage=stage,
        config=_config_path(config or config_stem(stage)),
        run_dir=run_dir,
        model=model,
        critic=critic,
        tasks=tasks,
        trajectories=trajectories,
        solutions=solutions,
        agent_loops=agent_loops,
        rules=RFTRules(min_reward, max_repeated_calls, max_repeated_failures),
        overrides=tuple(overrides or ()),
    )
    check_writable_folder(run_dir, "--run-dir")
    if stage == "sample":
        run_sample(inputs, base_url, dry_run)
        return
    if stage == "teach":
        run_teach(inputs, dry_run)
        return
    if not model:
        raise UserError(f"missing --model: the policy stage {stage} starts from (an HF folder)")
    check_rl_extra()
    _check_models(inputs)
    if not dry_run:
        check_gpu(stage)
    typer.echo(f"stage {stage}: {inputs.config}")
    prepared = prepare(inputs, dry_run)
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
    solutions: Path | None,
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
    if solutions is not None and not solutions.is_dir():
        raise UserError(f"--solutions {solutions}: no such folder")
    plan = pipeline.plan(
        run_dir, model, trajectories, tasks, suffix, tuple(overrides or ()), solutions
    )
    for stage in plan.stages:  # a suffix with a missing config fails before any stage
        _config_path(pipeline.config_name(plan, stage))
    check_writable_folder(run_dir, "--run-dir")
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
    if (inputs.stage in SFT_STAGES) != is_sft(cfg):
        raise UserError(f"{inputs.config} is not a {inputs.stage} config")
    return verl_command(
        inputs, overrides, int(cfg.trainer.nnodes), int(cfg.trainer.n_gpus_per_node)
    )


def _verl_version() -> str:
    from importlib.metadata import version

    return version("verl")
