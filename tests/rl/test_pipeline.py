"""The stages in order (cuda_agent.rl.pipeline) on CPU: the commands, the model each stage starts
from, and every stage's `cuda-agent train --dry-run` (configs composed and validated against
veRL's, data prepared) on the one-GPU configs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cuda_agent.errors import UserError
from cuda_agent.rl.pipeline import (
    checkpoint_dir,
    episode_summary,
    merge_command,
    plan,
    train_command,
)
from tests.rl.extras import VERL_MISSING
from tests.rl.trajectories import Call, Turn, write_trajectory

REPO = Path(__file__).resolve().parents[2]


def episodes(folder: Path, n: int = 8) -> Path:
    turns = [
        Turn("Look.", [Call("read_file", {"path": "model.py"}, "class Model")]),
        Turn("Done.", [Call("submit", {}, "submitted; the episode ends")]),
    ]
    for i in range(n):
        write_trajectory(folder / f"{i}.jsonl", turns, 2)
    return folder


def test_each_stage_starts_from_the_previous_stages_merged_model(tmp_path):
    p = plan(tmp_path / "run", "base", tmp_path / "episodes", tasks="builtin")
    commands = {s.name: train_command(p, s) for s in p.stages}
    assert list(commands) == ["warmup", "rft", "value", "ppo"]
    models = tmp_path / "run" / "models"

    def option(command, name):
        return command[command.index(name) + 1] if name in command else None

    assert option(commands["warmup"], "--model") == "base"
    assert option(commands["rft"], "--model") == str(models / "warmup_actor")
    assert option(commands["value"], "--model") == str(models / "rft_actor")
    assert option(commands["ppo"], "--model") == str(models / "rft_actor")
    assert option(commands["ppo"], "--critic") == str(models / "value_critic")
    assert option(commands["ppo"], "--config") == "ppo_1gpu"
    assert option(commands["rft"], "--trajectories") == str(tmp_path / "episodes")
    backend = "+ray_kwargs.ray_init.runtime_env.env_vars.VERL_USE_EXTERNAL_MODULES="
    assert all(f"{backend}cuda_agent.rl.worker_plugins" in commands[s] for s in ("warmup", "ppo"))
    metrics = "+ray_kwargs.ray_init.runtime_env.env_vars.VERL_FILE_LOGGER_PATH="
    assert f"{metrics}{tmp_path / 'run' / 'metrics' / 'value.jsonl'}" in commands["value"]
    merges = {s.name: merge_command(s, "SHARDS") for s in p.stages}
    assert "--is-value-model" in merges["value"]
    assert option(merges["value"], "--target_dir") == str(models / "value_critic")
    assert "--is-value-model" not in merges["ppo"]


def test_teaching_and_sampling_come_before_the_stages_that_train_on_their_episodes(tmp_path):
    run, models = tmp_path / "run", tmp_path / "run" / "models"
    p = plan(run, "base", tasks="builtin", solutions=tmp_path / "solutions")
    commands = {s.name: train_command(p, s) for s in p.stages}
    assert list(commands) == ["teach", "pre_rft", "warmup", "sample", "rft", "value", "ppo"]

    def option(command, name):
        return command[command.index(name) + 1] if name in command else None

    assert option(commands["teach"], "--solutions") == str(tmp_path / "solutions")
    assert option(commands["teach"], "--model") is None
    assert option(commands["teach"], "--config") == "sample_1gpu"
    assert option(commands["pre_rft"], "--model") == "base"
    assert option(commands["pre_rft"], "--config") == "pre_rft_1gpu"
    assert option(commands["warmup"], "--model") == str(models / "taught_actor")
    assert option(commands["sample"], "--model") == str(models / "warmup_actor")
    assert option(commands["sample"], "--tasks") == "builtin"
    assert option(commands["rft"], "--model") == str(models / "warmup_actor")
    assert all(option(commands[s], "--trajectories") is None for s in ("pre_rft", "rft", "value"))
    assert not any(
        part.startswith("+ray_kwargs") for s in ("teach", "sample") for part in commands[s]
    )
    assert [s.name for s in p.stages if s.merged is None] == ["teach", "sample"]
    assert "--is-value-model" not in merge_command(p.stages[1], "SHARDS")


def test_an_episode_stage_is_summed_up_from_its_records(tmp_path):
    lines = tmp_path / "episodes.jsonl"
    rows = [
        {"task": "a", "turns": 5, "reward": 2, "reason": "submitted"},
        {"task": "b", "turns": 2, "reward": -1, "reason": "turn_budget"},
    ]
    lines.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert episode_summary(lines) == {
        "count": 2, "mean_turns": 3.5, "rewards": [2, -1], "reasons": ["submitted", "turn_budget"],
    }  # fmt: skip


def test_the_last_checkpoint_is_merged_and_a_missing_one_is_an_error(tmp_path):
    p = plan(tmp_path, "base", tmp_path / "episodes")
    warmup, rft = p.stages[0], p.stages[1]
    with pytest.raises(UserError, match="left no checkpoint"):
        checkpoint_dir(p, warmup)
    for step in (2, 10, 9):
        (tmp_path / "checkpoints" / "warmup" / f"global_step_{step}" / "actor").mkdir(parents=True)
        (tmp_path / "checkpoints" / "rft" / f"global_step_{step}").mkdir(parents=True)
    assert checkpoint_dir(p, warmup) == tmp_path / "checkpoints/warmup/global_step_10/actor"
    assert checkpoint_dir(p, rft) == tmp_path / "checkpoints/rft/global_step_10"


def test_dry_run_checks_every_one_gpu_stage(tmp_path, tiny_model):
    """Teaching from the honest fixtures, then sampling: the stages that train on episodes
    not drawn yet are checked with their datasets' paths."""
    pytest.importorskip("verl", reason=VERL_MISSING)
    run = tmp_path / "run"
    out = subprocess.run(
        [
            sys.executable, "-m", "cuda_agent", "train", "all", "--run-dir", str(run),
            "--model", str(tiny_model), "--solutions", str(REPO / "tests/fixtures/solutions"),
            "--tasks", "builtin", "--dry-run",
        ],
        capture_output=True, text=True, cwd=REPO, timeout=900,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    printed = [line for line in out.stdout.splitlines() if "-m cuda_agent train" in line]
    stages = ["teach", "pre_rft", "warmup", "sample", "rft", "value", "ppo"]
    assert [line.split()[4] for line in printed] == stages
    assert out.stdout.count("-m verl.model_merger merge") == 5
    assert "stage teach: 10 episodes" in out.stdout  # the built-in tasks with a fixture
    assert out.stdout.count("yet: the stage before this one writes them") == 3
    assert "-m cuda_agent.rl.hf_server --model" in out.stdout  # sample's server
    composed = out.stdout.count("verl.trainer.main_ppo")
    assert composed == 3 and out.stdout.count("verl.trainer.sft_trainer") == 2
    for name in ("warmup_train", "ppo_train"):
        assert (run / "data" / f"{name}.parquet").is_file()
    assert not (run / "pipeline.jsonl").exists()  # a dry run finishes no stage


def test_given_trajectories_take_the_place_of_sampling(tmp_path):
    p = plan(tmp_path, "base", episodes(tmp_path / "episodes"), tasks="builtin")
    assert [s.name for s in p.stages] == ["warmup", "rft", "value", "ppo"]
    rft = train_command(p, p.stages[1])
    assert rft[rft.index("--trajectories") + 1] == str(tmp_path / "episodes")


def test_a_rerun_skips_the_recorded_stages(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    done = [{"stage": s} for s in ("warmup", "rft", "value", "ppo")]
    (run / "pipeline.jsonl").write_text("".join(json.dumps(d) + "\n" for d in done))
    out = subprocess.run(
        [
            sys.executable, "-m", "cuda_agent", "train", "all", "--run-dir", str(run),
            "--model", "base", "--trajectories", str(tmp_path),
        ],
        capture_output=True, text=True, cwd=REPO, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("done before") == 4


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--trajectories", "eps"], "missing --model"),
        (["--model", "base", "--solutions", "nowhere"], "--solutions nowhere: no such folder"),
        (["--model", "base", "--trajectories", "eps", "--suffix", "_8gpu"], "no such file"),
        (["--model", "base", "--trajectories", "eps", "--config", "ppo"], "drop --config"),
        (["--model", "base", "--trajectories", "eps", "--critic", "c"], "drop --critic"),
    ],
)
def test_all_stages_refuse_bad_input_in_one_line(tmp_path, args, said):
    out = subprocess.run(
        [sys.executable, "-m", "cuda_agent", "train", "all", "--run-dir", str(tmp_path), *args],
        capture_output=True, text=True, cwd=REPO, timeout=120,
    )  # fmt: skip
    assert out.returncode != 0
    assert said in out.stderr and "Traceback" not in out.stderr, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr


# A stand-in trainer that behaves as veRL's does across a cut: it resumes after its last
# checkpoint (every second step), opens the metrics file for writing, and is killed at step 3 the
# first time it runs.
_CUT_TRAINER = """
import json, os, pathlib, sys
state = pathlib.Path(sys.argv[1])
saved = int(state.read_text()) if state.exists() else 0
attempt = 2 if state.exists() else 1
print(f"attempt {attempt} resumes after step {saved}", flush=True)
with open(os.environ["VERL_FILE_LOGGER_PATH"], "wb") as out:
    for step in range(saved + 1, 6):
        line = {"step": step, "data": {"loss": step + attempt / 10}}
        out.write(json.dumps(line).encode() + b"\\n")
        if step % 2 == 0:
            state.write_text(str(step))
        if attempt == 1 and step == 3:
            sys.exit(137)
"""


def test_a_cut_stage_resumes_and_keeps_the_metrics_of_every_step(tmp_path, monkeypatch):
    from cuda_agent.rl import pipeline
    from cuda_agent.rl.stage_metrics import stage_steps

    state = tmp_path / "checkpoint_step"
    monkeypatch.setattr(
        pipeline, "train_command", lambda p, s: [sys.executable, "-c", _CUT_TRAINER, str(state)]
    )
    monkeypatch.setattr(pipeline, "merge_command", lambda s, d: [sys.executable, "-c", "pass"])
    monkeypatch.setattr(pipeline, "checkpoint_dir", lambda p, s: tmp_path)
    full = plan(tmp_path / "run", "base", tmp_path / "episodes")
    p = pipeline.Plan(full.run_dir, full.suffix, None, full.trajectories, full.stages[:1])
    with pytest.raises(UserError, match="rerun to resume"):
        pipeline.run(p, log=lambda line: None)
    said: list[str] = []
    [record] = pipeline.run(p, log=said.append)
    assert record["returncode"] == 0 and record["attempts"] == 2
    assert any("resuming" in line for line in said), said
    # steps 1-2 from the cut attempt, 3 (run again after the step-2 checkpoint) to 5 from the rerun
    losses = [s["loss"] for s in stage_steps(p.run_dir / "metrics", "warmup")]
    assert losses == [1.1, 2.1, 3.2, 4.2, 5.2]
    log = (p.run_dir / "logs" / "warmup.log").read_text()
    assert "attempt 1 resumes after step 0" in log and "attempt 2 resumes after step 2" in log


def test_a_merge_runs_in_this_process_and_writes_to_the_stage_log(tmp_path):
    from cuda_agent.rl import pipeline

    p = plan(tmp_path / "run", "base", tmp_path / "episodes")
    value = p.stages[2]
    log = tmp_path / "value.log"
    with log.open("a") as out:
        code = pipeline._call(merge_command(value, tmp_path / "no_shards"), p, value, out)
    text = log.read_text()
    assert code == 1, text
    assert text.startswith("$ ") and "-m verl.model_merger merge" in text.splitlines()[0]
    assert "Traceback" in text and "no_shards" in text  # veRL's own failure, in the log
    assert "verl.model_merger" in sys.modules or "verl.model_merger.__main__" in sys.modules
