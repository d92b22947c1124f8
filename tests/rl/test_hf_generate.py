"""The one-GPU rollout backend's sampler on the tiny random model, on CPU: the log-probabilities it
returns are a fresh forward pass's, the end-of-sequence token stops it, and weights pushed into
it change what it samples."""

from __future__ import annotations

import pytest
import torch
from transformers import AutoModelForCausalLM

from cuda_agent.rl.hf_generate import HFGenerator, SamplingSettings


@pytest.fixture(scope="module")
def generator(tiny_model):
    return HFGenerator.from_pretrained(str(tiny_model), "cpu")


def fresh_log_probs(model, prompt: list[int], tokens: list[int]) -> torch.Tensor:
    """One forward pass over the whole sequence (float32: the sampler's cached steps sum in
    another order, hence a float32 tolerance in the comparisons, never more)."""
    ids = torch.tensor([prompt + tokens])
    with torch.no_grad():
        logits = model(input_ids=ids).logits[0].float()
    positions = torch.arange(len(prompt) - 1, len(prompt) + len(tokens) - 1)
    return torch.log_softmax(logits[positions], dim=-1)[torch.arange(len(tokens)), tokens]


@pytest.mark.parametrize(
    "settings",
    [
        SamplingSettings(max_tokens=48, temperature=1.0, seed=3),
        SamplingSettings(max_tokens=48, temperature=0.7, top_p=0.9, top_k=50, seed=4),
        SamplingSettings(max_tokens=48, temperature=0),
    ],
)
def test_log_probs_are_a_fresh_forward_pass(generator, tokenizer, settings):
    prompt = tokenizer.encode("<|im_start|>user\nwrite a relu kernel<|im_end|>\n")
    sampled = generator.generate(prompt, settings)
    assert 0 < len(sampled.token_ids) <= settings.max_tokens
    assert len(sampled.log_probs) == len(sampled.token_ids)
    expected = fresh_log_probs(generator.model, prompt, sampled.token_ids)
    torch.testing.assert_close(torch.tensor(sampled.log_probs), expected, rtol=1e-5, atol=1e-5)


def test_a_seed_repeats_the_sample_and_greedy_takes_the_argmax(generator, tokenizer):
    prompt = tokenizer.encode("<|im_start|>user\nprofile<|im_end|>\n")
    one = generator.generate(prompt, SamplingSettings(max_tokens=32, seed=11))
    two = generator.generate(prompt, SamplingSettings(max_tokens=32, seed=11))
    assert one == two
    greedy = generator.generate(prompt, SamplingSettings(max_tokens=8, temperature=0))
    with torch.no_grad():
        first = generator.model(input_ids=torch.tensor([prompt])).logits[0, -1]
    assert greedy.token_ids[0] == int(torch.argmax(first))


def test_the_end_token_stops_and_is_kept(tiny_model, tokenizer):
    model = AutoModelForCausalLM.from_pretrained(tiny_model)
    prompt = tokenizer.encode("<|im_start|>user\nx<|im_end|>\n")
    with torch.no_grad():
        first = int(torch.argmax(model(input_ids=torch.tensor([prompt])).logits[0, -1]))
    stopper = HFGenerator(model, [first])  # the greedy first token ends the sequence
    sampled = stopper.generate(prompt, SamplingSettings(max_tokens=20, temperature=0))
    assert sampled.token_ids == [first] and sampled.stopped
    budget = HFGenerator(model, [tokenizer.eos_token_id])
    capped = budget.generate(prompt, SamplingSettings(max_tokens=5, temperature=0))
    assert len(capped.token_ids) == 5 or capped.stopped


def test_pushed_weights_change_generation(tiny_model, tokenizer):
    generator = HFGenerator.from_pretrained(str(tiny_model), "cpu")
    prompt = tokenizer.encode("<|im_start|>user\nwrite a relu kernel<|im_end|>\n")
    greedy = SamplingSettings(max_tokens=24, temperature=0)
    before = generator.generate(prompt, greedy)
    other = AutoModelForCausalLM.from_config(generator.model.config)
    torch.manual_seed(7)
    with torch.no_grad():  # larger weights than the initialiser's, so the greedy path moves
        for param in other.parameters():
            param.normal_(0, 0.5)
    loaded = generator.load_weights(other.state_dict().items())
    assert loaded == len(other.state_dict())
    after = generator.generate(prompt, greedy)
    assert after.token_ids != before.token_ids
    expected = fresh_log_probs(other.eval(), prompt, after.token_ids)
    torch.testing.assert_close(torch.tensor(after.log_probs), expected, rtol=1e-5, atol=1e-5)


def test_an_unknown_weight_name_is_refused(generator):
    with pytest.raises(KeyError, match="no parameter"):
        generator.load_weights([("model.layers.9.mlp.up_proj.weight", torch.zeros(1))])


def test_settings_from_verl_sampling_params():
    params = {"temperature": 0.6, "top_p": 0.95, "top_k": -1, "repetition_penalty": 1.0}
    settings = SamplingSettings.from_params({**params, "max_tokens": 12, "logprobs": True}, 99)
    assert settings == SamplingSettings(max_tokens=12, temperature=0.6, top_p=0.95, top_k=-1)
    assert SamplingSettings.from_params(params, 99).max_tokens == 99


def test_generation_runs_without_cudnn_attention_and_restores_it(tiny_model, tokenizer):
    # cuDNN's attention plans each new sequence length anew: one plan per decoded token
    generator = HFGenerator.from_pretrained(str(tiny_model), "cpu")
    forward = generator.model.forward
    enabled: list[bool] = []

    def recording(*args, **kwargs):
        enabled.append(torch.backends.cuda.cudnn_sdp_enabled())
        assert torch.backends.cuda.flash_sdp_enabled() and torch.backends.cuda.math_sdp_enabled()
        return forward(*args, **kwargs)

    generator.model.forward = recording
    before = torch.backends.cuda.cudnn_sdp_enabled()
    prompt = tokenizer.encode("<|im_start|>user\nfuse\n")
    sampled = generator.generate(prompt, SamplingSettings(max_tokens=6, seed=1))
    assert len(enabled) >= len(sampled.token_ids) and not any(enabled)
    assert torch.backends.cuda.cudnn_sdp_enabled() == before
