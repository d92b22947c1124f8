"""Value targets for critic pre-training: GAE over the policy's own tokens.

The episode's one reward sits on its last model token. Tool and environment tokens (mask 0) are
not the policy's actions: GAE skips them, carrying the next model token's value and advantage
across them, exactly as veRL's `compute_gae_advantage_return` does. The critic regresses the
returns (advantage + value) at the model tokens. With the paper's gamma 1.0 and lambda 0.95 the
last model token's target is the reward itself, and earlier targets mix the reward with the
critic's own later estimates.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

GAMMA = 1.0
LAMBDA = 0.95


@dataclass(frozen=True)
class ValueTargets:
    advantages: np.ndarray  # not whitened
    returns: np.ndarray  # what the critic regresses, meaningful where mask is 1


def last_model_token(mask: Sequence[int]) -> int:
    """Index of the last token the policy generated (where the reward goes)."""
    positions = np.flatnonzero(np.asarray(mask))
    if positions.size == 0:
        raise ValueError("the response has no model tokens; there is nowhere to put the reward")
    return int(positions[-1])


def token_rewards(mask: Sequence[int], reward: float) -> np.ndarray:
    """Per-token rewards: `reward` on the last model token, zero elsewhere."""
    rewards = np.zeros(len(mask), dtype=np.float64)
    rewards[last_model_token(mask)] = reward
    return rewards


def gae_targets(
    values: Sequence[float],
    mask: Sequence[int],
    reward: float,
    gamma: float = GAMMA,
    lam: float = LAMBDA,
) -> ValueTargets:
    """GAE advantages and returns of one response from per-token values and the final reward."""
    v = np.asarray(values, dtype=np.float64)
    m = np.asarray(mask, dtype=np.float64)
    if v.shape != m.shape:
        raise ValueError(f"values {v.shape} and mask {m.shape} differ in shape")
    r = token_rewards(mask, reward)
    advantages = np.zeros_like(v)
    next_value = last_gae = 0.0
    for t in range(len(v) - 1, -1, -1):
        delta = r[t] + gamma * next_value - v[t]
        gae = delta + gamma * lam * last_gae
        next_value = v[t] * m[t] + (1 - m[t]) * next_value
        last_gae = gae * m[t] + (1 - m[t]) * last_gae
        advantages[t] = last_gae
    return ValueTargets(advantages, advantages + v)
