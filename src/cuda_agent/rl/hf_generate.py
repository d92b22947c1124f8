"""Token-in, token-out sampling on a plain `transformers` causal LM, with exact log-probabilities.

The one-GPU rollout backend (`cuda_agent.rl.hf_rollout`) serves veRL's agent loops with it. Each
returned log-probability is the model's own `log_softmax` of the sampled token at its position
(before temperature, top-p and top-k shape the sampling distribution), which is what veRL's
actor recomputes as `old_log_prob`; the sampled ids end with the end-of-sequence token when the
model stopped by itself. Weights come from the actor after each update as (name, tensor) pairs.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

# Attention kernels for generation, cuDNN's left out: torch picks it first for bfloat16 on Hopper,
# and it builds an execution plan for each new sequence length. Every decoded token brings one,
# which made a token of the two-layer test model take 40 ms on an H100 instead of 2-3 ms.
DECODE_ATTENTION = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]


@dataclass(frozen=True)
class Sampled:
    token_ids: list[int]
    log_probs: list[float]
    stopped: bool  # an end-of-sequence token ended it (else the token budget did)


@dataclass(frozen=True)
class SamplingSettings:
    max_tokens: int
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = -1
    seed: int | None = None

    @classmethod
    def from_params(cls, params: dict, default_max_tokens: int) -> SamplingSettings:
        """From veRL's sampling-params dict (the keys vLLM's SamplingParams takes)."""
        limit = params.get("max_tokens", params.get("max_new_tokens", default_max_tokens))
        return cls(
            max_tokens=int(limit),
            temperature=float(params.get("temperature", 1.0)),
            top_p=float(params.get("top_p", 1.0)),
            top_k=int(params.get("top_k", -1) or -1),
            seed=params.get("seed"),
        )


class HFGenerator:
    """A causal LM on one device, sampling one sequence per call."""

    def __init__(self, model: torch.nn.Module, eos_token_ids: Iterable[int]):
        self.model = model.eval()
        self.eos = frozenset(int(i) for i in eos_token_ids)
        if not self.eos:
            raise ValueError("the model names no end-of-sequence token")

    @classmethod
    def from_pretrained(cls, path: str, device: str, dtype: torch.dtype = torch.float32):
        from transformers import AutoModelForCausalLM, GenerationConfig

        model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype).to(device)
        eos = model.config.eos_token_id
        try:
            eos = GenerationConfig.from_pretrained(path).eos_token_id or eos
        except OSError:  # no generation_config.json: the model config names it
            pass
        return cls(model, [eos] if isinstance(eos, int) else eos)

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    @torch.no_grad()
    def generate(self, prompt_ids: list[int], settings: SamplingSettings) -> Sampled:
        with sdpa_kernel(DECODE_ATTENTION):
            return self._generate(prompt_ids, settings)

    def _generate(self, prompt_ids: list[int], settings: SamplingSettings) -> Sampled:
        rng = torch.Generator(device=self.device)
        if settings.seed is None:
            rng.seed()
        else:
            rng.manual_seed(int(settings.seed))
        ids = torch.tensor([prompt_ids], dtype=torch.long, device=self.device)
        out = self.model(input_ids=ids, use_cache=True)
        # tokens and log-probabilities stay on the device: one wait for the device per token
        # (the end-of-sequence check), not one per value read back
        tokens, log_probs, stopped = [], [], False
        for _ in range(settings.max_tokens):
            logits = out.logits[0, -1].float()
            token = _sample(logits, settings, rng)
            tokens.append(token)
            log_probs.append(torch.log_softmax(logits, dim=-1)[token])
            if int(token) in self.eos:
                stopped = True
                break
            out = self.model(
                input_ids=token.view(1, 1), past_key_values=out.past_key_values, use_cache=True
            )
        ids_out = torch.stack(tokens).tolist() if tokens else []
        probs_out = torch.stack(log_probs).tolist() if log_probs else []
        return Sampled(ids_out, probs_out, stopped=stopped)

    @torch.no_grad()
    def load_weights(self, weights: Iterable[tuple[str, torch.Tensor]]) -> int:
        """Copy the named tensors into the model's parameters; returns how many were loaded.
        A name the model does not have is an error (a silent skip would keep stale weights)."""
        # tied weights (lm_head and embeddings) answer to both names
        params = dict(self.model.named_parameters(remove_duplicate=False))
        loaded = 0
        for name, tensor in weights:
            if name not in params:
                raise KeyError(f"the rollout model has no parameter {name!r}")
            params[name].copy_(tensor.to(params[name].device, params[name].dtype))
            loaded += 1
        return loaded


def _sample(logits: torch.Tensor, settings: SamplingSettings, rng: torch.Generator) -> torch.Tensor:
    """The sampled token id, a 0-d tensor on the logits' device."""
    if settings.temperature <= 0:
        return torch.argmax(logits)
    scaled = logits / settings.temperature
    if 0 < settings.top_k < scaled.numel():
        kth = torch.topk(scaled, settings.top_k).values[-1]
        scaled = scaled.masked_fill(scaled < kth, float("-inf"))
    if settings.top_p < 1.0:
        order = torch.argsort(scaled, descending=True)
        probs = torch.softmax(scaled[order], dim=-1)
        # keep the smallest prefix whose mass reaches top_p (the first token always)
        drop = torch.cumsum(probs, dim=-1) - probs >= settings.top_p
        scaled[order[drop]] = float("-inf")
    probs = torch.softmax(scaled, dim=-1)
    return torch.multinomial(probs, 1, generator=rng)[0]
