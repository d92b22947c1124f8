"""`cuda-agent workspace` and `cuda-agent optimize`, run through the real entry point."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import pytest

from cuda_agent.agent import load_trajectory
from cuda_agent.cli.main import main

from .scripted import call, reply


def cli(monkeypatch, capsys, *args: str) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "argv", ["cuda-agent", *args])
    with pytest.raises(SystemExit) as exit_info:
        main()
    out, err = capsys.readouterr()
    return exit_info.value.code or 0, out, err


def test_workspace_command(monkeypatch, capsys, tmp_path, task):
    code, out, _ = cli(monkeypatch, capsys, "workspace", "elementwise_chain", str(tmp_path / "ws"))
    assert code == 0 and "workspace for elementwise_chain" in out
    assert (tmp_path / "ws" / "model.py").read_text() == task.code
    assert (tmp_path / "ws" / "SKILL.md").is_file() and (tmp_path / "ws" / "kernels").is_dir()
    code, _, err = cli(monkeypatch, capsys, "workspace", "elementwise_chain", str(tmp_path / "ws"))
    assert code == 2 and err.startswith("error:") and "not empty" in err and err.count("\n") == 1
    code, _, err = cli(monkeypatch, capsys, "workspace", "no_such_task", str(tmp_path / "w2"))
    assert code == 2 and "no such task" in err


def test_optimize_writes_solution_verdict_and_trajectory(
    monkeypatch, capsys, serve, tmp_path, environment, chain_files
):
    monkeypatch.setenv("CUDA_AGENT_CACHE", str(environment.config.cache_dir))  # reuse its builds
    writes = [call("write_file", path=p, content=t) for p, t in chain_files.items()]
    server = serve([reply(content="ready"), reply(*writes), reply(call("submit"))])  # pre-flight
    out_dir = tmp_path / "run"
    args = ["optimize", "elementwise_chain", "--model", "m", "--base-url", server.url]
    code, out, _ = cli(monkeypatch, capsys, *args, "--out", str(out_dir), "--max-turns", "5")
    assert code == 0, out
    assert "turn 0: write_file" in out and "submitted" in out and "reward" in out
    record = load_trajectory(out_dir / "trajectory.jsonl")
    assert record.end.reason == "submitted" and len(record.turns) == 2
    assert record.episode.config["agent"]["max_turns"] == 5
    verdict = json.loads((out_dir / "verdict.json").read_text())
    assert verdict["stage"] == "profile" and verdict["task"] == "elementwise_chain"
    assert verdict["compiled"], verdict["message"]
    assert record.end.final.verdict.model_dump(mode="json") == verdict
    best = out_dir / "best"
    for rel, text in chain_files.items():
        assert (best / rel).read_text() == text
    code, _, err = cli(monkeypatch, capsys, *args, "--out", str(out_dir))
    assert code == 2 and "not empty" in err
    code, _, err = cli(monkeypatch, capsys, *args, "--out", str(out_dir), "--resume")
    assert code == 2 and "already ended" in err


def test_optimize_rejects_bad_input_in_one_line(monkeypatch, capsys, tmp_path):
    monkeypatch.delenv("NO_SUCH_KEY_VAR", raising=False)
    base = ["optimize", "elementwise_chain", "--model", "m", "--base-url", "http://127.0.0.1:9"]
    code, _, err = cli(monkeypatch, capsys, *base, "--api-key-env", "NO_SUCH_KEY_VAR")
    assert (
        code == 2
        and err == "error: --api-key-env NO_SUCH_KEY_VAR: that environment variable is not set\n"
    )
    code, _, err = cli(monkeypatch, capsys, *base, "--resume")
    assert code == 2 and "--resume needs --out" in err
    bad = ["optimize", str(tmp_path / "missing.py"), "--model", "m", "--base-url", "http://x"]
    code, _, err = cli(monkeypatch, capsys, *bad)
    assert code == 2 and "no such task file" in err


def test_ctrl_c_in_optimize_kills_the_command_and_says_how_to_resume(serve, tmp_path):
    from .test_bash import BACKGROUND, gone, started_pid

    server = serve([reply(content="ready"), reply(call("bash", command=BACKGROUND))])
    out_dir = tmp_path / "run"
    args = ["optimize", "elementwise_chain", "--model", "m", "--base-url", server.url]
    cli_process = subprocess.Popen(
        [sys.executable, "-m", "cuda_agent", *args, "--out", str(out_dir)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        sleeper = started_pid(out_dir / "workspace", deadline_s=300)
        cli_process.send_signal(signal.SIGINT)
        _, err = cli_process.communicate(timeout=120)
    finally:
        cli_process.kill()
        cli_process.wait()
    assert cli_process.returncode == 130, err
    assert gone(sleeper)
    assert "interrupted: the episode so far is in" in err and "Traceback" not in err
    assert f"--out {out_dir} --resume" in err
    assert load_trajectory(out_dir / "trajectory.jsonl").end is None  # resumable
