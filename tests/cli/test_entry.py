"""The command's entry point: the candidates' fork server starts early, and only where it helps."""

from __future__ import annotations

import multiprocessing.forkserver
import subprocess
import sys

import pytest

from cuda_agent.cli import entry
from cuda_agent.cli import main as cli_main
from cuda_agent.sandbox.process import fork_server
from cuda_agent.sandbox.process import watch as processes


@pytest.fixture
def server_calls(monkeypatch) -> list:
    calls: list = []
    monkeypatch.setattr(
        multiprocessing.forkserver,
        "set_forkserver_preload",
        lambda modules: calls.append(("preload", modules)),
    )
    monkeypatch.setattr(
        multiprocessing.forkserver, "ensure_running", lambda: calls.append(("start",))
    )
    return calls


def test_no_server_without_an_nvidia_device(monkeypatch, server_calls):
    monkeypatch.setattr(fork_server.os.path, "exists", lambda path: False)
    assert fork_server.start_early() is False
    assert server_calls == []


def test_the_server_starts_with_the_sandboxs_preload(monkeypatch, server_calls):
    monkeypatch.setattr(fork_server.os.path, "exists", lambda path: path == "/dev/nvidiactl")
    assert fork_server.start_early() is True
    assert server_calls == [("preload", list(fork_server.PRELOAD)), ("start",)]
    assert processes.PRELOAD is fork_server.PRELOAD  # the sandbox's later start asks the same
    assert "cuda_agent.sandbox.process.child" in fork_server.PRELOAD


def test_importing_the_entry_and_the_fork_server_imports_no_torch():
    # the server must start before this process's own import of torch begins
    code = (
        "import sys, cuda_agent.cli.entry, cuda_agent.sandbox.process.fork_server; "
        "print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize(
    ("args", "started"),
    [
        (["eval", "--task", "t.py", "--solution", "s"], True),
        (["optimize", "--task", "t.py"], True),
        (["eval", "--help"], False),
        (["tasks"], False),
        (["bench", "--tasks", "builtin"], False),
        ([], False),
    ],
)
def test_the_entry_starts_it_for_commands_that_evaluate_here(monkeypatch, args, started):
    events = []
    monkeypatch.setattr(entry, "start_early", lambda: events.append("server"))
    monkeypatch.setattr(cli_main, "main", lambda: events.append("cli"))
    monkeypatch.setattr(sys, "argv", ["cuda-agent", *args])
    entry.main()
    assert events == (["server", "cli"] if started else ["cli"])
