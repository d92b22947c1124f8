"""A scripted rollout engine: an OpenAI-style server on 127.0.0.1, and the Ray actor that gives
veRL's LLMServerClient the server-handle interface of its vLLM/SGLang replicas
(`generate(request_id, prompt_ids, sampling_params, ...) -> TokenOutput`).

/v1/completions takes token-id prompts (`prompt: [ids]`, `return_token_ids`, as vLLM does);
/v1/chat/completions answers chat requests with native tool calls, parsed from the script's
<tool_call> blocks as vLLM's hermes parser does (a block that is not JSON stays in the content).
Each episode is answered from its script: recognised by the task name in its prompt, the turn by
the number of assistant turns already in it. Every request is kept for the test to inspect.
"""

from __future__ import annotations

import json
import re
import threading
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import ray

ASSISTANT_TURN = "<|im_start|>assistant"
EOS = "<|im_end|>"
_TASK = re.compile(r"Task `([^`]+)`")
_BLOCK = re.compile(r"\n?<tool_call>\n(.*?)\n</tool_call>", re.DOTALL)


class ScriptedCompletions:
    def __init__(self, tokenizer, scripts: dict[str, list[str]]):
        """`scripts`: task name -> the replies of its episode, in order."""
        self.tokenizer = tokenizer
        self.scripts = scripts
        self.requests: list[dict] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address
        return f"http://{host}:{port}"

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._httpd.shutdown()
        self._httpd.server_close()

    def complete(self, body: dict) -> dict:
        prompt = self.tokenizer.decode(body["prompt"], skip_special_tokens=False)
        task = _TASK.search(prompt).group(1)
        turn = prompt.count(ASSISTANT_TURN) - 1
        ids = self.tokenizer.encode(self.scripts[task][turn], add_special_tokens=False)
        finish = "stop"
        if len(ids) > body["max_tokens"]:
            ids, finish = ids[: body["max_tokens"]], "length"
        with self._lock:
            self.requests.append({"task": task, "turn": turn, "prompt": prompt, "body": body})
        return {
            "id": f"cmpl-{len(self.requests)}",
            "object": "text_completion",
            "model": body.get("model", "scripted"),
            "choices": [
                {
                    "index": 0,
                    "text": self.tokenizer.decode(ids, skip_special_tokens=False),
                    "token_ids": ids,
                    "logprobs": {"token_logprobs": [-0.5] * len(ids)},
                    "finish_reason": finish,
                }
            ],
            "usage": {"prompt_tokens": len(body["prompt"]), "completion_tokens": len(ids)},
        }

    def chat(self, body: dict) -> dict:
        messages = body["messages"]
        task = next(
            _TASK.search(m["content"]).group(1)
            for m in messages
            if _TASK.search(m.get("content") or "")
        )
        turn = sum(m["role"] == "assistant" for m in messages)
        text = self.scripts[task][turn].removesuffix(EOS)
        calls = []
        for i, block in enumerate(_BLOCK.findall(text)):
            try:
                parsed = json.loads(block)
            except json.JSONDecodeError:
                continue
            arguments = json.dumps(parsed["arguments"])
            calls.append(
                {
                    "id": f"call-{turn}-{i}",
                    "type": "function",
                    "function": {"name": parsed["name"], "arguments": arguments},
                }
            )
            text = text.replace(f"\n<tool_call>\n{block}\n</tool_call>", "").replace(
                f"<tool_call>\n{block}\n</tool_call>", ""
            )
        with self._lock:
            self.requests.append({"task": task, "turn": turn, "messages": messages, "body": body})
        message = {"role": "assistant", "content": text or None, "tool_calls": calls or None}
        return {
            "id": f"chat-{len(self.requests)}",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "scripted"),
            "choices": [
                {"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}
            ],
            "usage": {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
        }

    def _handler(self):
        server = self
        routes = {"/v1/completions": server.complete, "/v1/chat/completions": server.chat}

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                if self.path != "/v1/models":
                    self.send_error(404)
                    return
                self._send({"object": "list", "data": [{"id": "policy", "object": "model"}]})

            def do_POST(self):
                if self.path not in routes:
                    self.send_error(404)
                    return
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                self._send(routes[self.path](body))

            def _send(self, answer: dict):
                payload = json.dumps(answer).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args):
                pass

        return Handler


@ray.remote
class CompletionsReplica:
    """What veRL's LLMServerClient calls on a rollout replica, answered by the HTTP server."""

    def __init__(self, url: str):
        self.url = url

    def generate(
        self, request_id, prompt_ids, sampling_params, image_data=None, video_data=None, **kwargs
    ):
        from verl.workers.rollout.replica import TokenOutput

        body = {
            "model": "policy",
            "prompt": list(prompt_ids),
            "max_tokens": int(sampling_params.get("max_tokens", 4096)),
            "temperature": sampling_params.get("temperature", 1.0),
            "logprobs": 0,
            "return_token_ids": True,
        }
        request = urllib.request.Request(
            f"{self.url}/v1/completions",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            choice = json.loads(response.read())["choices"][0]
        return TokenOutput(
            token_ids=choice["token_ids"],
            log_probs=choice["logprobs"]["token_logprobs"],
            stop_reason="completed" if choice["finish_reason"] == "stop" else "length",
        )
