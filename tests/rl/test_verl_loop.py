"""The agent loops run by veRL's own AgentLoopWorker on CPU.

Real veRL pieces: the stage config composed with veRL's hydra configs, RLHFDataset over our
parquet, the agent-loop registry YAML, AgentLoopWorker, LLMServerClient with veRL's global load
balancer (a Ray actor), veRL's padding and reward placement, and compute_gae_advantage_return.
Stand-ins for what CPU CI cannot have: the rollout engine (a scripted OpenAI-style completions
server on 127.0.0.1 behind a Ray actor with the replica interface) and the evaluation GPUs
(tests.rl.evaluators). Values for GAE come from a tiny random-weight critic.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from transformers import Qwen2Config, Qwen2ForTokenClassification

from tests.rl.extras import RAY_MISSING, VERL_MISSING, worker_pythonpath

pytest.importorskip("ray", reason=RAY_MISSING)
pytest.importorskip("verl", reason=VERL_MISSING)
import ray
from hydra.utils import instantiate
from verl.experimental.agent_loop.agent_loop import (
    AgentLoopWorker,
    DictConfigWrap,
    ToolListWrap,
    _agent_loop_registry,
)
from verl.experimental.reward_loop.reward_loop import RewardLoopManager
from verl.protocol import DataProto
from verl.trainer.ppo.core_algos import compute_gae_advantage_return
from verl.utils.dataset.rl_dataset import RLHFDataset, collate_fn
from verl.workers.rollout.llm_server import LLMServerClient
from verl.workers.rollout.router import get_router_handle

from cuda_agent.agent import NO_TOOL_CALL, load_trajectory
from cuda_agent.rl import (
    CONFIG_DIR,
    filter_trajectories,
    gae_targets,
    write_replay_dataset,
    write_rl_dataset,
)
from cuda_agent.rl.verl_config import compose_stage
from cuda_agent.task import load_task
from tests.rl.evaluators import FAST
from tests.rl.scripted_server import CompletionsReplica, ScriptedCompletions
from tests.rl.scripts import BUDGET, SCRIPTS, SINGLE, STUCK, SUCCESS


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
def engine(cluster, tokenizer):
    with ScriptedCompletions(tokenizer, SCRIPTS) as server:
        replica = CompletionsReplica.remote(server.url)
        yield server, get_router_handle(servers={server.url: replica})


def stage_config(name: str, tiny_model: Path, tmp: Path, evaluator_log: Path, *extra: str):
    registry = yaml.safe_load((CONFIG_DIR / "agent_loops.yaml").read_text())
    registry[0].update(
        evaluator="tests.rl.evaluators:ScriptedEvaluator",
        evaluator_kwargs={"log": str(evaluator_log)},
        max_turns=3,
        trajectory_dir=str(tmp / "rollouts"),
    )
    loops = tmp / "agent_loops.yaml"
    loops.write_text(yaml.safe_dump(registry))
    return compose_stage(
        CONFIG_DIR / f"{name}.yaml",
        [
            f"actor_rollout_ref.model.path={tiny_model}",
            f"critic.model.path={tiny_model}",
            "data.max_prompt_length=8192",
            "data.max_response_length=1536",
            f"actor_rollout_ref.rollout.agent.agent_loop_config_path={loops}",
            "actor_rollout_ref.rollout.agent.num_workers=1",
            "reward.num_workers=1",
            *extra,
        ],
    )


def run_worker(cfg, parquet: Path, tokenizer, router, reward_handles=None) -> DataProto:
    dataset = RLHFDataset(str(parquet), tokenizer, cfg.data)
    batch = DataProto.from_single_dict(collate_fn([dataset[i] for i in range(len(dataset))]))
    worker = AgentLoopWorker(
        cfg, LLMServerClient(cfg, router), reward_loop_worker_handles=reward_handles
    )
    return asyncio.run(worker.generate_sequences(batch))


def runs(mask: list[int], value: int) -> list[tuple[int, int]]:
    """[start, end) of each run of `value` in `mask`."""
    spans, start = [], None
    for i, m in enumerate([*mask, 1 - value]):
        if m == value and start is None:
            start = i
        elif m != value and start is not None:
            spans.append((start, i))
            start = None
    return spans


def critic_values(tiny_model: Path, input_ids: torch.Tensor, attention: torch.Tensor, n: int):
    """Per-token values of a random-weight critic, for the last `n` positions (veRL's layout)."""
    config = Qwen2Config.from_pretrained(tiny_model, num_labels=1)
    torch.manual_seed(1)
    critic = Qwen2ForTokenClassification(config).eval()
    with torch.no_grad():
        logits = critic(input_ids=input_ids, attention_mask=attention).logits[..., 0]
    return logits[:, -n - 1 : -1] * attention[:, -n:]


@pytest.fixture(scope="module")
def multi_turn(engine, tiny_model, tokenizer, tmp_path_factory):
    server, router = engine
    tmp = tmp_path_factory.mktemp("multi-turn")
    log = tmp / "evaluations.jsonl"
    cfg = stage_config("ppo_small", tiny_model, tmp, log)
    tasks = [load_task(name) for name in (SUCCESS, STUCK, BUDGET)]
    parquet = write_rl_dataset(tasks, tmp / "train.parquet", "multi_turn")
    out = run_worker(cfg, parquet, tokenizer, router)
    return out, server, tmp, log, cfg


def test_model_tokens_are_exactly_the_replies_and_tool_tokens_are_masked(multi_turn, tokenizer):
    out, server, *_ = multi_turn
    names = [r["task"]["name"] for r in out.non_tensor_batch["extra_info"]]
    for row, name in enumerate(names):
        valid = int(out.batch["attention_mask"][row, out.batch["prompts"].shape[1] :].sum())
        ids = out.batch["responses"][row, :valid].tolist()
        mask = out.batch["response_mask"][row, :valid].tolist()
        replies = [tokenizer.encode(r, add_special_tokens=False) for r in SCRIPTS[name]]
        model_runs = [ids[a:b] for a, b in runs(mask, 1)]
        assert model_runs == replies[: len(model_runs)]
        assert len(model_runs) == len(SCRIPTS[name])
        context = [tokenizer.decode(ids[a:b]) for a, b in runs(mask, 0)]
        assert all("<|im_start|>" in text for text in context)  # template and tool output only
        assert mask[-1] == 1  # the response ends on the policy's last token
    stuck = next(r for r in server.requests if r["task"] == STUCK and r["turn"] == 1)["prompt"]
    assert "not valid JSON" in stuck  # the broken call came back as an observation
    third = next(r for r in server.requests if r["task"] == STUCK and r["turn"] == 2)["prompt"]
    assert NO_TOOL_CALL in third


def test_reward_is_on_the_last_model_token_and_gae_keeps_it(multi_turn, tiny_model):
    out, *_ = multi_turn
    names = [r["task"]["name"] for r in out.non_tensor_batch["extra_info"]]
    scores, mask = out.batch["rm_scores"], out.batch["response_mask"]
    # 2x faster and submitted; correct at the turn budget; nothing verified at the token budget
    expected = {SUCCESS: 3.0, STUCK: 1.0, BUDGET: -1.0}
    for row, name in enumerate(names):
        last = int(torch.nonzero(mask[row])[-1])
        assert torch.nonzero(scores[row]).flatten().tolist() == [last]
        assert float(scores[row, last]) == expected[name]
    n = mask.shape[1]
    values = critic_values(tiny_model, out.batch["input_ids"], out.batch["attention_mask"], n)
    _, returns = compute_gae_advantage_return(scores, values, mask, gamma=1.0, lam=0.95)
    for row, name in enumerate(names):
        last = int(torch.nonzero(mask[row])[-1])
        assert float(returns[row, last]) == pytest.approx(expected[name], abs=1e-5)
        ours = gae_targets(values[row].tolist(), mask[row].tolist(), expected[name])
        model = mask[row].bool().numpy()
        np.testing.assert_allclose(ours.returns[model], returns[row].numpy()[model], atol=1e-5)
    # The same reward one token later, on a template token, is lost by veRL's GAE.
    row = names.index(SUCCESS)
    last = int(torch.nonzero(mask[row])[-1])
    moved = torch.zeros_like(scores[row : row + 1])
    moved[0, last + 1] = expected[SUCCESS]
    _, lost = compute_gae_advantage_return(
        moved, values[row : row + 1], mask[row : row + 1], 1.0, 0.95
    )
    assert float(lost[0, last]) == pytest.approx(0.0, abs=1e-6)


def test_episodes_keep_one_workspace_and_write_trajectories(multi_turn):
    out, _, tmp, log, _ = multi_turn
    evaluations = [json.loads(line) for line in log.read_text().splitlines()]
    success = [e for e in evaluations if e["task"] == SUCCESS]
    assert success and all(FAST in e["files"]["model_new.py"] for e in success)  # the turn-0 file
    trajectories = sorted((tmp / "rollouts").glob("*.jsonl"))
    assert len(trajectories) == 3
    ends = {load_trajectory(p).task.name: load_trajectory(p).end for p in trajectories}
    assert (ends[SUCCESS].reason, ends[SUCCESS].reward) == ("submitted", 3)
    assert (ends[STUCK].reason, ends[STUCK].reward) == ("turn_budget", 1)
    assert (ends[BUDGET].reason, ends[BUDGET].reward) == ("token_budget", -1)
    result = filter_trajectories(trajectories)
    assert [load_trajectory(p).task.name for p in result.kept] == [SUCCESS]
    assert (result.report.by_rule["invalid_call"], result.report.by_rule["reward"]) == (1, 1)


def test_replay_reproduces_the_rollout_tokens_with_its_reward(
    multi_turn, engine, tiny_model, tokenizer, tmp_path
):
    out, _, tmp, _, cfg = multi_turn
    _, router = engine
    kept = filter_trajectories(sorted((tmp / "rollouts").glob("*.jsonl"))).kept
    replay = run_worker(
        cfg, write_replay_dataset(kept, tmp_path / "replay.parquet").path, tokenizer, router
    )
    live_row = [r["task"]["name"] for r in out.non_tensor_batch["extra_info"]].index(SUCCESS)
    for key in ("prompts", "responses", "response_mask"):
        assert torch.equal(replay.batch[key][0], out.batch[key][live_row])
    assert torch.equal(replay.batch["rm_scores"][0], out.batch["rm_scores"][live_row])


def test_v1_trainer_layout_also_gets_the_reward_on_a_model_token(multi_turn, engine, tokenizer):
    """veRL's default (v1) trainer takes AgentLoopOutput.as_dict(), which puts the reward on the
    response's last token: the episode that overran its budget must still end on a model token."""
    _, _, tmp, _, cfg = multi_turn
    _, router = engine
    worker = AgentLoopWorker(cfg, LLMServerClient(cfg, router))
    row = RLHFDataset(str(tmp / "train.parquet"), tokenizer, cfg.data)[2]
    assert row["extra_info"]["task"]["name"] == BUDGET

    async def play():  # as AgentLoopWorker._run_agent_loop makes and runs a loop
        loop = instantiate(
            _agent_loop_registry["cuda_agent"],
            trainer_config=DictConfigWrap(cfg),
            server_manager=worker.llm_client,
            tokenizer=worker.tokenizer,
            processor=None,
            hf_model_type=worker.hf_model_type,
            dataset_cls=worker.dataset_cls,
            data_config=DictConfigWrap(cfg.data),
            tools=ToolListWrap(worker.tools),
        )
        return await loop.run({"temperature": 1.0, "logprobs": True}, **row)

    output = asyncio.run(play())
    fields = output.as_dict()
    assert fields["response_mask"][-1] == 1 and len(fields["responses"]) <= 1536
    assert torch.nonzero(fields["rm_scores"]).flatten().tolist() == [len(fields["responses"]) - 1]
    assert float(fields["rm_scores"][-1]) == -1.0
    assert len(fields["rollout_log_probs"]) == len(fields["responses"])


def test_single_turn_stage_scores_through_veRLs_reward_loop(
    engine, tiny_model, tokenizer, tmp_path
):
    _, router = engine
    log = tmp_path / "evaluations.jsonl"
    cfg = stage_config(
        "warmup_small",
        tiny_model,
        tmp_path,
        log,
        "reward.custom_reward_function.reward_kwargs.evaluator=tests.rl.evaluators:ScriptedEvaluator",
        f"+reward.custom_reward_function.reward_kwargs.evaluator_kwargs.log={log}",
    )
    parquet = write_rl_dataset([load_task(SINGLE)], tmp_path / "warmup.parquet", "single_turn")
    rewards = RewardLoopManager(cfg)
    out = run_worker(cfg, parquet, tokenizer, router, rewards.reward_loop_worker_handles)
    mask, scores = out.batch["response_mask"][0], out.batch["rm_scores"][0]
    last = int(torch.nonzero(mask)[-1])
    assert torch.nonzero(scores).flatten().tolist() == [last]
    assert float(scores[last]) == 3.0
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(c["stage"], c["timing"]) for c in calls] == [("profile", "events")]
