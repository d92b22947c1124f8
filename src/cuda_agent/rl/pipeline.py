"""The training stages in order on one run folder, each starting from the previous stage's model
merged by veRL's model_merger, as docs/training.md has a user do by hand on a cluster:

    teach   --solutions SOLUTIONS  (with --solutions)      -> teach/trajectories
    pre_rft --model BASE           (with --solutions)      -> models/taught_actor
    warmup  --model BASE (or models/taught_actor)          -> models/warmup_actor
    sample  --model models/warmup_actor (no --trajectories) -> sample/trajectories
    rft     --model models/warmup_actor                    -> models/rft_actor
    value   --model models/rft_actor                       -> models/value_critic
    ppo     --model models/rft_actor --critic models/value_critic  -> models/ppo_actor

`teach` replays stored solutions through the agent's loop and `pre_rft` fine-tunes the base on
those episodes, for a base that cannot yet write a solution the environment would build (a tiny
or random model). rft and value train on the episodes `sample` drew from the warm policy, or on
`--trajectories` given instead. Each stage is one `cuda-agent train` process with the config
STAGE+SUFFIX (`teach` and `sample` read sample+SUFFIX; `_1gpu`: one GPU, a tiny model, the `hf`
rollout and server, whose module veRL imports in every worker through
VERL_USE_EXTERNAL_MODULES); a training stage's merge runs in this process
(`cuda_agent.rl.module_run`). Each stage's output, its merge's included, goes to
RUN/logs/STAGE.log, a training stage's per-step metrics (veRL's file logger) to
RUN/metrics/STAGE.jsonl, and one JSON line per finished stage to RUN/pipeline.jsonl (exit code,
wall time, peak GPU memory, the merged model, attempts; for an episode stage, its episodes'
turns and rewards); a rerun skips the stages recorded there and resumes a cut stage from its
last checkpoint (veRL's `resume_mode: auto`) or its unfinished episodes, its earlier attempts'
log kept above the new one and their metrics beside it (`cuda_agent.rl.stage_metrics`).

    cuda-agent train all --run-dir RUN --model BASE [--tasks TASKS] [--solutions DIR]
        [--trajectories DIR] [--suffix _1gpu] [--dry-run] [veRL overrides for every stage]

`--dry-run` prints every command and checks every stage's config and data with
`cuda-agent train --dry-run`, starting each from BASE, since the merged models do not exist yet.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from cuda_agent.errors import UserError
from cuda_agent.rl.gpu_memory import PeakGpuMemory
from cuda_agent.rl.module_run import module_of, output_to, run_module_command
from cuda_agent.rl.stage_metrics import keep_earlier_attempt, metrics_file
from cuda_agent.rl.stages import EPISODE_STAGES, config_stem

ORDER = ("teach", "pre_rft", "warmup", "sample", "rft", "value", "ppo")
PPO_STAGES = ("warmup", "value", "ppo")  # veRL's PPO trainer on Ray
EXTERNAL_MODULES = "cuda_agent.rl.worker_plugins"
ATTEMPT_HEADER = "# attempt started"  # one line in the stage's log per attempt
MERGER = "verl.model_merger"


@dataclass(frozen=True)
class Stage:
    name: str
    model: str
    critic: str | None
    merged: Path | None  # the HF folder this stage's checkpoint is merged into (None: episodes)
    role: str | None  # the checkpoint merged: actor, critic, or the SFT model (rft, pre_rft)


@dataclass(frozen=True)
class Plan:
    run_dir: Path
    suffix: str
    tasks: str | None
    trajectories: Path | None  # None: the sample stage draws them
    stages: tuple[Stage, ...]
    overrides: tuple[str, ...] = ()
    solutions: Path | None = None  # the teaching solutions (teach and pre_rft run)


def plan(
    run_dir: Path,
    model: str,
    trajectories: Path | None = None,
    tasks: str | None = None,
    suffix: str = "_1gpu",
    overrides: tuple[str, ...] = (),
    solutions: Path | None = None,
) -> Plan:
    models = run_dir / "models"
    warm, rft, critic = models / "warmup_actor", models / "rft_actor", models / "value_critic"
    stages = []
    if solutions is not None:
        taught = models / "taught_actor"
        stages += [Stage("teach", model, None, None, None)]
        stages += [Stage("pre_rft", model, None, taught, "rft")]
        model = str(taught)
    stages.append(Stage("warmup", model, None, warm, "actor"))
    if trajectories is None:
        stages.append(Stage("sample", str(warm), None, None, None))
    stages += [
        Stage("rft", str(warm), None, rft, "rft"),
        Stage("value", str(rft), None, critic, "critic"),
        Stage("ppo", str(rft), str(critic), models / "ppo_actor", "actor"),
    ]
    return Plan(run_dir, suffix, tasks, trajectories, tuple(stages), tuple(overrides), solutions)


def config_name(p: Plan, stage: Stage) -> str:
    return config_stem(stage.name) + p.suffix


def train_command(p: Plan, stage: Stage, dry_run: bool = False) -> list[str]:
    model, critic = (p.stages[0].model, None) if dry_run else (stage.model, stage.critic)
    command = [sys.executable, "-m", "cuda_agent", "train", stage.name]
    command += ["--config", config_name(p, stage), "--run-dir", str(p.run_dir)]
    if stage.name != "teach":
        command += ["--model", model]
    if critic:
        command += ["--critic", critic]
    if stage.name in ("teach", "warmup", "sample", "ppo") and p.tasks:
        command += ["--tasks", p.tasks]
    if stage.name == "teach":
        command += ["--solutions", str(p.solutions)]
    if stage.name in ("rft", "value") and p.trajectories is not None:
        command += ["--trajectories", str(p.trajectories)]
    if dry_run:
        command.append("--dry-run")
    if stage.name in EPISODE_STAGES:
        return command
    if stage.name in PPO_STAGES:  # Ray's workers get the variables from veRL's runtime env too
        env = "+ray_kwargs.ray_init.runtime_env.env_vars"
        command += [f"{env}.{key}={value}" for key, value in stage_variables(p, stage).items()]
    return command + list(p.overrides)


def checkpoint_dir(p: Plan, stage: Stage) -> Path:
    """The stage's last checkpoint (global_step_N with the largest N), the role's shard folder."""
    root = p.run_dir / "checkpoints" / stage.name
    steps = sorted(root.glob("global_step_*"), key=lambda d: int(d.name.rsplit("_", 1)[1]))
    if not steps:
        raise UserError(f"stage {stage.name} left no checkpoint in {root}")
    return steps[-1] if stage.role == "rft" else steps[-1] / stage.role


def merge_command(stage: Stage, shards: Path | str) -> list[str]:
    command = [sys.executable, "-m", MERGER, "merge", "--backend", "fsdp"]
    if stage.role == "critic":
        command.append("--is-value-model")
    return command + ["--local_dir", str(shards), "--target_dir", str(stage.merged)]


def stage_variables(p: Plan, stage: Stage) -> dict[str, str]:
    return {
        "VERL_USE_EXTERNAL_MODULES": EXTERNAL_MODULES,
        "VERL_FILE_LOGGER_PATH": str(metrics_file(metrics_dir(p), stage.name).resolve()),
    }


def stage_env(p: Plan, stage: Stage) -> dict[str, str]:
    return {**os.environ, **stage_variables(p, stage)}


def metrics_dir(p: Plan) -> Path:
    return p.run_dir / "metrics"


def log_file(p: Plan, stage: Stage) -> Path:
    return p.run_dir / "logs" / f"{stage.name}.log"


def run(p: Plan, dry_run: bool = False, log=None) -> list[dict]:
    """Run (or with dry_run check) the stages in order; returns the records of this call."""
    log = log or (lambda line: print(line, flush=True))  # before the stages' own output
    record_file = p.run_dir / "pipeline.jsonl"
    done = set()
    if record_file.is_file():
        done = {json.loads(line)["stage"] for line in record_file.read_text().splitlines()}
    records = []
    for folder in ("metrics", "logs"):
        (p.run_dir / folder).mkdir(parents=True, exist_ok=True)
    for stage in p.stages:
        if dry_run:
            log(shlex.join(train_command(p, stage)))
            if stage.role is not None:
                last = f"RUN/checkpoints/{stage.name}/global_step_LAST"
                log(shlex.join(merge_command(stage, last)))
            code = subprocess.call(train_command(p, stage, dry_run=True), env=stage_env(p, stage))
            if code != 0:
                raise UserError(f"stage {stage.name}: its dry run failed (exit {code})")
            continue
        if stage.name in done:
            log(f"stage {stage.name}: done before ({record_file})")
            continue
        log(f"stage {stage.name}: log in {log_file(p, stage)}")
        kept = keep_earlier_attempt(metrics_dir(p), stage.name)
        if kept is not None:
            log(f"stage {stage.name}: resuming; the cut attempt's metrics are in {kept}")
        started = time.monotonic()
        with PeakGpuMemory() as memory, log_file(p, stage).open("a") as out:
            out.write(f"{ATTEMPT_HEADER} {time.strftime('%Y-%m-%dT%H:%M:%S%z')}\n")
            code = _call(train_command(p, stage), p, stage, out)
            if code == 0 and stage.role is not None:
                code = _call(merge_command(stage, checkpoint_dir(p, stage)), p, stage, out)
        episodes = stage.name in EPISODE_STAGES
        record = {
            "stage": stage.name,
            "returncode": code,
            "wall_s": round(time.monotonic() - started, 1),
            "peak_gpu_memory_mib": memory.peak_mib,
            "model": None if stage.name == "teach" else stage.model,
            "critic": stage.critic,
            "merged": None if stage.merged is None else str(stage.merged),
            "metrics": None if episodes else str(metrics_file(metrics_dir(p), stage.name)),
            "attempts": _attempts(p, stage),
            "log": str(log_file(p, stage)),
        }
        if episodes and code == 0:
            record["episodes"] = episode_summary(p.run_dir / stage.name / "episodes.jsonl")
        records.append(record)
        if code != 0:
            raise UserError(
                f"stage {stage.name} failed (exit {code}, log {log_file(p, stage)}); "
                "rerun to resume from it"
            )
        with record_file.open("a") as out:
            out.write(json.dumps(record) + "\n")
            out.flush()
    return records


def episode_summary(lines: Path) -> dict:
    """An episode stage's episodes as its episodes.jsonl records them: how many, their model
    turns, their rewards (the environment's verdicts on each episode's answer)."""
    rows = [json.loads(line) for line in lines.read_text().splitlines()] if lines.is_file() else []
    turns = [row["turns"] for row in rows]
    return {
        "count": len(rows),
        "mean_turns": round(sum(turns) / len(turns), 2) if turns else None,
        "rewards": [row["reward"] for row in rows],
        "reasons": sorted({row["reason"] for row in rows}),
    }


def _attempts(p: Plan, stage: Stage) -> int:
    lines = log_file(p, stage).read_text(errors="replace").splitlines()
    return sum(line.startswith(ATTEMPT_HEADER) for line in lines)


def _call(command: list[str], p: Plan, stage: Stage, out) -> int:
    out.write(f"$ {shlex.join(command)}\n")
    out.flush()
    if module_of(command) == MERGER:
        # here, not in a new interpreter: after the first merge veRL is imported, and a merge of
        # a small model takes a second, not the 10 s of another start-up
        import cuda_agent.rl.worker_plugins  # noqa: F401  what VERL_USE_EXTERNAL_MODULES loads

        with output_to(out):
            return run_module_command(command)
    return subprocess.call(command, env=stage_env(p, stage), stdout=out, stderr=subprocess.STDOUT)
