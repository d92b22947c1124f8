"""One request to the model endpoint before any episode starts, so a wrong URL, a wrong model
name, a server that answers something other than chat completions, or one without tool calling
is one line at once, not a model_error on every task after minutes of retries."""

from __future__ import annotations

from urllib.parse import urlparse

import openai

from cuda_agent.agent.config import ModelConfig
from cuda_agent.agent.model import ModelError, error_detail, parse_completion, resolve_api_key
from cuda_agent.errors import UserError

PREFLIGHT_TIMEOUT_S = 30.0
PROBE = [{"role": "user", "content": "Reply with the word ready."}]
PROBE_TOOL = {
    "type": "function",
    "function": {
        "name": "ready",
        "description": "Say that you are ready.",
        "parameters": {"type": "object", "properties": {}},
    },
}


def check_base_url(url: str) -> None:
    """UserError unless `url` is an http(s) URL with a host."""
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise UserError(
            f"--base-url {url!r}: not an http(s) URL; give the endpoint's address, "
            "e.g. http://localhost:8000/v1"
        )


def check_endpoint(config: ModelConfig, timeout_s: float = PREFLIGHT_TIMEOUT_S) -> None:
    """Send one small chat completion as the agent would (with a tool unless text tools are
    used); UserError saying what is wrong and how to fix it when the endpoint cannot serve."""
    check_base_url(config.base_url)
    url = config.base_url
    limit = min(timeout_s, config.timeout_s)
    client = openai.OpenAI(
        base_url=url, api_key=resolve_api_key(config.api_key_env), timeout=limit, max_retries=0
    )
    request: dict = {"model": config.model, "messages": PROBE, "max_tokens": 16}
    if not config.text_tools:
        request["tools"] = [PROBE_TOOL]
    try:
        body = client.chat.completions.with_raw_response.create(**request).http_response.text
    except openai.APITimeoutError:
        raise UserError(
            f"--base-url {url}: no answer within {limit:g} s; check that the model server is up "
            "and not overloaded (--timeout sets the limit per request)"
        ) from None
    except openai.APIConnectionError as err:
        cause = str(err.__cause__ or err) or type(err).__name__
        raise UserError(
            f"--base-url {url}: cannot connect ({cause}); start the model server or fix the URL"
        ) from None
    except openai.APIStatusError as err:
        raise UserError(_status_message(config, err)) from None
    try:
        parse_completion(body, PROBE, url)
    except ModelError as err:
        raise UserError(f"--base-url {err}; is this an OpenAI-compatible endpoint?") from None


def _status_message(config: ModelConfig, err: openai.APIStatusError) -> str:
    url, code, detail = config.base_url, err.status_code, error_detail(err)
    said = f"HTTP {code}: {detail}"
    if code in (401, 403):
        return (
            f"--base-url {url} refuses the request ({said}); "
            "set --api-key-env to the variable holding its key"
        )
    if "tool" in detail.lower() and not config.text_tools:
        return (
            f"--base-url {url} does not accept tool calls ({said}); start the server with tool "
            "calling (vLLM: --enable-auto-tool-choice --tool-call-parser NAME) or pass --text-tools"
        )
    if "model" in detail.lower() and code in (400, 404):
        return (
            f"--model {config.model}: {url} does not serve it ({said}); "
            f"{url.rstrip('/')}/models lists the names it serves"
        )
    if code == 404:
        return (
            f"--base-url {url}: {said}; "
            "the URL should end where the API begins, e.g. http://host:8000/v1"
        )
    return f"--base-url {url}: {said}"
