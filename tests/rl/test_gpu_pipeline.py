"""The whole recipe on one GPU (cuda_agent.rl.pipeline with the *_1gpu configs), each stage from
the previous stage's merged model, on a teachable tiny random model and three built-in tasks:

- teach: the honest fixture solutions of the three tasks replayed through the agent's loop, each
  built, verified and profiled by the kernel environment on this GPU;
- pre_rft: veRL's SFT trainer on those episodes until the model writes them token for token;
- warmup: one single-turn PPO step scored by the kernel environment;
- sample: the warm policy served by the `hf` server, its own episodes played by the agent loop
  and judged by the environment;
- rft and value: on the sampled episodes (RFT's reward rule keeps the rewarded ones), the value
  stage moving only the critic;
- ppo: two multi-turn agentic PPO steps on the hf rollout, each with an episode of several model
  turns that the environment built, verified and rewarded.

The run folder goes to $CUDA_AGENT_RL_RUN when set (the GPU suite keeps it: pipeline.jsonl with
each stage's wall time, peak GPU memory and its episodes' turns and rewards, logs/, metrics/),
else to a temporary folder; a rerun on the same folder resumes after the recorded stages."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from cuda_agent.rl.stage_metrics import stage_steps
from cuda_agent.task import BUILTIN_DIR
from tests.rl.extras import VERL_MISSING

pytest.importorskip("verl", reason=VERL_MISSING)
REPO = Path(__file__).resolve().parents[2]
SOLUTIONS = REPO / "tests" / "fixtures" / "solutions"
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


TAUGHT = ("elementwise_chain", "row_sum_squares", "rmsnorm")  # the shortest honest fixtures
ORDER = ["teach", "pre_rft", "warmup", "sample", "rft", "value", "ppo"]


def records(run: Path) -> dict[str, dict]:
    lines = (run / "pipeline.jsonl").read_text().splitlines()
    return {r["stage"]: r for r in map(json.loads, lines)}


@pytest.fixture(scope="module")
def run(tmp_path_factory, teachable_model):
    tmp = tmp_path_factory.mktemp("pipeline")
    run = Path(os.environ.get("CUDA_AGENT_RL_RUN") or tmp / "run")
    tasks = tmp / "tasks"
    tasks.mkdir()
    for name in TAUGHT:
        (tasks / f"{name}.py").write_text((BUILTIN_DIR / f"{name}.py").read_text())
    out = subprocess.run(
        [
            sys.executable, "-m", "cuda_agent", "train", "all", "--run-dir", str(run),
            "--model", str(teachable_model), "--solutions", str(SOLUTIONS),
            "--tasks", str(tasks),
        ],
        capture_output=True, text=True, cwd=REPO, timeout=3000,
    )  # fmt: skip
    run.mkdir(parents=True, exist_ok=True)
    (run / "pipeline.log").write_text(out.stdout + out.stderr)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-4000:]
    return run


@pytest.mark.gpu
def test_the_stages_run_in_order_each_from_the_last_merged_model(run):
    done = records(run)
    assert list(done) == ORDER
    assert all(r["returncode"] == 0 and r["peak_gpu_memory_mib"] for r in done.values())
    for name in ("taught_actor", "warmup_actor", "rft_actor", "value_critic", "ppo_actor"):
        assert (run / "models" / name / "config.json").is_file()
    assert done["warmup"]["model"] == str(run / "models" / "taught_actor")
    assert done["sample"]["model"] == str(run / "models" / "warmup_actor")
    assert done["ppo"]["critic"] == str(run / "models" / "value_critic")


@pytest.mark.gpu
def test_the_teaching_episodes_are_the_environments_verdicts_on_honest_solutions(run):
    taught = records(run)["teach"]["episodes"]
    assert taught["count"] == len(TAUGHT) and taught["reasons"] == ["submitted"]
    assert min(taught["rewards"]) >= 1 and taught["mean_turns"] == 5


@pytest.mark.gpu
def test_pre_rft_teaches_the_episodes_by_heart(run):
    losses = [s["train/loss"] for s in steps(run, "pre_rft") if "train/loss" in s]
    assert len(losses) >= 300 and falls(losses), losses[:3] + losses[-3:]


@pytest.mark.gpu
def test_the_taught_policy_samples_episodes_that_the_environment_rewards(run):
    sampled = records(run)["sample"]["episodes"]
    assert sampled["count"] == 2 * len(TAUGHT)
    assert max(sampled["rewards"]) > -1 and sampled["mean_turns"] >= 3, sampled
    kept = json.loads((run / "data" / "rft_filter.json").read_text())
    assert kept["kept"] >= 1  # RFT trained on sampled episodes the environment rewarded


@pytest.mark.gpu
def test_warmup_step_is_scored_by_the_environment(run):
    (step,) = steps(run, "warmup")
    assert -1.0 <= step["critic/score/mean"] <= 3.0
    assert "actor/pg_loss" in step and "critic/vf_loss" in step


@pytest.mark.gpu
def test_rft_trains_on_the_sampled_episodes(run):
    losses = [s["train/loss"] for s in steps(run, "rft") if "train/loss" in s]
    assert losses and all(loss >= 0 for loss in losses), losses


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
        # veRL counts the prompt and each model turn with its tools' reply: 1 + 2 x turns
        assert (step["num_turns/mean"] - 1) / 2 >= 3, step["num_turns/mean"]
        assert step["critic/score/max"] > -1  # an episode the environment built and rewarded
    log = (run / "logs" / "ppo.log").read_text()
    digests = re.findall(r"hf rollout: weight update \d+, \d+ tensors, digest (\S+)", log)
    assert len(set(digests)) >= 2, digests  # the actor's new weights reached the rollout
