"""A scripted policy through the PPO stage's agent loop with the real kernel environment on the GPU:
the policy writes an honest fixture solution (tests/fixtures/solutions/rmsnorm) file by file and
submits; the environment builds, verifies and profiles it (the `local_environment` evaluator
of agent_loops.yaml, unchanged), and the reward, 1 or more, sits on the last model token of the
batch veRL's AgentLoopWorker hands the trainer. A random-weight model writes no kernel, so this is
how a positive reward is shown to reach the trainer."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import yaml

from tests.rl.extras import RAY_MISSING, VERL_MISSING, worker_pythonpath

pytest.importorskip("ray", reason=RAY_MISSING)
pytest.importorskip("verl", reason=VERL_MISSING)
import ray
from verl.workers.rollout.router import get_router_handle

from cuda_agent.agent import load_trajectory
from cuda_agent.rl import CONFIG_DIR, write_rl_dataset
from cuda_agent.rl.verl_config import compose_stage
from cuda_agent.task import load_task
from tests.rl.scripted_server import CompletionsReplica, ScriptedCompletions
from tests.rl.scripts import reply
from tests.rl.test_verl_loop import run_worker

REPO = Path(__file__).resolve().parents[2]
SOLUTION = REPO / "tests" / "fixtures" / "solutions" / "rmsnorm"
FILES = ("kernels/rmsnorm.cu", "kernels/rmsnorm_binding.cpp", "model_new.py")


def script() -> list[str]:
    writes = [
        reply(
            f"I write {name}.",
            ("write_file", {"path": name, "content": (SOLUTION / name).read_text()}),
        )
        for name in FILES
    ]
    return [*writes, reply("Check it.", ("verify", {})), reply("Done.", ("submit", {}))]


@pytest.mark.gpu
def test_a_scripted_honest_episode_puts_the_environments_reward_on_the_last_model_token(
    tmp_path, tiny_model, tokenizer
):
    registry = yaml.safe_load((CONFIG_DIR / "agent_loops.yaml").read_text())
    assert registry[0]["evaluator"] == "cuda_agent.rl.evaluators:local_environment"
    registry[0].update(max_turns=8, trajectory_dir=str(tmp_path / "rollouts"))
    loops = tmp_path / "agent_loops.yaml"
    loops.write_text(yaml.safe_dump(registry))
    cfg = compose_stage(
        CONFIG_DIR / "ppo_1gpu.yaml",
        [
            f"actor_rollout_ref.model.path={tiny_model}",
            f"critic.model.path={tiny_model}",
            "data.max_response_length=16384",
            f"actor_rollout_ref.rollout.agent.agent_loop_config_path={loops}",
        ],
    )
    parquet = write_rl_dataset([load_task("rmsnorm")], tmp_path / "train.parquet", "multi_turn")
    ray.init(
        num_cpus=4,
        include_dashboard=False,
        runtime_env={"env_vars": {"PYTHONPATH": worker_pythonpath()}},
    )
    try:
        with ScriptedCompletions(tokenizer, {"rmsnorm": script()}) as server:
            router = get_router_handle(servers={server.url: CompletionsReplica.remote(server.url)})
            out = run_worker(cfg, parquet, tokenizer, router)
    finally:
        ray.shutdown()
    mask, scores = out.batch["response_mask"][0], out.batch["rm_scores"][0]
    last = int(torch.nonzero(mask)[-1])
    assert torch.nonzero(scores).flatten().tolist() == [last]
    (trajectory,) = sorted((tmp_path / "rollouts").glob("*.jsonl"))
    end = load_trajectory(trajectory).end
    assert end.reason == "submitted" and end.reward >= 1, end
    assert float(scores[last]) == float(end.reward)
