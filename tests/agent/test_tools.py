"""The tools through the workbench: what they do, and how every kind of bad call is answered."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from cuda_agent.agent import ToolCall


def run(bench, name: str, raw: str | None = None, **arguments):
    text = raw if raw is not None else json.dumps(arguments)
    return bench.execute(ToolCall(id="c1", name=name, arguments=text)).observation


def test_fresh_workspace_has_reference_infrastructure_and_skill(bench):
    listing = run(bench, "list_files").content
    for name in ("model.py", "binding.cpp", "binding_registry.h", "SKILL.md"):
        assert name in listing
    assert "profile" in run(bench, "read_file", path="SKILL.md").content.lower()


def test_write_read_edit_round_trip(bench):
    obs = run(bench, "write_file", path="kernels/a.cu", content="int a = 1;\nint b = 2;\n")
    assert obs.ok and "created kernels/a.cu" in obs.content
    assert run(bench, "read_file", path="kernels/a.cu").content == "int a = 1;\nint b = 2;\n"
    assert run(bench, "edit_file", path="kernels/a.cu", old_string="b = 2", new_string="b = 3").ok
    assert (bench.root / "kernels/a.cu").read_text() == "int a = 1;\nint b = 3;\n"
    ranged = run(bench, "read_file", path="kernels/a.cu", start_line=2, end_line=2).content
    assert ranged.endswith("int b = 3;\n") and "lines 2-2 of 2" in ranged


def test_edit_needs_exactly_one_match(bench):
    run(bench, "write_file", path="kernels/a.cu", content="x x\n")
    none = run(bench, "edit_file", path="kernels/a.cu", old_string="y", new_string="z")
    assert none.error_kind == "tool_error" and "not found" in none.content
    many = run(bench, "edit_file", path="kernels/a.cu", old_string="x", new_string="z")
    assert many.error_kind == "tool_error" and "occurs 2 times" in many.content
    assert (bench.root / "kernels/a.cu").read_text() == "x x\n"


def test_grep_finds_lines_and_rejects_bad_patterns(bench, task):
    line = task.code.splitlines().index("class Model(nn.Module):") + 1
    hits = run(bench, "grep", pattern=r"^class Model\(nn\.Module\)", path="model.py").content
    assert hits == f"model.py:{line}: class Model(nn.Module):"
    everywhere = run(bench, "grep", pattern=r"class \w+\(nn\.Module\)").content.splitlines()
    assert hits in everywhere and len(everywhere) >= 2
    assert run(bench, "grep", pattern="(").error_kind == "tool_error"
    assert "no line matches" in run(bench, "grep", pattern="zzz_not_here").content


@pytest.mark.parametrize(
    "path", ["../outside.txt", "/etc/passwd", "kernels/../../x.cu", "link/escape.txt"]
)
def test_paths_outside_the_workspace_are_refused(bench, tmp_path, path):
    (bench.root / "link").symlink_to(tmp_path)
    for name, args in (
        ("write_file", {"path": path, "content": "x"}),
        ("read_file", {"path": path}),
        ("list_files", {"path": path}),
    ):
        obs = run(bench, name, **args)
        assert obs.error_kind == "refused" and "outside the workspace" in obs.content
    assert not (tmp_path / "outside.txt").exists() and not (tmp_path / "escape.txt").exists()


@pytest.mark.parametrize("name", ["model.py", "binding.cpp", "binding_registry.h", "SKILL.md"])
def test_protected_files_are_not_written(bench, name):
    before = (bench.root / name).read_text()
    wrote = run(bench, "write_file", path=name, content="hacked")
    edited = run(bench, "edit_file", path=f"./{name}", old_string=before[:20], new_string="x")
    for obs in (wrote, edited):
        assert obs.error_kind == "refused" and "protected" in obs.content
    assert (bench.root / name).read_text() == before


@pytest.mark.parametrize(
    ("name", "raw", "kind", "says"),
    [
        ("read_file", '{"path": "model.py"', "bad_json", "not valid JSON"),
        ("read_file", "[1, 2]", "bad_arguments", "JSON object"),
        ("rm_rf", '{"path": "."}', "unknown_tool", "unknown tool 'rm_rf'"),
        ("", "{}", "unknown_tool", "names no tool"),
        (
            "write_file",
            '{"path": "a.txt"}',
            "bad_arguments",
            "missing required argument(s): content",
        ),
        ("read_file", '{"path": 3}', "bad_arguments", "'path' must be a JSON string"),
        ("read_file", '{"path": "model.py", "start_line": true}', "bad_arguments", "integer"),
        ("list_files", '{"folder": "."}', "bad_arguments", "unknown argument(s): folder"),
    ],
)
def test_malformed_calls_become_error_observations(bench, name, raw, kind, says):
    obs = run(bench, name, raw=raw)
    assert not obs.ok and obs.error_kind == kind and says in obs.content


def test_no_argument_tools_accept_empty_arguments(bench):
    assert run(bench, "list_files", raw="").ok


def test_bash_runs_in_the_workspace_with_exit_status(bench):
    obs = run(bench, "bash", command="pwd; ls")
    assert obs.ok and str(bench.root) in obs.content and "model.py" in obs.content
    failed = run(bench, "bash", command="echo oops >&2; exit 3")
    assert not failed.ok and failed.error_kind is None
    assert "oops" in failed.content and "[exit code 3]" in failed.content


def test_bash_environment_is_scrubbed(bench, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-value")
    monkeypatch.setenv("HF_TOKEN", "hf-secret-value")
    out = run(bench, "bash", command="env").content
    assert "secret-value" not in out
    assert f"HOME={bench.root}" in out


def test_bash_timeout_kills_the_command_and_its_children(bench):
    obs = run(bench, "bash", command="sleep 60 & echo $! > bg.pid; sleep 60", timeout=1)
    assert not obs.ok and "timed out after 1 s" in obs.content
    background = int((bench.root / "bg.pid").read_text())
    deadline = time.monotonic() + 10
    while _alive(background) and time.monotonic() < deadline:
        time.sleep(0.05)  # SIGKILL is delivered asynchronously
    assert not _alive(background)


def _alive(pid: int) -> bool:
    """Running, as opposed to gone or a zombie waiting to be reaped."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def test_background_children_do_not_hold_the_call(bench):
    obs = run(bench, "bash", command="echo started; sleep 60 &", timeout=20)
    assert obs.ok and obs.content == "started\n[exit code 0]"


def test_long_output_keeps_head_and_tail(bench):
    obs = run(
        bench, "bash", command="echo FIRST; head -c 200000 /dev/zero | tr '\\0' x; echo; echo LAST"
    )
    assert obs.content.startswith("FIRST") and "LAST" in obs.content
    assert "omitted" in obs.content and len(obs.content) < 20_000


def test_evaluation_tools_need_a_solution(bench):
    for name in ("compile", "verify", "profile"):
        obs = run(bench, name)
        assert obs.error_kind == "tool_error" and "model_new.py" in obs.content


def test_changes_replay_onto_a_fresh_workspace(bench, task, tmp_path, environment):
    from cuda_agent.agent import Workbench, new_workspace

    run(bench, "write_file", path="kernels/a.cu", content="// a\n")
    run(bench, "write_file", path="notes/plan.md", content="plan\n")
    first = bench.changes()
    run(bench, "bash", command="rm notes/plan.md && echo '// b' > kernels/a.cu")
    second = bench.changes()
    assert first == {"kernels/a.cu": "// a\n", "notes/plan.md": "plan\n"}
    assert second == {"kernels/a.cu": "// b\n", "notes/plan.md": None}
    other = Workbench(task, new_workspace(task, tmp_path / "replay"), environment)
    other.apply(first)
    other.apply(second)
    assert other.files() == bench.files()
    assert not os.path.exists(other.root / "notes" / "plan.md")
