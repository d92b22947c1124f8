"""The stages of the recipe as data: what each prepares and the command that runs it.

    teach   stored solutions replayed as agent episodes (optional) solutions -> teach/trajectories/
    pre_rft RFT on the teaching episodes (sft_trainer, pre_rft.yaml) teach/ -> data/pre_rft.parquet
    warmup  single-turn PPO (veRL main_ppo, warmup.yaml)         tasks -> data/warmup_*.parquet
    sample  agent episodes from the warm policy (vLLM / SGLang)  tasks -> sample/trajectories/
    rft     rejection fine-tuning (veRL sft_trainer, rft.yaml)   trajectories -> data/rft.parquet
    value   critic pre-training on the same episodes (value.yaml) trajectories -> data/value.parquet
    ppo     multi-turn agentic PPO (veRL main_ppo, ppo.yaml)     tasks -> data/ppo_*.parquet

Everything lands under one run folder. Nothing here imports veRL: the commands are argument
lists, and `cuda-agent train` prints, checks and launches them.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from cuda_agent.errors import UserError
from cuda_agent.rl.dataset import write_rl_dataset
from cuda_agent.rl.rft import FilterReport, RFTRules, filter_trajectories, trajectory_files
from cuda_agent.rl.sft import WrittenSet, write_replay_dataset, write_sft_dataset
from cuda_agent.task import Task, load_tasks

STAGES = ("teach", "pre_rft", "warmup", "sample", "rft", "value", "ppo")
SFT_STAGES = ("pre_rft", "rft")  # veRL's SFT trainer
EPISODE_STAGES = ("teach", "sample")  # agent episodes, no veRL: they read a sample config
SEARCHPATH = "hydra.searchpath=[pkg://verl.trainer.config]"
AGENT_LOOPS = Path(__file__).parent / "configs" / "agent_loops.yaml"
VAL_EVERY = 20  # one task in 20 is held out for validation


@dataclass(frozen=True)
class TrainInputs:
    stage: str
    config: Path
    run_dir: Path
    model: str | None = None
    critic: str | None = None
    tasks: str | None = None
    trajectories: Path | None = None
    solutions: Path | None = None  # teach: one stored workspace solution per task
    agent_loops: Path = AGENT_LOOPS
    rules: RFTRules = RFTRules()
    overrides: tuple[str, ...] = ()


@dataclass(frozen=True)
class Prepared:
    """What the preparation wrote, for the command and the user."""

    files: dict[str, Path] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    report: FilterReport | None = None


def config_stem(stage: str) -> str:
    """The packaged config a stage reads, before any suffix (_1gpu, _small)."""
    return "sample" if stage in EPISODE_STAGES else stage


def data_dir(inputs: TrainInputs) -> Path:
    return inputs.run_dir / "data"


def hydra_dir(inputs: TrainInputs) -> Path:
    """Where Hydra keeps a stage's logs and composed config (.hydra/)."""
    return inputs.run_dir.resolve() / "hydra" / inputs.stage


def sample_dir(inputs: TrainInputs) -> Path:
    return inputs.run_dir / "sample"


def teach_dir(inputs: TrainInputs) -> Path:
    return inputs.run_dir / "teach"


def trajectory_source(inputs: TrainInputs) -> Path:
    """The episodes an SFT or value stage trains on: --trajectories, else the teaching episodes
    (pre_rft) or the sampled ones (rft, value) of this run."""
    if inputs.trajectories is not None:
        return inputs.trajectories
    return (teach_dir(inputs) if inputs.stage == "pre_rft" else sample_dir(inputs)) / "trajectories"


def prepare(inputs: TrainInputs, dry_run: bool = False) -> Prepared:
    """Write the stage's data under the run folder. A dry run of a stage whose episodes a
    stage before it will write (no --trajectories given, none in the run yet) checks the stage
    with the dataset's path only."""
    if inputs.stage in ("warmup", "ppo"):
        return _prepare_tasks(inputs, "single_turn" if inputs.stage == "warmup" else "multi_turn")
    if inputs.stage in (*SFT_STAGES, "value"):
        source = trajectory_source(inputs)
        if dry_run and inputs.trajectories is None and not source.exists():
            planned = data_dir(inputs) / f"{inputs.stage}.parquet"
            note = f"no episodes at {source} yet: the stage before this one writes them"
            return Prepared({"train": planned, "val": planned}, [note])
        return _prepare_trajectories(inputs, source)
    return Prepared()


def verl_overrides(inputs: TrainInputs, prepared: Prepared) -> list[str]:
    """The command-line overrides that point the stage config at this run."""
    model = _required(inputs.model, "--model", "the policy to start from (HF folder or hub id)")
    checkpoints = inputs.run_dir / "checkpoints" / inputs.stage
    if inputs.stage in SFT_STAGES:
        return [
            f"data.train_files={prepared.files['train']}",
            f"model.path={model}",
            f"trainer.default_local_dir={checkpoints}",
            *inputs.overrides,
        ]
    return [
        f"data.train_files={prepared.files['train']}",
        f"data.val_files={prepared.files['val']}",
        f"actor_rollout_ref.model.path={model}",
        f"critic.model.path={inputs.critic or model}",
        f"actor_rollout_ref.rollout.agent.agent_loop_config_path={inputs.agent_loops.resolve()}",
        f"trainer.default_local_dir={checkpoints}",
        *inputs.overrides,
    ]


def verl_command(inputs: TrainInputs, overrides: list[str], nnodes: int, nproc: int) -> list[str]:
    """The veRL launch command of a training stage (a multi-node RFT run takes its node rank and
    rendezvous host from NODE_RANK and MASTER_ADDR, run on every node)."""
    config = [
        "--config-path",
        str(inputs.config.parent.resolve()),
        "--config-name",
        inputs.config.stem,
    ]
    # Hydra writes its outputs/ folder into the current one unless told where
    overrides = [f"hydra.run.dir={hydra_dir(inputs)}", *overrides]
    if inputs.stage in SFT_STAGES:
        if nnodes == 1:
            launcher = ["torchrun", "--standalone", "--nnodes=1", f"--nproc_per_node={nproc}"]
        else:
            rank = os.environ.get("NODE_RANK", "$NODE_RANK")
            master = os.environ.get("MASTER_ADDR", "$MASTER_ADDR")
            launcher = [
                "torchrun",
                f"--nnodes={nnodes}",
                f"--nproc_per_node={nproc}",
                f"--node_rank={rank}",
                "--rdzv_backend=c10d",
                f"--rdzv_endpoint={master}:29500",
            ]
        return [*launcher, "-m", "verl.trainer.sft_trainer", *config, SEARCHPATH, *overrides]
    return [sys.executable, "-m", "verl.trainer.main_ppo", *config, SEARCHPATH, *overrides]


def split_tasks(tasks: list[Task]) -> tuple[list[Task], list[Task]]:
    """Training and validation tasks: every VAL_EVERY-th task held out (one at least)."""
    if len(tasks) == 1:
        return tasks, tasks
    val = tasks[VAL_EVERY - 1 :: VAL_EVERY] or tasks[-1:]
    held = {t.hash for t in val}
    return [t for t in tasks if t.hash not in held], val


def _prepare_tasks(inputs: TrainInputs, mode: str) -> Prepared:
    tasks = load_tasks(inputs.tasks)
    train, val = split_tasks(tasks)
    out = data_dir(inputs)
    files = {
        "train": write_rl_dataset(train, out / f"{inputs.stage}_train.parquet", mode, "train"),
        "val": write_rl_dataset(val, out / f"{inputs.stage}_val.parquet", mode, "val"),
    }
    return Prepared(files, [f"{len(train)} training and {len(val)} validation tasks"])


def _prepare_trajectories(inputs: TrainInputs, source: Path) -> Prepared:
    result = filter_trajectories(trajectory_files(source), inputs.rules)
    out = data_dir(inputs)
    out.mkdir(parents=True, exist_ok=True)
    report_path = out / f"{inputs.stage}_filter.json"
    report_path.write_text(result.report.to_json())
    write = write_sft_dataset if inputs.stage in SFT_STAGES else write_replay_dataset
    written: WrittenSet = write(result.kept, out / f"{inputs.stage}.parquet")
    files = {"train": written.path, "val": written.path, "report": report_path}
    notes = [result.report.summary()]
    if written.parallel_calls:
        notes.append(f"{written.parallel_calls} kept episodes make several calls in one reply")
    return Prepared(files, notes, result.report)


def _required(value: str | None, option: str, what: str) -> str:
    if not value:
        raise UserError(f"missing {option}: {what}")
    return value


def describe(prepared: Prepared) -> str:
    lines = [f"{name}: {path}" for name, path in prepared.files.items()] + prepared.notes
    return "\n".join(lines)
