"""`engine: hf`: the OpenAI-compatible server on plain transformers, as a real process on the
CPU with the tiny model: its routes, its answers in the shape vLLM gives (tool calls parsed from
<tool_call> blocks), one line for a bad request, and `cuda-agent train sample` sampling agent
episodes from it."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import openai
import pytest
import yaml
from typer.testing import CliRunner

from cuda_agent.cli.main import build_app
from cuda_agent.errors import UserError
from cuda_agent.rl import CONFIG_DIR
from cuda_agent.rl.hf_server import _message
from cuda_agent.rl.sampling import ServerSettings, check_engine, server_command
from cuda_agent.task import BUILTIN_DIR

TOOL = {
    "type": "function",
    "function": {
        "name": "read_file",
        "description": "read a file of the workspace",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
    },
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tiny_model, tmp_path_factory):
    port = _free_port()
    log = (tmp_path_factory.mktemp("hf-server") / "server.log").open("wb")
    cmd = [sys.executable, "-m", "cuda_agent.rl.hf_server", "--model", str(tiny_model)]
    cmd += ["--port", str(port), "--device", "cpu", "--max-model-len", "8192"]
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, Path(log.name).read_text()
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=2) as reply:
                    if json.loads(reply.read())["status"] == "ok":
                        break
            except OSError:
                assert time.monotonic() < deadline, "the server did not start in 120 s"
                time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


def test_tool_call_blocks_become_tool_calls_and_the_rest_stays_content():
    call = '{"name": "read_file", "arguments": {"path": "model.py"}}'
    text = f"Looking.\n<tool_call>\n{call}\n</tool_call>"
    message = _message(text, 1)
    assert message["content"] == "Looking."
    [call] = message["tool_calls"]
    assert call["type"] == "function" and call["function"]["name"] == "read_file"
    assert json.loads(call["function"]["arguments"]) == {"path": "model.py"}
    assert "tool_calls" not in _message("no call here", 2)


def test_the_server_answers_as_an_openai_endpoint(server):
    client = openai.OpenAI(base_url=f"{server}/v1", api_key="none")
    assert [m.id for m in client.models.list()] == ["policy"]
    reply = client.chat.completions.create(
        model="policy",
        messages=[{"role": "system", "content": "You write kernels."},
                  {"role": "user", "content": "Task `relu`: write it."}],
        tools=[TOOL], max_tokens=12, seed=7,
    )  # fmt: skip
    choice = reply.choices[0]
    assert choice.message.role == "assistant"
    assert choice.finish_reason in ("stop", "length", "tool_calls")
    assert 1 <= reply.usage.completion_tokens <= 12 and reply.usage.prompt_tokens > 20
    again = client.chat.completions.create(
        model="policy", messages=[{"role": "user", "content": "Task `relu`: write it."}],
        max_tokens=12, seed=7,
    )  # fmt: skip
    seeded = client.chat.completions.create(
        model="policy", messages=[{"role": "user", "content": "Task `relu`: write it."}],
        max_tokens=12, seed=7,
    )  # fmt: skip
    assert again.choices[0].message.content == seeded.choices[0].message.content


def test_a_bad_request_is_one_clear_line(server):
    client = openai.OpenAI(base_url=f"{server}/v1", api_key="none")
    with pytest.raises(openai.BadRequestError) as err:
        client.chat.completions.create(model="policy", messages=[])
    assert "messages: a non-empty list" in str(err.value)


def test_train_sample_samples_agent_episodes_from_it(server, tiny_model, tmp_path):
    config = yaml.safe_load((CONFIG_DIR / "sample_1gpu.yaml").read_text())
    assert config["server"]["engine"] == "hf"
    config["sampling"].update(samples_per_task=1, max_turns=2, max_tokens=16)
    config["evaluator"] = {"factory": "tests.rl.evaluators:ScriptedEvaluator", "kwargs": {}}
    (tmp_path / "sample.yaml").write_text(yaml.safe_dump(config))
    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks" / "relu.py").write_text((BUILTIN_DIR / "elementwise_chain.py").read_text())
    args = ["train", "sample", "--config", str(tmp_path / "sample.yaml")]
    args += ["--run-dir", str(tmp_path / "run"), "--tasks", str(tmp_path / "tasks")]
    args += ["--base-url", f"{server}/v1", "--model", str(tiny_model)]
    result = CliRunner().invoke(build_app(), args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    [line] = [
        json.loads(x) for x in (tmp_path / "run/sample/episodes.jsonl").read_text().splitlines()
    ]
    assert line["task"] == "relu" and 1 <= line["turns"] <= 2, line


def test_the_hf_engine_is_served_by_this_package():
    server = ServerSettings(engine="hf", model="/models/tiny", port=8123)
    command = server_command(server)
    assert command[:3] == [sys.executable, "-m", "cuda_agent.rl.hf_server"]
    assert command[command.index("--port") + 1] == "8123"
    with pytest.raises(UserError, match="hermes tool calls only"):
        server_command(server.model_copy(update={"tool_call_parser": "qwen25"}))


def test_an_engine_that_is_not_installed_is_one_line(monkeypatch):
    monkeypatch.setattr("cuda_agent.rl.sampling.shutil.which", lambda name: None)
    with pytest.raises(UserError) as err:
        check_engine(ServerSettings(engine="vllm", model="m"))
    assert "vllm is not installed here" in str(err.value) and "engine: hf" in str(err.value)
    check_engine(ServerSettings(engine="hf", model="m"))  # nothing to install
