"""The stage configs against the pinned veRL: every key exists in veRL's own configs, the
composition passes the checks veRL runs before training, and the paper's settings are there."""

from __future__ import annotations

import pytest
import yaml

from cuda_agent.errors import UserError
from cuda_agent.rl import CONFIG_DIR
from cuda_agent.rl.sampling import load_sample_config, server_command
from cuda_agent.rl.verl_config import compose_stage, unknown_keys, validate_stage

STAGE_FILES = [
    "warmup",
    "warmup_small",
    "pre_rft",
    "pre_rft_small",
    "rft",
    "rft_small",
    "value",
    "value_small",
    "ppo",
    "ppo_small",
    "warmup_1gpu",
    "pre_rft_1gpu",
    "rft_1gpu",
    "value_1gpu",
    "ppo_1gpu",
]


def model_overrides(name: str, model) -> list[str]:
    if name.startswith(("rft", "pre_rft")):
        return [f"model.path={model}"]
    return [f"actor_rollout_ref.model.path={model}", f"critic.model.path={model}"]


def composed(name: str, model: str = "m"):
    return compose_stage(CONFIG_DIR / f"{name}.yaml", model_overrides(name, model))


@pytest.mark.parametrize("name", STAGE_FILES)
def test_every_key_exists_in_veRL_and_veRL_accepts_the_config(name, tiny_model):
    assert unknown_keys(CONFIG_DIR / f"{name}.yaml") == []
    validate_stage(composed(name, tiny_model))


def test_a_renamed_key_fails(tmp_path, tiny_model):
    for name in ("ppo", "ppo_small"):
        (tmp_path / f"{name}.yaml").write_text((CONFIG_DIR / f"{name}.yaml").read_text())
    text = (tmp_path / "ppo.yaml").read_text().replace("clip_ratio_high:", "clip_ratio_upper:")
    (tmp_path / "ppo.yaml").write_text(text)
    assert unknown_keys(tmp_path / "ppo_small.yaml") == ["actor_rollout_ref.actor.clip_ratio_upper"]
    with pytest.raises(UserError, match="clip_ratio_upper"):
        validate_stage(
            compose_stage(tmp_path / "ppo_small.yaml", model_overrides("ppo", tiny_model))
        )


def test_paper_settings():
    for name in ("ppo", "value", "warmup"):
        cfg = composed(name)
        assert (cfg.algorithm.adv_estimator, cfg.algorithm.gamma, cfg.algorithm.lam) == (
            "gae",
            1.0,
            0.95,
        )
        actor = cfg.actor_rollout_ref.actor
        assert (actor.clip_ratio_low, actor.clip_ratio_high, actor.optim.lr) == (0.2, 0.28, 3e-6)
        assert cfg.critic.optim.lr == 6e-6
    ppo, warmup, value = composed("ppo"), composed("warmup"), composed("value")
    assert ppo.data.train_batch_size * ppo.actor_rollout_ref.rollout.n == 1024
    assert ppo.data.max_prompt_length + ppo.data.max_response_length == 128 * 1024
    assert warmup.data.max_prompt_length + warmup.data.max_response_length == 32 * 1024
    assert warmup.reward.custom_reward_function.path == "pkg://cuda_agent.rl.reward"
    assert warmup.actor_rollout_ref.rollout.agent.default_agent_loop == "single_turn_agent"
    assert value.trainer.critic_warmup > 10_000 and ppo.trainer.critic_warmup == 0
    loops = {e["name"]: e for e in yaml.safe_load((CONFIG_DIR / "agent_loops.yaml").read_text())}
    assert loops["cuda_agent"]["max_turns"] == 150
    assert loops["cuda_agent"]["_target_"] == "cuda_agent.rl.verl_loop.CudaAgentLoop"
    assert load_sample_config(CONFIG_DIR / "sample.yaml").sampling.max_turns == 150


def test_small_variants_fit_one_node():
    for name in ("warmup_small", "value_small", "ppo_small", "rft_small"):
        cfg = composed(name)
        assert (cfg.trainer.nnodes, cfg.trainer.n_gpus_per_node) == (1, 8)


def test_sample_config_serves_with_tool_calling(tmp_path):
    config = load_sample_config(CONFIG_DIR / "sample.yaml")
    served = config.server.model_copy(update={"model": "/ckpt/actor"})
    command = server_command(served)
    assert (
        command[:3] == ["vllm", "serve", "/ckpt/actor"] and "--enable-auto-tool-choice" in command
    )
    sglang = server_command(served.model_copy(update={"engine": "sglang"}))
    assert sglang[:3] == ["python", "-m", "sglang.launch_server"] and "qwen25" in sglang
    with pytest.raises(UserError, match="give --model"):
        server_command(config.server)
    (tmp_path / "bad.yaml").write_text("sampling:\n  samples_per_tsk: 2\n")
    with pytest.raises(UserError, match="samples_per_tsk"):
        load_sample_config(tmp_path / "bad.yaml")


def test_one_gpu_stages_keep_the_paper_algorithm_on_the_hf_rollout():
    for name in ("warmup_1gpu", "value_1gpu", "ppo_1gpu"):
        cfg = composed(name)
        algorithm = cfg.algorithm
        assert (algorithm.adv_estimator, algorithm.gamma, algorithm.lam) == ("gae", 1.0, 0.95)
        assert cfg.actor_rollout_ref.rollout.name == "hf"
        assert (cfg.trainer.nnodes, cfg.trainer.n_gpus_per_node) == (1, 1)
    assert composed("ppo_1gpu").trainer.total_training_steps == 2
    # a taught policy's whole episode fits the responses that PPO samples and value replays
    assert composed("ppo_1gpu").data.max_response_length >= 8192
    assert composed("value_1gpu").data.max_response_length >= 8192
    assert composed("value_1gpu").trainer.critic_warmup > 1000
    assert composed("warmup_1gpu").actor_rollout_ref.rollout.agent.default_agent_loop == (
        "single_turn_agent"
    )


def test_the_teaching_rft_is_the_rft_stage_over_many_passes():
    taught, rft = composed("pre_rft_1gpu"), composed("rft_1gpu")
    assert taught.trainer.total_epochs * 3 >= 900 and taught.trainer.save_freq == -1
    assert taught.data.custom_cls.name == rft.data.custom_cls.name
    assert taught.data.max_length >= 16384
