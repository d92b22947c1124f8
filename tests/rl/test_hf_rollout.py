"""`rollout.name=hf` through veRL on CPU: registered in a fresh process by
VERL_USE_EXTERNAL_MODULES, serving veRL's AgentLoopWorker (LLMServerClient and its load balancer
in front of the HFServer Ray actor) with the exact log-probabilities of the tokens in the
trainer's batch, and taking the actor's weights through the adapter veRL's weight sync calls."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.rl.extras import RAY_MISSING, VERL_MISSING, worker_pythonpath

pytest.importorskip("ray", reason=RAY_MISSING)
pytest.importorskip("verl", reason=VERL_MISSING)
import ray
from transformers import AutoModelForCausalLM
from verl.workers.rollout.replica import get_rollout_replica_class
from verl.workers.rollout.router import get_router_handle

from cuda_agent.rl import write_rl_dataset
from cuda_agent.rl.hf_rollout import HFServerAdapter, server_name
from cuda_agent.task import load_task
from tests.rl.scripts import STUCK, SUCCESS
from tests.rl.test_verl_loop import run_worker, stage_config

LOOKUP = (
    "import verl\n"
    "from verl.workers.rollout.base import get_rollout_class\n"
    "from verl.workers.rollout.replica import get_rollout_replica_class\n"
    "print(get_rollout_replica_class('hf').__name__, get_rollout_class('hf', 'async').__name__)\n"
)


def lookup(env_extra: dict) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "VERL_USE_EXTERNAL_MODULES"}
    env.update(PYTHONPATH=worker_pythonpath(), **env_extra)
    return subprocess.run(
        [sys.executable, "-c", LOOKUP], capture_output=True, text=True, env=env, timeout=300
    )


def test_veRL_finds_the_backend_only_through_its_external_modules_variable():
    found = lookup({"VERL_USE_EXTERNAL_MODULES": "cuda_agent.rl.worker_plugins"})
    assert found.returncode == 0, found.stderr[-2000:]
    assert found.stdout.split() == ["HFReplica", "HFServerAdapter"]
    missing = lookup({})
    assert missing.returncode != 0 and "Unknown rollout mode: hf" in missing.stderr


@pytest.fixture(scope="module")
def cluster():
    ray.init(
        num_cpus=4,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": {"PYTHONPATH": worker_pythonpath()}},
    )
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def server(cluster, tiny_model, tmp_path_factory):
    """The server as veRL's LLMServerManager starts it: the replica class the registry returns
    for `hf`, given the stage's rollout and model configs (no workers: it serves on the CPU)."""
    tmp = tmp_path_factory.mktemp("replica")
    # float32, so that the test's own float32 forward pass is the reference
    dtype = "actor_rollout_ref.rollout.dtype=float32"
    cfg = stage_config("ppo_1gpu", tiny_model, tmp, tmp / "evaluations.jsonl", dtype)
    replica = get_rollout_replica_class("hf")(
        replica_rank=0,
        config=cfg.actor_rollout_ref.rollout,
        model_config=cfg.actor_rollout_ref.model,
        gpus_per_node=1,
    )
    asyncio.run(replica.launch_servers())
    assert replica.server_address == server_name(0)
    return replica.server_handle


def fresh_log_probs(tiny_model: Path, ids: torch.Tensor, attention: torch.Tensor, n: int):
    """log_softmax of a fresh forward pass at each of the last `n` tokens (veRL's layout)."""
    model = AutoModelForCausalLM.from_pretrained(tiny_model).eval()
    with torch.no_grad():
        logits = model(input_ids=ids, attention_mask=attention).logits.float()
    logp = torch.log_softmax(logits[:, -n - 1 : -1], dim=-1)
    return torch.gather(logp, 2, ids[:, -n:, None])[..., 0]


def test_agent_loop_batch_carries_the_models_exact_log_probs(
    server, tiny_model, tokenizer, tmp_path
):
    cfg = stage_config(
        "ppo_small",
        tiny_model,
        tmp_path,
        tmp_path / "evaluations.jsonl",
        "data.max_response_length=256",
        "actor_rollout_ref.rollout.calculate_log_probs=true",
    )
    tasks = [load_task(name) for name in (SUCCESS, STUCK)]
    parquet = write_rl_dataset(tasks, tmp_path / "train.parquet", "multi_turn")
    router = get_router_handle(servers={server_name(0): server})
    ray.get(server.set_global_steps.remote(3))
    out = run_worker(cfg, parquet, tokenizer, router)
    for versions in ("min_global_steps", "max_global_steps"):  # the trainer's metrics read them
        assert list(out.non_tensor_batch[versions]) == [3, 3]
    mask = out.batch["response_mask"].bool()
    n = mask.shape[1]
    assert mask.any(dim=1).all()  # every episode has model tokens
    expected = fresh_log_probs(tiny_model, out.batch["input_ids"], out.batch["attention_mask"], n)
    got = out.batch["rollout_log_probs"]
    torch.testing.assert_close(got[mask], expected[mask], rtol=0, atol=1e-4)


def test_the_adapter_pushes_the_actors_weights_to_the_server(
    server, tiny_model, tokenizer, tmp_path
):
    cfg = stage_config("ppo_small", tiny_model, tmp_path, tmp_path / "evaluations.jsonl")
    adapter = HFServerAdapter(
        cfg.actor_rollout_ref.rollout, cfg.actor_rollout_ref.model, device_mesh=None
    )
    prompt = tokenizer.encode("<|im_start|>user\nwrite a relu kernel<|im_end|>\n")
    params = {"temperature": 1.0, "seed": 5, "max_tokens": 32}
    ray.get(server.set_global_steps.remote(0))
    before = ray.get(server.generate.remote("a", prompt, params))
    assert before.extra_fields["global_steps"] == 0  # the version the trainer's metrics read
    digest = ray.get(server.weights_digest.remote())
    actor = AutoModelForCausalLM.from_pretrained(tiny_model)
    with torch.no_grad():  # an "updated" actor: every weight moved
        for param in actor.parameters():
            param.add_(torch.randn_like(param) * 0.5)
    asyncio.run(adapter.update_weights(iter(actor.state_dict().items()), global_steps=1))
    assert ray.get(server.status.remote()) == {"weight_updates": 1, "global_steps": 1}
    assert ray.get(server.weights_digest.remote()) != digest
    after = ray.get(server.generate.remote("b", prompt, params))
    assert after.extra_fields["global_steps"] == 1
    assert after.token_ids != before.token_ids
    ids = torch.tensor([prompt + after.token_ids])
    with torch.no_grad():
        logits = actor.eval()(input_ids=ids).logits[0, len(prompt) - 1 : -1].float()
    expected = torch.log_softmax(logits, -1)[torch.arange(len(after.token_ids)), after.token_ids]
    torch.testing.assert_close(torch.tensor(after.log_probs), expected, rtol=1e-5, atol=1e-5)
