"""The four trainable stages in order on one GPU (cuda_agent.rl.pipeline with the *_1gpu configs),
each from the previous stage's merged model, on the tiny random model:

- warmup: one single-turn PPO step scored by the kernel environment;
- rft: veRL's SFT trainer on 8 episodes for 20 steps, its loss falling, the checkpoint merged;
- value: critic-only steps on the same episodes, the value loss falling, the actor never updated;
- ppo: two multi-turn agentic PPO steps on the hf rollout, actor and critic updated, the
  rollout's weights changed between the steps, the step's metrics recorded.

The run folder goes to $CUDA_AGENT_RL_RUN when set (the GPU suite keeps it: pipeline.jsonl with
each stage's wall time and peak GPU memory, logs/, metrics/), else to a temporary folder."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from cuda_agent.rl.stage_metrics import stage_steps
from tests.rl.extras import VERL_MISSING
from tests.rl.test_pipeline import episodes

pytest.importorskip("verl", reason=VERL_MISSING)
REPO = Path(__file__).resolve().parents[2]
PPO_METRICS = (
    "actor/pg_loss",
    "actor/pg_clipfrac",
    "actor/ppo_kl",
    "critic/vf_loss",
    "critic/score/mean",
    "critic/advantages/mean",
    "response_length/mean",
    "timing_s/gen",
    "timing_s/step",
)


def steps(run: Path, stage: str) -> list[dict]:
    return stage_steps(run / "metrics", stage)  # every attempt's, where a stage was cut and resumed


def falls(values: list[float]) -> bool:
    head, tail = values[:3], values[-3:]
    return sum(tail) / len(tail) < sum(head) / len(head)


@pytest.fixture(scope="module")
def run(tmp_path_factory, tiny_model):
    tmp = tmp_path_factory.mktemp("pipeline")
    run = Path(os.environ.get("CUDA_AGENT_RL_RUN") or tmp / "run")
    out = subprocess.run(
        [
            sys.executable, "-m", "cuda_agent", "train", "all", "--run-dir", str(run),
            "--model", str(tiny_model), "--trajectories", str(episodes(tmp / "episodes")),
            "--tasks", "builtin",
        ],
        capture_output=True, text=True, cwd=REPO, timeout=3000,
    )  # fmt: skip
    run.mkdir(parents=True, exist_ok=True)
    (run / "pipeline.log").write_text(out.stdout + out.stderr)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-4000:]
    return run


@pytest.mark.gpu
def test_the_stages_run_in_order_each_from_the_last_merged_model(run):
    records = [json.loads(line) for line in (run / "pipeline.jsonl").read_text().splitlines()]
    assert [r["stage"] for r in records] == ["warmup", "rft", "value", "ppo"]
    assert all(r["returncode"] == 0 and r["peak_gpu_memory_mib"] for r in records)
    for name in ("warmup_actor", "rft_actor", "value_critic", "ppo_actor"):
        assert (run / "models" / name / "config.json").is_file()
    assert records[1]["model"] == str(run / "models" / "warmup_actor")
    assert records[3]["critic"] == str(run / "models" / "value_critic")


@pytest.mark.gpu
def test_warmup_step_is_scored_by_the_environment(run):
    (step,) = steps(run, "warmup")
    assert -1.0 <= step["critic/score/mean"] <= 3.0
    assert "actor/pg_loss" in step and "critic/vf_loss" in step


@pytest.mark.gpu
def test_rft_loss_falls_over_twenty_steps(run):
    losses = [s["train/loss"] for s in steps(run, "rft") if "train/loss" in s]
    assert len(losses) >= 20
    assert falls(losses), losses


@pytest.mark.gpu
def test_value_pretraining_moves_only_the_critic(run):
    metrics = steps(run, "value")
    losses = [s["critic/vf_loss"] for s in metrics]
    assert len(losses) >= 4 and falls(losses), losses
    assert not any("actor/pg_loss" in s for s in metrics)  # the actor was never updated


@pytest.mark.gpu
def test_two_ppo_steps_update_actor_critic_and_the_rollout_weights(run):
    metrics = steps(run, "ppo")
    assert len(metrics) == 2
    for step in metrics:
        assert all(key in step for key in PPO_METRICS), sorted(step)
    log = (run / "logs" / "ppo.log").read_text()
    digests = re.findall(r"hf rollout: weight update \d+, \d+ tensors, digest (\S+)", log)
    assert len(set(digests)) >= 2, digests  # the actor's new weights reached the rollout
