"""The text tool-call protocol: parsing blocks out of replies, and rendering them back."""

from __future__ import annotations

import json

from cuda_agent.agent import ModelReply, NativeTools, Observation, TextTools, ToolCall
from cuda_agent.agent.protocol import assistant_record


def text_reply(content: str) -> ModelReply:
    return ModelReply(content, (), 10, 10, False)


def test_blocks_become_calls_and_leave_the_content():
    content = (
        "I will read the reference first.\n"
        '<tool_call>\n{"name": "read_file", "arguments": {"path": "model.py"}}\n</tool_call>\n'
        '<tool_call>{"name": "list_files", "arguments": {}}</tool_call>'
    )
    text, calls = TextTools().parse(text_reply(content), turn=4)
    assert text == "I will read the reference first."
    assert [(c.id, c.name, json.loads(c.arguments)) for c in calls] == [
        ("call_4_0", "read_file", {"path": "model.py"}),
        ("call_4_1", "list_files", {}),
    ]


def test_broken_blocks_keep_their_text_for_the_error_observation():
    content = (
        '<tool_call>{"name": "write_file", "arguments": {"path": "a.cu", </tool_call>'
        '<tool_call>{"arguments": {"path": "a"}}</tool_call>'
        '<tool_call>{"name": "bash", "arguments": "{\\"command\\": \\"ls\\"}"}</tool_call>'
        '<tool_call>{"name": "grep", "arguments": {"pattern": "x"}}'  # never closed
    )
    _, calls = TextTools().parse(text_reply(content), turn=0)
    broken, nameless, stringly, unclosed = calls
    assert broken.name == "write_file" and broken.arguments.startswith('{"name": "write_file"')
    assert nameless.name == "" and json.loads(nameless.arguments) == {"path": "a"}
    assert stringly.name == "bash" and json.loads(stringly.arguments) == {"command": "ls"}
    assert unclosed.name == "grep" and json.loads(unclosed.arguments) == {"pattern": "x"}


def test_rendering_round_trips_through_parsing():
    protocol = TextTools()
    calls = [
        ToolCall("call_1_0", "write_file", json.dumps({"path": "a.cu", "content": "x\n"})),
        # a block that was broken when the model sent it keeps its whole text as arguments
        ToolCall("call_1_1", "bash", '{"name": "bash", "arguments": {"command":'),
    ]
    message = protocol.assistant_message(assistant_record("thinking", calls))
    text, parsed = protocol.parse(text_reply(message["content"]), turn=1)
    assert text == "thinking"
    assert [(c.name, c.arguments) for c in parsed[:1]] == [(calls[0].name, calls[0].arguments)]
    assert parsed[1].name == "bash" and parsed[1].arguments == calls[1].arguments


def test_results_travel_as_one_user_message_of_blocks():
    observations = [
        Observation(tool_call_id="call_0_0", name="bash", content="ok", ok=True),
        Observation(tool_call_id="call_0_1", name="grep", content="none", ok=True),
    ]
    (message,) = TextTools().result_messages(observations)
    assert message["role"] == "user"
    assert '<tool_result name="bash" id="call_0_0">\nok\n</tool_result>' in message["content"]
    native = NativeTools().result_messages(observations)
    assert [m["role"] for m in native] == ["tool", "tool"]
    assert native[1] == {"role": "tool", "tool_call_id": "call_0_1", "content": "none"}


def test_native_calls_get_unique_ids():
    reply = ModelReply(
        None,
        (ToolCall("", "a", "{}"), ToolCall("x", "b", "{}"), ToolCall("x", "c", "{}")),
        1,
        1,
        False,
    )
    _, calls = NativeTools().parse(reply, turn=7)
    assert [c.id for c in calls] == ["call_7_0", "x", "call_7_2"]


def test_text_mode_documents_the_protocol_and_sends_no_tools():
    schemas = [
        {
            "type": "function",
            "function": {"name": "submit", "description": "End.", "parameters": {}},
        }
    ]
    protocol = TextTools()
    assert protocol.request_tools(schemas) is None
    addendum = protocol.system_addendum(schemas)
    assert "<tool_call>" in addendum and "- submit: End." in addendum
    assert (
        NativeTools().request_tools(schemas) == schemas
        and NativeTools().system_addendum(schemas) == ""
    )
