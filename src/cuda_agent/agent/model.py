"""The model: one chat-completions request per turn to any OpenAI-compatible endpoint.

Retries live here, not in the `openai` package (its own retries are off), so what counts as
transient is ours to say: 408, 409, 429, 5xx, timeouts and connection errors are retried with
exponential backoff (or the server's Retry-After, capped); any other 4xx fails at once. A request
past its timeout is tried once more only: a server that hangs costs two timeouts, not six.

The body is read as text and parsed here, field by field: whatever an endpoint sends back (a
proxy's HTML page, truncated JSON, a completion without choices), the result is a reply or a
ModelError quoting its first bytes, never an exception of the parser.
"""

from __future__ import annotations

import json
import math
import os
import time
from dataclasses import dataclass

import openai

from cuda_agent.agent.config import ModelConfig
from cuda_agent.errors import UserError

TRANSIENT_STATUS = frozenset({408, 409, 429})
NO_KEY = "EMPTY"  # what local vLLM/SGLang servers accept when they were started without a key
TIMEOUT_RETRIES = 1  # a request past its timeout is sent again this many times at most
SHOWN_BYTES = 200  # of a malformed body, in the error


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
        return parse_completion(self._with_retries(request), messages, self.config.base_url)

    def _with_retries(self, request: dict) -> str:
        """The body of the first successful response, as text."""
        cfg = self.config
        timeouts = 0
        for attempt in range(cfg.max_retries + 1):
            try:
                raw = self._client.chat.completions.with_raw_response.create(**request)
                return raw.http_response.text
            except openai.APITimeoutError as err:
                failure, wait = err, None
                timeouts += 1
                if timeouts > TIMEOUT_RETRIES:
                    raise ModelError(
                        f"{cfg.base_url}: no answer within {cfg.timeout_s:g} s, "
                        f"{timeouts} times (--timeout sets the limit)"
                    ) from None
            except openai.APIConnectionError as err:
                failure, wait = err, None
            except openai.APIStatusError as err:
                if err.status_code not in TRANSIENT_STATUS and err.status_code < 500:
                    raise ModelError(
                        f"{cfg.base_url}: HTTP {err.status_code}: {error_detail(err)}"
                    ) from None
                failure, wait = err, _retry_after(err)
            if attempt == cfg.max_retries:
                break
            backoff = min(cfg.backoff_s * 2**attempt, cfg.max_backoff_s)
            time.sleep(min(wait, cfg.max_backoff_s) if wait is not None else backoff)
        raise ModelError(
            f"{cfg.base_url}: still failing after {cfg.max_retries + 1} attempts: "
            f"{error_detail(failure)}"
        )


def parse_completion(body: str, messages: list[dict], where: str) -> ModelReply:
    """A chat-completions response body as a ModelReply; ModelError (quoting the body's first
    bytes) when it is not one."""
    try:
        data = json.loads(body)
    except ValueError:
        raise ModelError(f"{where}: the reply is not JSON; it begins {shown(body)}") from None
    choices = data.get("choices") if isinstance(data, dict) else None
    if not isinstance(choices, list) or not choices:
        raise ModelError(f"{where}: the reply has no choices; it begins {shown(body)}")
    choice = choices[0]
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict):
        raise ModelError(f"{where}: the reply's choice has no message; it begins {shown(body)}")
    content = message.get("content")
    raw_calls = message.get("tool_calls") or []
    if (content is not None and not isinstance(content, str)) or not isinstance(raw_calls, list):
        raise ModelError(f"{where}: the reply's message is malformed; it begins {shown(body)}")
    calls = tuple(_tool_call(i, call) for i, call in enumerate(raw_calls) if _function(call))
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
    if isinstance(prompt, int) and prompt > 0:
        completion = completion if isinstance(completion, int) else 0
        estimated = False
    else:
        prompt = estimate_message_tokens(messages)
        completion = estimate_tokens(content or "") + sum(
            estimate_tokens(c.arguments) for c in calls
        )
        estimated = True
    finish = choice.get("finish_reason")
    return ModelReply(
        content=content,
        tool_calls=calls,
        prompt_tokens=prompt,
        completion_tokens=completion,
        tokens_estimated=estimated,
        finish_reason=finish if isinstance(finish, str) else None,
    )


def shown(body: str) -> str:
    """The first bytes of a body, quoted, for an error message."""
    more = "…" if len(body) > SHOWN_BYTES else ""
    return repr(body[:SHOWN_BYTES]) + more


def _function(call) -> dict | None:
    fn = call.get("function") if isinstance(call, dict) else None
    return fn if isinstance(fn, dict) else None


def _tool_call(index: int, call: dict) -> ToolCall:
    fn = _function(call)
    arguments = fn.get("arguments")
    if arguments is not None and not isinstance(arguments, str):
        arguments = json.dumps(arguments)  # some servers send the arguments as an object
    return ToolCall(
        id=str(call.get("id") or f"call_{index}"),
        name=str(fn.get("name") or ""),
        arguments=arguments or "",
    )


def _retry_after(err: openai.APIStatusError) -> float | None:
    value = err.response.headers.get("retry-after") if err.response is not None else None
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def error_detail(err: Exception) -> str:
    if isinstance(err, openai.APIStatusError):
        body = err.body
        if isinstance(body, dict):
            inner = body.get("error", body)
            message = inner.get("message") if isinstance(inner, dict) else inner
            if message:
                return str(message)[:500]
        return str(err)[:500]
    return f"{type(err).__name__}: {err}"[:500]
