"""A critic's value model loaded with the attention its config names.

veRL 0.9.1's `verl.utils.model.load_valuehead_model` passes `attn_implementation=
"flash_attention_2"` to transformers whatever `critic.model.override_config.attn_implementation`
says, so on a machine without flash-attn (the one-GPU runs use PyTorch's sdpa) the critic fails to
start. Importing this module in a worker replaces that loader there with one that passes the
attention veRL already wrote into the model's config (`_attn_implementation`); a config that asks
for flash_attention_2 still goes through veRL's own loader.
"""

from __future__ import annotations

import verl.utils.model as verl_model

_VERL_LOADER = verl_model.load_valuehead_model


def load_valuehead_model(local_path, torch_dtype, model_config, trust_remote_code):
    attention = getattr(model_config, "_attn_implementation", None)
    if attention in (None, "flash_attention_2"):
        return _VERL_LOADER(local_path, torch_dtype, model_config, trust_remote_code)
    from transformers import AutoModelForTokenClassification

    return AutoModelForTokenClassification.from_pretrained(
        pretrained_model_name_or_path=local_path,
        torch_dtype=torch_dtype,
        config=model_config,
        attn_implementation=attention,
        trust_remote_code=trust_remote_code,
    )


verl_model.load_valuehead_model = load_valuehead_model
