"""Training stages that veRL only runs on GPUs, on the tiny model: RFT through veRL's SFT trainer
(its process group is NCCL, so not on CPU) and one multi-turn PPO step with vLLM rollouts and the
real kernel environment. Run on a GPU host with veRL (and vLLM for the PPO step) installed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from cuda_agent.rl import CONFIG_DIR
from cuda_agent.task import BUILTIN_DIR
from tests.rl.extras import VERL_MISSING
from tests.rl.trajectories import Call, Turn, write_trajectory

pytest.importorskip("verl", reason=VERL_MISSING)
REPO = Path(__file__).resolve().parents[2]
ONE_GPU = ["trainer.nnodes=1", "trainer.n_gpus_per_node=1", "trainer.logger=[console]"]
SDPA = "+model.override_config.attn_implementation=sdpa"


def train(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "cuda_agent", "train", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=1800,
    )


@pytest.mark.gpu
def test_rft_trains_with_veRLs_sft_trainer(tmp_path, tiny_model):
    turns = [
        Turn("Look.", [Call("read_file", {"path": "model.py"}, "class Model")]),
        Turn("Done.", [Call("submit", {}, "submitted; the episode ends")]),
    ]
    for i in range(4):
        write_trajectory(tmp_path / "episodes" / f"{i}.jsonl", turns, 3)
    out = train(
        "rft", "--config", "rft_small", "--model", str(tiny_model), "--run-dir", str(tmp_path),
        "--trajectories", str(tmp_path / "episodes"), *ONE_GPU, SDPA,
        "data.train_batch_size=2", "data.max_length=8192", "data.max_token_len_per_gpu=8192",
        "engine.ulysses_sequence_parallel_size=1", "model.use_remove_padding=false",
        "trainer.total_epochs=1", "trainer.save_freq=-1",
    )  # fmt: skip
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-4000:]
    assert "kept 4 of 4 trajectories" in out.stdout


@pytest.mark.gpu
def test_one_multi_turn_ppo_step_with_vllm_and_the_environment(tmp_path, tiny_model):
    pytest.importorskip("vllm")
    registry = yaml.safe_load((CONFIG_DIR / "agent_loops.yaml").read_text())
    registry[0].update(
        max_turns=2, max_tokens_per_turn=256, trajectory_dir=str(tmp_path / "rollouts")
    )
    (tmp_path / "agent_loops.yaml").write_text(yaml.safe_dump(registry))
    (tmp_path / "tasks").mkdir()
    for name in ("rmsnorm", "scaled_softmax"):
        (tmp_path / "tasks" / f"{name}.py").write_text((BUILTIN_DIR / f"{name}.py").read_text())
    actor, rollout = "actor_rollout_ref.actor", "actor_rollout_ref.rollout"
    out = train(
        "ppo", "--config", "ppo_small", "--model", str(tiny_model), "--run-dir", str(tmp_path),
        "--tasks", str(tmp_path / "tasks"), "--agent-loops", str(tmp_path / "agent_loops.yaml"),
        *ONE_GPU, "data.train_batch_size=1", "data.max_prompt_length=8192",
        "data.max_response_length=1024", f"{actor}.ppo_mini_batch_size=1",
        "critic.ppo_mini_batch_size=1", f"{actor}.ulysses_sequence_parallel_size=1",
        "actor_rollout_ref.ref.ulysses_sequence_parallel_size=1",
        "critic.ulysses_sequence_parallel_size=1", f"{rollout}.tensor_model_parallel_size=1",
        f"{rollout}.gpu_memory_utilization=0.3", f"{rollout}.max_model_len=9216",
        f"{rollout}.agent.num_workers=1", "reward.num_workers=1",
        "trainer.total_training_steps=1", "trainer.save_freq=-1", "trainer.test_freq=-1",
        "trainer.val_before_train=false",
        "+actor_rollout_ref.model.override_config.attn_implementation=sdpa",
        "+critic.model.override_config.attn_implementation=sdpa",
    )  # fmt: skip
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-4000:]
    assert list((tmp_path / "rollouts").glob("*.jsonl"))  # the episodes ran in the agent loop
