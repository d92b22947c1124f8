"""`engine: hf`: an OpenAI-compatible chat-completions server on plain `transformers` generation.

For sampling on one GPU, or on a CPU in tests, where vLLM and SGLang cannot be installed (they
stay the production engines). It serves one model (`HFGenerator`, the one-GPU rollout's
sampler), one request at a time, with what `cuda-agent train sample` asks of a server:
`GET /v1/models`, `POST /v1/chat/completions` (messages, tools, temperature, top_p, max_tokens,
seed) and `GET /health`. The prompt is the model's own chat template with the request's tools;
the reply's `<tool_call>` blocks (the Hermes layout Qwen's templates use, which vLLM's `hermes`
parser reads) become the message's `tool_calls`, as vLLM returns them, so the agent speaks to it
as it speaks to vLLM. The standard library's HTTP server is enough for one sequential client
per generation; it needs none of vLLM's or FastAPI's packages.

    python -m cuda_agent.rl.hf_server --model DIR [--served-model-name policy] [--host H]
        [--port P] [--max-model-len N] [--device cuda|cpu] [--dtype bfloat16|float16|float32]
"""

from __future__ import annotations

import argparse
import json
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import torch

from cuda_agent.agent.model import ModelReply
from cuda_agent.agent.protocol import TextTools
from cuda_agent.rl.hf_generate import HFGenerator, SamplingSettings

_DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}
_MAX_BODY = 64 << 20


class RequestError(ValueError):
    """A request the server cannot answer: the message goes back as a 400."""


class ChatService:
    """The model, its tokenizer and chat template, and one completion at a time."""

    def __init__(self, generator: HFGenerator, tokenizer, name: str, max_model_len: int):
        self.generator, self.tokenizer, self.name = generator, tokenizer, name
        self.max_model_len = max_model_len
        self._lock = threading.Lock()
        self._calls = 0

    def complete(self, body: dict) -> dict:
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise RequestError("messages: a non-empty list of chat messages is required")
        tools = body.get("tools") or None
        try:
            prompt = self.tokenizer.apply_chat_template(
                _for_template(messages), tools=tools, add_generation_prompt=True, tokenize=True
            )
        except Exception as err:  # the template's own error names what it could not render
            raise RequestError(f"messages: the chat template cannot render them: {err}") from err
        prompt = list(prompt if isinstance(prompt, list) else prompt["input_ids"])
        room = self.max_model_len - len(prompt)
        if room <= 0:
            raise RequestError(
                f"the prompt is {len(prompt)} tokens, at or over --max-model-len "
                f"{self.max_model_len}"
            )
        settings = SamplingSettings(
            max_tokens=min(int(body.get("max_tokens") or body.get("max_completion_tokens") or room),
                           room),
            temperature=float(body.get("temperature", 1.0)),
            top_p=float(body.get("top_p", 1.0)),
            seed=body.get("seed"),
        )  # fmt: skip
        with self._lock:
            sampled = self.generator.generate(prompt, settings)
            self._calls += 1
            turn = self._calls
        ids = [t for t in sampled.token_ids if t not in self.generator.eos]
        text = self.tokenizer.decode(ids, skip_special_tokens=False)
        message = _message(text, turn) if tools else {"role": "assistant", "content": text}
        finish = (
            "tool_calls" if message.get("tool_calls") else "stop" if sampled.stopped else "length"
        )
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.name,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {
                "prompt_tokens": len(prompt),
                "completion_tokens": len(sampled.token_ids),
                "total_tokens": len(prompt) + len(sampled.token_ids),
            },
        }


def _for_template(messages: list) -> list[dict]:
    """The messages as chat templates read them: a tool call's arguments as an object."""
    out = []
    for m in messages:
        if not isinstance(m, dict) or "role" not in m:
            raise RequestError("messages: each message is an object with a role")
        calls = m.get("tool_calls")
        if calls:
            m = {**m, "tool_calls": [_call_for_template(c) for c in calls]}
        out.append({**m, "content": m.get("content") or ""})
    return out


def _call_for_template(call: dict) -> dict:
    function = dict(call.get("function") or {})
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        try:
            function["arguments"] = json.loads(arguments)
        except json.JSONDecodeError:
            pass  # rendered as the model wrote it
    return {**call, "function": function}


def _message(text: str, turn: int) -> dict:
    """The assistant message of generated `text`: its <tool_call> blocks as `tool_calls`."""
    content, calls = TextTools().parse(ModelReply(text, (), 0, 0, False), turn)
    message: dict = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [
            {
                "id": f"call_{uuid.uuid4().hex[:24]}",
                "type": "function",
                "function": {"name": c.name, "arguments": c.arguments},
            }
            for c in calls
        ]
    return message


def handler(service: ChatService) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
            if self.path.rstrip("/") == "/health":
                self._send(200, {"status": "ok"})
            elif self.path.rstrip("/") == "/v1/models":
                model = {"id": service.name, "object": "model", "owned_by": "cuda-agent"}
                self._send(200, {"object": "list", "data": [model]})
            else:
                self._send(404, _error(f"no route {self.path}"))

        def do_POST(self) -> None:  # noqa: N802
            if self.path.rstrip("/") != "/v1/chat/completions":
                self._send(404, _error(f"no route {self.path}"))
                return
            length = int(self.headers.get("Content-Length") or 0)
            if length <= 0 or length > _MAX_BODY:
                self._send(400, _error("a JSON body (at most 64 MiB) is required"))
                return
            try:
                body = json.loads(self.rfile.read(length))
                if not isinstance(body, dict):
                    raise RequestError("the body is a JSON object")
                self._send(200, service.complete(body))
            except (json.JSONDecodeError, RequestError, TypeError, ValueError) as err:
                self._send(400, _error(str(err)))
            except Exception as err:  # the model's own failure (memory, device): the client's 500
                self._send(500, _error(f"generation failed: {type(err).__name__}: {err}"))

        def _send(self, code: int, payload: dict) -> None:
            data = json.dumps(payload).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


def _error(message: str) -> dict:
    return {"error": {"message": message, "type": "invalid_request_error"}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True, help="an HF model folder")
    ap.add_argument("--served-model-name", default="policy")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8000)
    ap.add_argument("--max-model-len", type=int, default=131072)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--dtype", choices=sorted(_DTYPES), default="bfloat16")
    args = ap.parse_args(argv)
    from transformers import AutoTokenizer

    dtype = _DTYPES[args.dtype] if args.device != "cpu" else torch.float32
    generator = HFGenerator.from_pretrained(args.model, args.device, dtype)
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    service = ChatService(generator, tokenizer, args.served_model_name, args.max_model_len)
    server = ThreadingHTTPServer((args.host, args.port), handler(service))
    print(
        f"serving {args.model} as {args.served_model_name} on {args.host}:{args.port}", flush=True
    )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
