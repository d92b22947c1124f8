"""The LLM composer against a real chat-completions server on 127.0.0.1."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from cuda_agent.sandbox import run_isolated
from cuda_agent.synth import OpenAIChat, Pipeline, SynthConfig, llm_compose
from cuda_agent.synth.filters import FilterConfig, eager_check
from cuda_agent.synth.llm import extract_code
from tests.conftest import FIXTURE_KERNELBENCH_JSONL
from tests.synth.programs import program

# What the "model" writes, whatever it is asked for: the labels must follow this code.
WRITTEN = program(
    init="self.proj = nn.Linear(64, 48)\nself.norm = nn.LayerNorm(48)",
    forward="x = self.proj(x)\nx = torch.tanh(x)\nx = self.norm(x)\nreturn torch.amax(x, dim=-1)",
    inputs="torch.randn(16, 24, 64)",
)
WRITTEN_LABELS = ["torch.nn.Linear", "torch.tanh", "torch.nn.LayerNorm", "torch.amax"]


class ChatServer:
    """Speaks POST /v1/chat/completions; replies with `reply`, or fails with `status`."""

    def __init__(self, reply: str, status: int = 200):
        self.requests: list[dict] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append({"path": self.path, **body})
                if status != 200:
                    self.send_response(status)
                    self.end_headers()
                    return
                payload = json.dumps({
                    "id": "c1", "object": "chat.completion", "created": 0,
                    "model": body["model"],
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": reply}}],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                }).encode()  # fmt: skip
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_port}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def test_the_model_is_asked_for_sampled_operators_and_its_program_kept(catalog):
    reply = f"Here it is:\n```python\n{WRITTEN}```\nEnjoy."
    with ChatServer(reply) as server:
        rec = llm_compose(OpenAIChat(server.url, "test-model"), catalog, 0, 5, "cpu")
    assert rec["ok"] and rec["code"] == WRITTEN
    sent = server.requests[0]
    assert sent["path"] == "/v1/chat/completions" and sent["model"] == "test-model"
    assert [m["role"] for m in sent["messages"]] == ["system", "user"]
    assert all(op in sent["messages"][1]["content"] for op in rec["intended"])
    assert rec["intended"] != WRITTEN_LABELS


def test_labels_of_a_model_written_program_are_traced_not_asked_for(catalog):
    with ChatServer(f"```python\n{WRITTEN}```") as server:
        rec = llm_compose(OpenAIChat(server.url, "m"), catalog, 0, 9, "cpu")
    res = run_isolated(eager_check, (rec["code"], FilterConfig(window_ms=(0, 1e6))), timeout_s=300)
    assert res.ok and res.value["ok"], res
    assert res.value["ops"] == WRITTEN_LABELS


def test_replies_that_are_not_programs_and_server_errors_lose_one_candidate(catalog):
    with ChatServer("I cannot help with that.") as server:
        rec = llm_compose(OpenAIChat(server.url, "m"), catalog, 0, 1, "cpu")
    assert not rec["ok"] and rec["reason"] == "not a program"
    with ChatServer("", status=500) as server:
        rec = llm_compose(OpenAIChat(server.url, "m", timeout_s=5), catalog, 0, 1, "cpu")
    assert not rec["ok"] and rec["reason"] == "llm error"


def test_extract_code_takes_the_last_fenced_block():
    text = "```python\nfirst = 1\n```\nthen\n```py\nsecond = 2\n```"
    assert extract_code(text) == "second = 2\n"
    assert extract_code("plain = 3") == "plain = 3\n"


def test_a_run_with_the_llm_composer_exports_its_program(catalog, synth_cache, tmp_path):
    with ChatServer(f"```python\n{WRITTEN}```") as server:
        cfg = SynthConfig(
            n=1, out=tmp_path / "run", device="cpu", workers=2, seed=0, max_candidates=3,
            kernelbench=FIXTURE_KERNELBENCH_JSONL, cache_dir=synth_cache, llm_base_url=server.url,
            llm_model="m", llm_fraction=1.0,
        )  # fmt: skip
        result = Pipeline(cfg).run()
    assert len(server.requests) == 3
    rows = [json.loads(line) for line in (tmp_path / "run" / "tasks.jsonl").read_text().split("\n")
            if line]  # fmt: skip
    assert len(rows) == 1 and rows[0]["composer"] == "llm"
    assert json.loads(rows[0]["ops"]) == WRITTEN_LABELS
    assert result.summary["dedup"] == {"duplicate source": 2}


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch):
    """The openai client must reach 127.0.0.1 directly, whatever proxy the machine sets."""
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(var, raising=False)
