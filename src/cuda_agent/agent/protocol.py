"""How tool calls travel between the loop and the model: natively (the `tools` field of the
request, `tool_calls` and `tool` messages), or as text blocks for endpoints without tool calling:

    <tool_call>
    {"name": "read_file", "arguments": {"path": "model.py"}}
    </tool_call>

with the results sent back in one user message of <tool_result> blocks. The trajectory stores
calls the same way for both (content without the blocks, calls with raw JSON arguments)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from cuda_agent.agent.model import ModelReply, ToolCall
from cuda_agent.agent.trajectory import NO_TOOL_CALL, AssistantRecord, Observation, ToolCallRecord
from cuda_agent.agent.trajectory import assistant_message as native_assistant_message

_BLOCK = re.compile(r"<tool_call>(.*?)(?:</tool_call>|\Z)", re.DOTALL)
_NAME = re.compile(r'"name"\s*:\s*"([^"\\]+)"')


def assistant_record(content: str | None, calls: list[ToolCall]) -> AssistantRecord:
    return AssistantRecord(
        content=content,
        tool_calls=[ToolCallRecord(id=c.id, name=c.name, arguments=c.arguments) for c in calls],
    )


@dataclass(frozen=True)
class NativeTools:
    """Tool calls through the API's own fields (vLLM with a tool parser, SGLang, hosted APIs)."""

    text_tools = False

    def request_tools(self, schemas: list[dict]) -> list[dict] | None:
        return schemas

    def system_addendum(self, schemas: list[dict]) -> str:
        return ""

    def parse(self, reply: ModelReply, turn: int) -> tuple[str | None, list[ToolCall]]:
        calls, seen = [], set()
        for i, call in enumerate(reply.tool_calls):
            # Some servers send no ids or repeat them; every call needs its own for its result.
            unique = call.id if call.id and call.id not in seen else f"call_{turn}_{i}"
            seen.add(unique)
            calls.append(ToolCall(id=unique, name=call.name, arguments=call.arguments))
        return reply.content, calls

    def assistant_message(self, record: AssistantRecord) -> dict:
        return native_assistant_message(record)

    def result_messages(self, observations: list[Observation]) -> list[dict]:
        if not observations:
            return [{"role": "user", "content": NO_TOOL_CALL}]
        return [
            {"role": "tool", "tool_call_id": o.tool_call_id, "content": o.content}
            for o in observations
        ]


@dataclass(frozen=True)
class TextTools:
    """Tool calls as <tool_call> blocks in plain text, documented in the system prompt."""

    text_tools = True

    def request_tools(self, schemas: list[dict]) -> list[dict] | None:
        return None

    def system_addendum(self, schemas: list[dict]) -> str:
        listing = "\n".join(
            f"- {s['function']['name']}: {s['function']['description']}\n"
            f"  parameters: {json.dumps(s['function']['parameters'])}"
            for s in schemas
        )
        return (
            "\n\n# Calling tools\n"
            "Call a tool by writing a block like this in your reply:\n\n"
            "<tool_call>\n"
            '{"name": "read_file", "arguments": {"path": "model.py"}}\n'
            "</tool_call>\n\n"
            'Each block holds one JSON object with "name" and "arguments" (an object). Several '
            "blocks run in order. Results come back in the next message as "
            '<tool_result name="..." id="..."> blocks. The tools:\n' + listing
        )

    def parse(self, reply: ModelReply, turn: int) -> tuple[str | None, list[ToolCall]]:
        text = reply.content or ""
        calls = [
            _block_call(body, f"call_{turn}_{i}") for i, body in enumerate(_BLOCK.findall(text))
        ]
        offset = len(calls)
        calls += [
            ToolCall(id=f"call_{turn}_{offset + i}", name=c.name, arguments=c.arguments)
            for i, c in enumerate(reply.tool_calls)
        ]
        content = _BLOCK.sub("", text).strip() or None
        return content, calls

    def assistant_message(self, record: AssistantRecord) -> dict:
        blocks = [f"<tool_call>\n{_render(c)}\n</tool_call>" for c in record.tool_calls]
        text = "\n".join(([record.content] if record.content else []) + blocks)
        return {"role": "assistant", "content": text}

    def result_messages(self, observations: list[Observation]) -> list[dict]:
        if not observations:
            return [{"role": "user", "content": NO_TOOL_CALL}]
        blocks = [
            f'<tool_result name="{o.name}" id="{o.tool_call_id}">\n{o.content}\n</tool_result>'
            for o in observations
        ]
        return [{"role": "user", "content": "\n\n".join(blocks)}]


def _block_call(body: str, call_id: str) -> ToolCall:
    """A block whose JSON is broken keeps its raw text as `arguments`, so the tool reports it."""
    try:
        parsed = json.loads(body)
    except json.JSONDecodeError:
        found = _NAME.search(body)
        return ToolCall(id=call_id, name=found.group(1) if found else "", arguments=body.strip())
    if not isinstance(parsed, dict):
        return ToolCall(id=call_id, name="", arguments=json.dumps(parsed))
    name = parsed.get("name")
    arguments = parsed.get("arguments", {})
    if isinstance(arguments, str):  # some models send the arguments as a JSON string
        raw = arguments
    else:
        raw = json.dumps(arguments)
    return ToolCall(id=call_id, name=name if isinstance(name, str) else "", arguments=raw)


def _render(call: ToolCallRecord) -> str:
    try:
        arguments = json.loads(call.arguments)
    except json.JSONDecodeError:
        return call.arguments  # the broken block as the model wrote it
    return json.dumps({"name": call.name, "arguments": arguments})


def protocol_for(text_tools: bool) -> NativeTools | TextTools:
    return TextTools() if text_tools else NativeTools()
