"""The model client against a scripted OpenAI-protocol server on loopback."""

from __future__ import annotations

import json
import re
import socket

import pytest

from cuda_agent.agent import ModelConfig, ModelError, OpenAIModel
from cuda_agent.errors import UserError

from .conftest import model_config
from .scripted import Delay, Fail, Raw, call, reply

HELLO = [{"role": "user", "content": "hello"}]
TOOLS = [
    {
        "type": "function",
        "function": {"name": "submit", "description": "end", "parameters": {"type": "object"}},
    }
]


def test_native_tool_calls_and_usage(serve):
    server = serve([reply(call("submit", id="abc"), content="done")])
    answer = OpenAIModel(model_config(server)).complete(HELLO, TOOLS)
    assert answer.content == "done"
    assert [(c.id, c.name, c.arguments) for c in answer.tool_calls] == [("abc", "submit", "{}")]
    assert not answer.tokens_estimated and answer.prompt_tokens > 0
    sent = server.requests[0]
    assert sent["model"] == "scripted" and sent["messages"] == HELLO and sent["tools"] == TOOLS


def test_missing_usage_is_estimated(serve):
    server = serve([reply(content="x" * 400, usage=False)])
    answer = OpenAIModel(model_config(server)).complete(HELLO, None)
    assert answer.tokens_estimated and answer.completion_tokens == 100
    assert "tools" not in server.requests[0]


def test_transient_errors_are_retried(serve):
    server = serve([Fail(503), Fail(503), reply(content="ok")])
    assert OpenAIModel(model_config(server)).complete(HELLO, None).content == "ok"
    assert len(server.requests) == 3


def test_rate_limit_honours_retry_after(serve):
    server = serve([Fail(429, headers={"Retry-After": "0"}), reply(content="ok")])
    assert OpenAIModel(model_config(server)).complete(HELLO, None).content == "ok"
    assert len(server.requests) == 2


def test_client_errors_are_not_retried(serve):
    server = serve([Fail(400, "model 'x' does not exist"), reply(content="never")])
    with pytest.raises(ModelError, match="HTTP 400: model 'x' does not exist"):
        OpenAIModel(model_config(server)).complete(HELLO, None)
    assert len(server.requests) == 1


def test_retries_run_out(serve):
    server = serve([Fail(500)] * 10)
    with pytest.raises(ModelError, match="still failing after 3 attempts"):
        OpenAIModel(model_config(server, max_retries=2)).complete(HELLO, None)
    assert len(server.requests) == 3


def test_a_request_past_its_timeout_is_retried(serve):
    server = serve([Delay(2.0, reply(content="late")), reply(content="on time")])
    answer = OpenAIModel(model_config(server, timeout_s=0.3)).complete(HELLO, None)
    assert answer.content == "on time" and len(server.requests) == 2


def test_connection_errors_are_retried_then_fail():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again before the client connects
    config = ModelConfig(
        model="m", base_url=f"http://127.0.0.1:{port}/v1", max_retries=1, backoff_s=0.01
    )
    with pytest.raises(ModelError, match="2 attempts: APIConnectionError"):
        OpenAIModel(config).complete(HELLO, None)


def test_api_key_comes_from_the_named_variable(serve, monkeypatch):
    server = serve([reply(content="ok")])
    monkeypatch.setenv("SCRIPTED_KEY", "sk-from-env")
    OpenAIModel(model_config(server, api_key_env="SCRIPTED_KEY")).complete(HELLO, None)
    assert server.headers[0]["authorization"] == "Bearer sk-from-env"
    monkeypatch.delenv("SCRIPTED_KEY")
    with pytest.raises(UserError, match="SCRIPTED_KEY: that environment variable is not set"):
        OpenAIModel(model_config(server, api_key_env="SCRIPTED_KEY"))


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ("this is {not json", "not JSON; it begins 'this is {not json'"),
        ('{"choices": "none"}', "has no choices"),
        ("[1, 2]", "has no choices"),
        ('{"choices": [{"message": 5}]}', "choice has no message"),
        ('{"choices": [{"message": {"content": 7}}]}', "message is malformed"),
    ],
)
def test_a_malformed_body_is_a_model_error_quoting_it(serve, body, said):
    server = serve([Raw(body), reply(content="never asked")])
    with pytest.raises(ModelError, match=re.escape(said)):
        OpenAIModel(model_config(server)).complete(HELLO, None)
    assert len(server.requests) == 1  # not retried: the server answered, wrongly


def test_tool_arguments_sent_as_an_object_become_json_text(serve):
    body = {
        "choices": [
            {
                "message": {
                    "content": None,
                    "tool_calls": [{"id": "a", "function": {"name": "submit", "arguments": {}}}],
                },
                "finish_reason": "tool_calls",
            }
        ]
    }
    server = serve([Raw(json.dumps(body))])
    answer = OpenAIModel(model_config(server)).complete(HELLO, TOOLS)
    assert [(c.name, c.arguments) for c in answer.tool_calls] == [("submit", "{}")]
    assert answer.tokens_estimated


def test_a_hung_server_costs_two_timeouts_not_every_retry(serve):
    server = serve([Delay(2.0, reply(content="late"))] * 2 + [reply(content="on time")])
    with pytest.raises(ModelError, match="no answer within 0.3 s, 2 times"):
        OpenAIModel(model_config(server, timeout_s=0.3, max_retries=5)).complete(HELLO, None)
    assert len(server.requests) == 2


def test_the_default_request_timeout_fits_one_completion():
    assert 60 <= ModelConfig(model="m", base_url="http://x").timeout_s <= 300
