"""The endpoint's pre-flight: one request, and one line for each way an endpoint cannot serve."""

from __future__ import annotations

import socket

import pytest

from cuda_agent.agent import ModelConfig, check_endpoint
from cuda_agent.errors import UserError

from .conftest import model_config
from .scripted import Delay, Fail, Raw, reply


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again before the client connects
    return f"http://127.0.0.1:{port}/v1"


def one_line(err: pytest.ExceptionInfo) -> str:
    text = str(err.value)
    assert "\n" not in text
    return text


def test_a_serving_endpoint_passes_with_one_small_request_like_the_agents(serve):
    server = serve([reply(content="ready")])
    check_endpoint(model_config(server))
    (sent,) = server.requests
    assert sent["model"] == "scripted" and sent["max_tokens"] <= 16
    assert [t["function"]["name"] for t in sent["tools"]] == ["ready"]


def test_text_tools_send_no_tools(serve):
    server = serve([reply(content="ready")])
    check_endpoint(model_config(server, text_tools=True))
    assert "tools" not in server.requests[0]


def test_unreachable():
    url = closed_port_url()
    with pytest.raises(UserError) as err:
        check_endpoint(ModelConfig(model="m", base_url=url))
    assert one_line(err).startswith(f"--base-url {url}: cannot connect")


def test_a_server_that_never_answers(serve):
    server = serve([Delay(3.0, reply(content="late"))])
    with pytest.raises(UserError) as err:
        check_endpoint(model_config(server), timeout_s=0.5)
    assert "no answer within 0.5 s" in one_line(err)
    assert len(server.requests) == 1


def test_a_wrong_model_name(serve):
    server = serve([Fail(404, "The model `scripted` does not exist.")])
    with pytest.raises(UserError) as err:
        check_endpoint(model_config(server))
    assert one_line(err).startswith(f"--model scripted: {server.url} does not serve it")


def test_an_answer_that_is_not_json(serve):
    server = serve([Raw("this is {not json")])
    with pytest.raises(UserError) as err:
        check_endpoint(model_config(server))
    assert "the reply is not JSON; it begins 'this is {not json'" in one_line(err)


def test_no_tool_calling(serve):
    message = '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser'
    server = serve([Fail(400, message)])
    with pytest.raises(UserError) as err:
        check_endpoint(model_config(server))
    assert "does not accept tool calls" in one_line(err) and "--text-tools" in str(err.value)


def test_not_a_url_is_refused_before_any_request():
    with pytest.raises(UserError) as err:
        check_endpoint(ModelConfig(model="m", base_url="not-a-url"))
    assert one_line(err).startswith("--base-url 'not-a-url': not an http(s) URL")
