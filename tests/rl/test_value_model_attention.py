"""A critic's value model loads with the attention its config names (veRL's own loader asks for
flash-attn whatever the config says, and no flash-attn is installed here or on the one-GPU runs'
machine)."""

from __future__ import annotations

import pytest
import torch

from tests.rl.extras import VERL_MISSING

pytest.importorskip("verl", reason=VERL_MISSING)


def test_the_value_model_loads_with_the_configured_attention(tiny_model):
    import verl.utils.model as verl_model
    from transformers import AutoConfig

    from cuda_agent.rl import value_model_attention

    assert verl_model.load_valuehead_model is value_model_attention.load_valuehead_model
    config = AutoConfig.from_pretrained(tiny_model, attn_implementation="sdpa")
    config.num_labels = 1
    model = verl_model.load_valuehead_model(str(tiny_model), torch.float32, config, False)
    assert model.config._attn_implementation == "sdpa"
    assert model.score.out_features == 1  # one value per token
