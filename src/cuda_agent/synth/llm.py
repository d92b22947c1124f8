"""The optional composer that asks a language model to write the fused program.

It speaks the OpenAI chat-completions protocol (vLLM, SGLang, any compatible server) through the
`openai` package behind a one-method protocol, so synth needs nothing from the agent package. The
program it writes is untrusted: it goes through the same isolated filters, and its labels come
from tracing what it runs, never from the operator list it was asked to use.
"""

from __future__ import annotations

import os
import random
import re
from dataclasses import dataclass
from typing import Protocol

from cuda_agent.synth.catalog.model import Catalog
from cuda_agent.synth.compose import CATEGORY_WEIGHTS, OP_COUNT_WEIGHTS
from cuda_agent.synth.profiles import profile_for
from cuda_agent.task import TaskError, check_program

SYSTEM = (
    "You write PyTorch reference programs in the KernelBench format: imports, "
    "class Model(nn.Module) with __init__ and forward, get_inputs() returning the input tensors "
    "and get_init_inputs() returning the constructor arguments. The program must run as is: "
    "import everything it uses, no randomness inside forward, no printing."
)
_FENCE = re.compile(r"```(?:python|py)?\s*\n(.*?)```", re.S)


class ChatModel(Protocol):
    def complete(self, messages: list[dict[str, str]]) -> str: ...


@dataclass(frozen=True)
class OpenAIChat:
    """A chat-completions endpoint; the key comes from OPENAI_API_KEY (any value for local)."""

    base_url: str
    model: str
    temperature: float = 0.7
    max_tokens: int = 2048
    timeout_s: float = 120.0

    def complete(self, messages: list[dict[str, str]]) -> str:
        import openai

        client = openai.OpenAI(
            base_url=self.base_url,
            api_key=os.environ.get("OPENAI_API_KEY", "EMPTY"),
            timeout=self.timeout_s,
            max_retries=1,
        )
        reply = client.chat.completions.create(
            model=self.model,
            messages=messages,
            temperature=self.temperature,
            max_tokens=self.max_tokens,
        )
        return reply.choices[0].message.content or ""


def prompt_for(catalog: Catalog, seed: int, index: int, device: str) -> tuple[list[str], str]:
    """The operators asked for (sampled like the template composer samples) and the request."""
    rng = random.Random(f"{seed}:{index}:llm")
    n_ops = rng.choices(list(OP_COUNT_WEIGHTS), weights=list(OP_COUNT_WEIGHTS.values()))[0]
    by_category: dict[str, list[str]] = {}
    for e in catalog.entries:
        if e.category != "index":
            by_category.setdefault(e.category, []).append(e.name)
    names = sorted(by_category)
    weights = [CATEGORY_WEIGHTS.get(c, 1.0) for c in names]
    ops = [rng.choice(by_category[rng.choices(names, weights=weights)[0]]) for _ in range(n_ops)]
    lo, hi = profile_for(device).window_ms
    request = (
        f"Write one program whose forward applies these operators in this order, feeding each "
        f"result to the next: {', '.join(ops)}. Choose realistic input shapes so that one "
        f"forward pass takes between {lo} and {hi} ms on {device}. Answer with the program "
        f"only, in one ```python block."
    )
    return ops, request


def extract_code(text: str) -> str:
    """The last fenced Python block of a reply, or the reply itself when it has no fence."""
    blocks = _FENCE.findall(text)
    return (blocks[-1] if blocks else text).strip() + "\n"


def llm_compose(chat: ChatModel, catalog: Catalog, seed: int, index: int, device: str) -> dict:
    """One candidate from the model: a journal record (the code is checked by parsing only)."""
    ops, request = prompt_for(catalog, seed, index, device)
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": request}]
    try:
        text = chat.complete(messages)
    except Exception as err:  # the endpoint failed: this candidate is lost, the run goes on
        detail = f"{type(err).__name__}: {err}".splitlines()[0][:300]
        return {"id": index, "ok": False, "reason": "llm error", "detail": detail}
    code = extract_code(text)
    try:
        check_program(code, f"candidate {index}")
    except TaskError as err:
        return {"id": index, "ok": False, "reason": "not a program", "detail": str(err)[:300]}
    return {"id": index, "ok": True, "code": code, "intended": ops, "n_ops": len(ops)}
