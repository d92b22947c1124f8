"""Whole episodes against the scripted server: the loop, its budgets, its trajectory, resume."""

from __future__ import annotations

import json

import pytest

from cuda_agent.agent import (
    AgentConfig,
    OpenAIModel,
    initial_messages,
    load_trajectory,
    resume_episode,
    run_episode,
    skill_text,
)
from cuda_agent.agent.model import estimate_message_tokens
from cuda_agent.sandbox import Stage, Status

from .conftest import model_config
from .scripted import Fail, call, reply, text_call


def episode(serve, tmp_path, task, environment, script, text_tools=False, **config):
    server = serve(script)
    mconfig = model_config(server, text_tools=text_tools)
    result = run_episode(
        task,
        tmp_path / "ws",
        OpenAIModel(mconfig),
        environment,
        tmp_path / "trajectory.jsonl",
        AgentConfig(**config),
        mconfig,
    )
    return server, result, load_trajectory(tmp_path / "trajectory.jsonl")


def test_successful_episode(serve, tmp_path, task, environment, chain_files):
    writes = [call("write_file", path=p, content=t) for p, t in chain_files.items()]
    script = [
        reply(call("read_file", path="model.py"), content="First the reference."),
        reply(*writes),
        reply(call("compile")),
        reply(call("verify")),
        reply(call("submit"), content="Done."),
    ]
    server, result, record = episode(serve, tmp_path, task, environment, script)
    assert result.reason == "submitted" and result.turns == 5
    assert [t.index for t in record.turns] == [0, 1, 2, 3, 4]
    assert record.end.reason == "submitted" and record.end.reward == result.reward
    # what the model was told: the reference program came back as the read_file result
    assert server.requests[1]["messages"][-1]["content"] == task.code
    assert {t["function"]["name"] for t in server.requests[0]["tools"]} >= {"bash", "submit"}
    compiled, verified = record.turns[2].verdict, record.turns[3].verdict
    assert compiled.stage == Stage.COMPILE and compiled.compiled, compiled.message
    assert verified.stage == Stage.VERIFY
    if environment.has_gpu:
        assert verified.correct and result.best is not None and result.reward >= 1
    else:
        assert verified.status == Status.NO_GPU and result.best is None and result.reward == -1
    assert "[verify]" in record.turns[3].observations[0].content
    assert record.turns[1].files == chain_files
    # the trajectory converts to exactly the conversation the server saw
    messages = record.to_openai_messages()
    assert server.requests[-1]["messages"] == messages[: len(server.requests[-1]["messages"])]
    assert messages[-2]["tool_calls"][0]["function"]["name"] == "submit"
    assert messages[-1]["role"] == "tool" and record.tools == server.requests[0]["tools"]


def test_malformed_calls_are_answered_and_the_loop_goes_on(serve, tmp_path, task, environment):
    script = [
        reply(
            call("read_file", raw='{"path": "model.py"'),
            call("make_it_fast"),
            call("write_file", path="model_new.py"),
            call("read_file", path=["model.py"]),
        ),
        reply(call("submit")),
    ]
    server, result, record = episode(serve, tmp_path, task, environment, script)
    assert result.reason == "submitted" and result.turns == 2
    kinds = [o.error_kind for o in record.turns[0].observations]
    assert kinds == ["bad_json", "unknown_tool", "bad_arguments", "bad_arguments"]
    answers = [m for m in server.requests[1]["messages"] if m["role"] == "tool"]
    assert "not valid JSON" in answers[0]["content"]
    assert "unknown tool 'make_it_fast'" in answers[1]["content"]
    assert "missing required argument(s): content" in answers[2]["content"]
    assert "'path' must be a JSON string" in answers[3]["content"]
    assert record.turns[0].assistant.tool_calls[0].arguments == '{"path": "model.py"'


def test_refused_paths_in_an_episode(serve, tmp_path, task, environment):
    script = [
        reply(
            call("write_file", path="../escape.py", content="x"),
            call("edit_file", path="model.py", old_string="Model", new_string="Hacked"),
        ),
        reply(call("submit")),
    ]
    _, _, record = episode(serve, tmp_path, task, environment, script)
    assert [o.error_kind for o in record.turns[0].observations] == ["refused", "refused"]
    assert not (tmp_path / "escape.py").exists()
    assert (tmp_path / "ws" / "model.py").read_text() == task.code


def test_a_model_that_never_submits_runs_out_of_turns(serve, tmp_path, task, environment):
    script = [reply(call("list_files")), reply(content="thinking..."), reply(call("list_files"))]
    server, result, record = episode(serve, tmp_path, task, environment, script, max_turns=3)
    assert result.reason == "turn_budget" and result.turns == 3 and len(server.requests) == 3
    assert record.end.reason == "turn_budget" and record.end.best is None
    assert record.turns[1].assistant.tool_calls == []
    # a reply without a tool call is answered with a nudge, in the live loop as in the file
    assert server.requests[2]["messages"][-1]["role"] == "user"
    assert server.requests[2]["messages"] == record.to_openai_messages()[:-2]


def test_the_time_budget_ends_an_episode(serve, tmp_path, task, environment):
    server, result, _ = episode(
        serve, tmp_path, task, environment, [reply(call("list_files"))], max_seconds=0
    )
    assert result.reason == "time_budget" and result.turns == 0 and server.requests == []


def test_transient_server_errors_are_retried_within_the_episode(serve, tmp_path, task, environment):
    script = [reply(call("list_files")), Fail(503), Fail(503), reply(call("submit"))]
    server, result, record = episode(serve, tmp_path, task, environment, script)
    assert result.reason == "submitted" and result.turns == 2 and len(server.requests) == 4


def test_a_client_error_ends_the_episode_without_retry(serve, tmp_path, task, environment):
    script = [
        reply(call("list_files")),
        Fail(400, "context length exceeded"),
        reply(call("submit")),
    ]
    server, result, record = episode(serve, tmp_path, task, environment, script)
    assert result.reason == "model_error" and result.turns == 1 and len(server.requests) == 2
    assert "HTTP 400: context length exceeded" in record.end.message


def test_text_protocol_episode(serve, tmp_path, task, environment):
    script = [
        reply(content="Looking.\n" + text_call("read_file", path="model.py")),
        reply(content=text_call("list_files") + '\n<tool_call>{"name": "grep", </tool_call>'),
        reply(content=text_call("submit")),
    ]
    server, result, record = episode(serve, tmp_path, task, environment, script, text_tools=True)
    assert result.reason == "submitted" and result.turns == 3
    first = server.requests[0]
    assert "tools" not in first and "<tool_call>" in first["messages"][0]["content"]
    answer = server.requests[1]["messages"][-1]
    assert answer["role"] == "user" and answer["content"].startswith(
        '<tool_result name="read_file"'
    )
    assert task.code in answer["content"]
    assert record.turns[0].assistant.content == "Looking."
    assert [o.error_kind for o in record.turns[1].observations] == [None, "bad_json"]
    # the trajectory is stored the same way as native calls, and converts to native messages
    converted = record.to_openai_messages()
    assert converted[2]["tool_calls"][0]["function"]["name"] == "read_file"
    assert converted[3] == {"role": "tool", "tool_call_id": "call_0_0", "content": task.code}


def test_old_observations_are_shortened_near_the_context_limit(serve, tmp_path, task, environment):
    base = estimate_message_tokens(initial_messages(task, skill_text()))
    big = "bash", {"command": "yes abcdefg | head -c 8000"}  # 8000 characters, ~2000 tokens
    script = [reply(call(big[0], **big[1])) for _ in range(8)] + [reply(call("submit"))]
    server, result, record = episode(
        serve,
        tmp_path,
        task,
        environment,
        script,
        max_context_tokens=base + 8000,
        keep_recent_turns=1,
        reserve_tokens=500,
    )
    assert result.reason == "submitted" and result.turns == 9
    last = [m for m in server.requests[-1]["messages"] if m["role"] == "tool"]
    assert "shortened to fit the context" in last[0]["content"]
    assert len(last[-1]["content"]) > 8000  # the latest observation is whole
    assert all(len(o.content) > 8000 for t in record.turns[:-1] for o in t.observations)
    sizes = [sum(len(json.dumps(m)) for m in r["messages"]) // 4 for r in server.requests]
    assert max(sizes) < base + 8000


def test_an_interrupted_episode_resumes(serve, tmp_path, task, environment):
    script = [
        reply(call("write_file", path="kernels/a.cu", content="// v1\n")),
        reply(call("write_file", path="notes/plan.md", content="plan\n")),
        reply(call("bash", command="rm notes/plan.md && echo '// v2' > kernels/a.cu")),
        reply(call("list_files")),
    ]
    _, first, _ = episode(serve, tmp_path, task, environment, script)
    assert first.reason == "model_error"  # the script ran out
    path = tmp_path / "trajectory.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    # killed while writing turn 3: its line is cut short, no end record
    path.write_text("".join(lines[:4]) + lines[4][: len(lines[4]) // 2])
    truncated = load_trajectory(path)
    assert len(truncated.turns) == 3 and truncated.end is None

    server = serve([reply(call("read_file", path="kernels/a.cu")), reply(call("submit"))])
    result = resume_episode(path, tmp_path / "ws2", OpenAIModel(model_config(server)), environment)
    assert result.reason == "submitted" and result.turns == 5
    workspace = tmp_path / "ws2"
    assert (workspace / "kernels/a.cu").read_text() == "// v2\n"
    assert not (workspace / "notes/plan.md").exists()
    assert server.requests[0]["messages"] == truncated.to_openai_messages()
    final = load_trajectory(path)
    assert [t.index for t in final.turns] == [0, 1, 2, 3, 4] and final.end.reason == "submitted"
    assert final.turns[3].observations[0].content == "// v2\n"
    with pytest.raises(Exception, match="already ended"):
        resume_episode(path, tmp_path / "ws3", OpenAIModel(model_config(server)), environment)


def test_a_task_too_large_for_the_context_says_so_before_any_request(
    serve, tmp_path, task, environment
):
    server, result, record = episode(
        serve, tmp_path, task, environment, [reply(call("submit"))], max_context_tokens=1000
    )
    assert result.reason == "token_budget" and result.turns == 0
    assert server.requests == []  # nothing was sent that could not fit
    assert "the task's prompt alone is about" in result.message
    assert "too large for the context of 1000 tokens" in result.message
    assert record.end.message == result.message
