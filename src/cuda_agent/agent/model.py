"""The model: one chat-completions request per turn to any OpenAI-compatible endpoint.

Retries live here, not in the `openai` package (its own retries are off), so what counts as
transient is ours to say: 408, 409, 429, 5xx, timeouts and connection errors are retried with
exponential backoff (or the server's Retry-After, capped); any other 4xx fails at once.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass

import openai

from cuda_agent.agent.config import ModelConfig
from cuda_agent.errors import UserError

TRANSIENT_STATUS = frozenset({408, 409, 429})
NO_KEY = "EMPTY"  # what local vLLM/SGLang servers accept when they were started without a key


class ModelError(Exception):
    """The endpoint failed for good: a 4xx, or transient errors past the retry budget."""


@dataclass(frozen=True)
class ToolCall:
    """One call as the model sent it; `arguments` is the raw JSON text, parsed only by the tools."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class ModelReply:
    content: str | None
    tool_calls: tuple[ToolCall, ...]
    prompt_tokens: int
    completion_tokens: int
    tokens_estimated: bool  # the server sent no usage; counts are estimates from text length
    finish_reason: str | None = None


def estimate_tokens(text: str) -> int:
    """About four characters a token: what BPE tokenizers give on code and English."""
    return math.ceil(len(text) / 4)


def estimate_message_tokens(messages: list[dict]) -> int:
    total = 0
    for message in messages:
        total += 4 + estimate_tokens(message.get("content") or "")
        for call in message.get("tool_calls") or ():
            fn = call["function"]
            total += 8 + estimate_tokens(fn["name"]) + estimate_tokens(fn["arguments"])
    return total


def resolve_api_key(api_key_env: str | None) -> str:
    """The key from the variable the user named; none named means a local server without a key."""
    if api_key_env is None:
        return NO_KEY
    key = os.environ.get(api_key_env)
    if not key:
        raise UserError(f"--api-key-env {api_key_env}: that environment variable is not set")
    return key


class OpenAIModel:
    """A chat-completions client; `complete` sends the conversation and returns one reply."""

    def __init__(self, config: ModelConfig):
        self.config = config
        self.name = config.model
        self._client = openai.OpenAI(
            base_url=config.base_url,
            api_key=resolve_api_key(config.api_key_env),
            timeout=config.timeout_s,
            max_retries=0,
        )

    def complete(self, messages: list[dict], tools: list[dict] | None) -> ModelReply:
        request: dict = {"model": self.config.model, "messages": messages}
        if tools:
            request["tools"] = tools
        if self.config.temperature is not None:
            request["temperature"] = self.config.temperature
        if self.config.max_tokens is not None:
            request["max_tokens"] = self.config.max_tokens
        response = self._with_retries(request)
        if not response.choices:
            raise ModelError(f"{self.config.base_url}: the response has no choices")
        choice = response.choices[0]
        message = choice.message
        calls = tuple(
            ToolCall(
                id=call.id or f"call_{i}",
                name=call.function.name or "",
                arguments=call.function.arguments or "",
            )
            for i, call in enumerate(message.tool_calls or ())
            if getattr(call, "function", None) is not None
        )
        usage = response.usage
        if usage is not None and usage.prompt_tokens:
            prompt, completion, estimated = usage.prompt_tokens, usage.completion_tokens or 0, False
        else:
            prompt = estimate_message_tokens(messages)
            completion = estimate_tokens(message.content or "") + sum(
                estimate_tokens(c.arguments) for c in calls
            )
            estimated = True
        return ModelReply(
            content=message.content,
            tool_calls=calls,
            prompt_tokens=prompt,
            completion_tokens=completion,
            tokens_estimated=estimated,
            finish_reason=choice.finish_reason,
        )

    def _with_retries(self, request: dict):
        cfg = self.config
        for attempt in range(cfg.max_retries + 1):
            try:
                return self._client.chat.completions.create(**request)
            except (openai.APITimeoutError, openai.APIConnectionError) as err:
                failure, wait = err, None
            except openai.APIStatusError as err:
                if err.status_code not in TRANSIENT_STATUS and err.status_code < 500:
                    raise ModelError(
                        f"{cfg.base_url}: HTTP {err.status_code}: {_detail(err)}"
                    ) from None
                failure, wait = err, _retry_after(err)
            if attempt == cfg.max_retries:
                break
            backoff = min(cfg.backoff_s * 2**attempt, cfg.max_backoff_s)
            time.sleep(min(wait, cfg.max_backoff_s) if wait is not None else backoff)
        raise ModelError(
            f"{cfg.base_url}: still failing after {cfg.max_retries + 1} attempts: "
            f"{_detail(failure)}"
        )


def _retry_after(err: openai.APIStatusError) -> float | None:
    value = err.response.headers.get("retry-after") if err.response is not None else None
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def _detail(err: Exception) -> str:
    if isinstance(err, openai.APIStatusError):
        body = err.body
        if isinstance(body, dict):
            inner = body.get("error", body)
            message = inner.get("message") if isinstance(inner, dict) else inner
            if message:
                return str(message)[:500]
        return str(err)[:500]
    return f"{type(err).__name__}: {err}"[:500]
