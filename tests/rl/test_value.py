"""Value targets: hand-computed GAE, and agreement with veRL's compute_gae_advantage_return."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.rl.extras import VERL_MISSING

pytest.importorskip("verl", reason=VERL_MISSING)
from verl.trainer.ppo.core_algos import compute_gae_advantage_return

from cuda_agent.rl import GAMMA, LAMBDA, gae_targets, last_model_token, token_rewards


def test_hand_computed_targets_skip_tool_tokens():
    # model, model, tool, model; reward 1 on the last model token; gamma 1, lambda 0.95
    targets = gae_targets([0.5, 0.2, 9.0, 0.1], [1, 1, 0, 1], reward=1.0)
    # t3: 1 - 0.1 = 0.9; t1: 0.1 - 0.2 + 0.95 * 0.9 = 0.755; t0: 0.2 - 0.5 + 0.95 * 0.755
    np.testing.assert_allclose(targets.advantages[[0, 1, 3]], [0.41725, 0.755, 0.9])
    np.testing.assert_allclose(targets.returns[[0, 1, 3]], [0.91725, 0.955, 1.0])
    assert (GAMMA, LAMBDA) == (1.0, 0.95)


def test_reward_goes_on_the_last_model_token():
    assert last_model_token([1, 1, 0, 0, 1, 0, 0]) == 4
    assert token_rewards([1, 0, 1, 0], 3.0).tolist() == [0.0, 0.0, 3.0, 0.0]
    with pytest.raises(ValueError, match="no model tokens"):
        token_rewards([0, 0], 1.0)


def test_matches_veRL_on_random_episodes():
    rng = np.random.default_rng(0)
    for _ in range(20):
        n = int(rng.integers(5, 60))
        mask = (rng.random(n) < 0.6).astype(int)
        mask[:2] = 1  # veRL whitens advantages over the model tokens: it needs two
        end = int(rng.integers(2, n + 1))
        mask[end:] = 0  # right padding after the episode
        values = rng.normal(size=n)
        reward = float(rng.choice([-1, 1, 2, 3]))
        ours = gae_targets(values, mask, reward)
        scores = torch.tensor(token_rewards(mask, reward)).unsqueeze(0)
        _, returns = compute_gae_advantage_return(
            scores,
            torch.tensor(values).unsqueeze(0),
            torch.tensor(mask).unsqueeze(0),
            GAMMA,
            LAMBDA,
        )
        model = mask.astype(bool)
        np.testing.assert_allclose(ours.returns[model], returns[0].numpy()[model], atol=1e-9)
        assert ours.returns[last_model_token(mask)] == pytest.approx(reward)
