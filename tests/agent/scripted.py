"""A scripted model server: the OpenAI chat-completions protocol over real HTTP on 127.0.0.1.

It answers each POST /v1/chat/completions with the next item of its script (a reply, an HTTP
error, a body sent as is, or a delay before a reply) and records every request body, so a test
can check what the agent sent as well as what it did with the answers.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass(frozen=True)
class Reply:
    content: str | None = None
    tool_calls: tuple[dict, ...] = ()
    usage: bool = True  # report token usage (estimated from the request) like real servers


@dataclass(frozen=True)
class Fail:
    status: int
    message: str = "scripted failure"
    headers: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Raw:
    """A 200 response whose body is `body`, as is (not a chat completion, or not JSON at all)."""

    body: str


@dataclass(frozen=True)
class Delay:
    seconds: float
    then: Reply


def call(name: str, *, raw: str | None = None, id: str | None = None, **arguments) -> dict:
    """A native tool call; `raw` sends arguments text as is (e.g. broken JSON)."""
    return {"name": name, "arguments": raw if raw is not None else json.dumps(arguments), "id": id}


def reply(*calls: dict, content: str | None = None, usage: bool = True) -> Reply:
    return Reply(content=content, tool_calls=calls, usage=usage)


def text_call(name: str, **arguments) -> str:
    """A tool call in the text protocol."""
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


class ScriptedServer:
    def __init__(self, script: list):
        self.script = list(script)
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server._lock:
                    server.requests.append(body)
                    server.headers.append({k.lower(): v for k, v in self.headers.items()})
                    item = server.script.pop(0) if server.script else Fail(400, "script exhausted")
                if isinstance(item, Delay):
                    time.sleep(item.seconds)
                    item = item.then
                if isinstance(item, Fail):
                    payload = {"error": {"message": item.message, "type": "scripted"}}
                    self._send(item.status, payload, item.headers)
                elif isinstance(item, Raw):
                    self._send(200, None, {}, item.body.encode())
                else:
                    self._send(200, _completion(body, item), {})

            def _send(self, status: int, payload, headers: dict, data: bytes = b"") -> None:
                data = data or json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for key, value in headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

            def log_message(self, *args):
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def _completion(request: dict, item: Reply) -> dict:
    calls = [
        {
            "id": c["id"] or f"srv_{i}",
            "type": "function",
            "function": {"name": c["name"], "arguments": c["arguments"]},
        }
        for i, c in enumerate(item.tool_calls)
    ]
    message: dict = {"role": "assistant", "content": item.content}
    if calls:
        message["tool_calls"] = calls
    response = {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.get("model", "scripted"),
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if calls else "stop",
            }
        ],
    }
    if item.usage:
        prompt = sum(len(json.dumps(m)) for m in request["messages"]) // 4
        completion = (
            len(item.content or "") + sum(len(c["function"]["arguments"]) for c in calls)
        ) // 4
        response["usage"] = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }
    return response
