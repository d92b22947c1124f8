"""Teaching episodes (cuda_agent.rl.teach): a stored solution replayed through the agent's own
loop, file by file, then verify and submit; the reward is the evaluator's verdict (here the
scripted stand-in for the GPU); `cuda-agent train teach` writes them where pre_rft reads them,
and a rerun skips finished ones."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml
from typer.testing import CliRunner

from cuda_agent.agent import load_trajectory
from cuda_agent.cli.main import build_app
from cuda_agent.errors import UserError
from cuda_agent.rl import CONFIG_DIR, ScriptedModel, teaching_episodes, teaching_script
from cuda_agent.sandbox import read_solution
from cuda_agent.task import BUILTIN_DIR, load_task
from tests.rl.scripts import FAST_CODE

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "tests" / "fixtures" / "solutions" / "rmsnorm"
runner = CliRunner()


def invoke(*args: str) -> str:
    result = runner.invoke(build_app(), ["train", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_the_script_writes_kernels_first_the_entry_last_then_verifies_and_submits():
    script = teaching_script(read_solution(FIXTURE))
    calls = [(r.tool, r.arguments.get("path")) for r in script]
    assert calls == [
        ("write_file", "kernels/rmsnorm.cu"),
        ("write_file", "kernels/rmsnorm_binding.cpp"),
        ("write_file", "model_new.py"),
        ("verify", None),
        ("submit", None),
    ]
    assert script[2].arguments["content"] == (FIXTURE / "model_new.py").read_text()


def test_the_scripted_model_answers_the_reply_after_those_the_conversation_holds():
    model = ScriptedModel(teaching_script(read_solution(FIXTURE)))
    start = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    first = model.complete(start, None)
    assert first.tool_calls[0].name == "write_file" and first.finish_reason == "tool_calls"
    later = start + [{"role": "assistant", "content": "x"}] * 3
    (call,) = model.complete(later, None).tool_calls
    assert call.name == "verify" and json.loads(call.arguments) == {}
    done = model.complete(start + [{"role": "assistant", "content": "x"}] * 5, None)
    assert done.tool_calls == () and done.finish_reason == "stop"


def test_only_tasks_with_a_solution_folder_are_taught(tmp_path):
    (tmp_path / "rmsnorm").mkdir()
    tasks = [load_task("rmsnorm"), load_task("scaled_softmax")]
    (episode,) = teaching_episodes(tasks, tmp_path, tmp_path / "out")
    assert episode.task.name == "rmsnorm"
    assert episode.trajectory == tmp_path / "out" / "trajectories" / "rmsnorm" / "000.jsonl"
    with pytest.raises(UserError, match="no folder there is named after a task"):
        teaching_episodes(tasks[1:], tmp_path, tmp_path / "out")
    with pytest.raises(UserError, match="no such folder"):
        teaching_episodes(tasks, tmp_path / "missing", tmp_path / "out")


@pytest.fixture(scope="module")
def taught(tmp_path_factory):
    """`train teach` over two tasks, one of which has a stored solution; then the same again."""
    tmp = tmp_path_factory.mktemp("teach")
    config = yaml.safe_load((CONFIG_DIR / "sample_1gpu.yaml").read_text())
    log = tmp / "evaluated.jsonl"
    config["evaluator"] = {
        "factory": "tests.rl.evaluators:ScriptedEvaluator",
        "kwargs": {"log": str(log)},
    }
    (tmp / "sample.yaml").write_text(yaml.safe_dump(config))
    (tmp / "tasks").mkdir()
    for name in ("rmsnorm", "scaled_softmax"):
        (tmp / "tasks" / f"{name}.py").write_text((BUILTIN_DIR / f"{name}.py").read_text())
    solution = tmp / "solutions" / "rmsnorm"
    (solution / "kernels").mkdir(parents=True)
    (solution / "model_new.py").write_text(FAST_CODE)
    (solution / "kernels" / "rmsnorm.cu").write_text("// the kernel\n")
    args = ["teach", "--config", str(tmp / "sample.yaml"), "--run-dir", str(tmp / "run")]
    args += ["--tasks", str(tmp / "tasks"), "--solutions", str(tmp / "solutions")]
    first = invoke(*args)
    calls = log.read_text().count("\n")
    second = invoke(*args)
    assert log.read_text().count("\n") == calls  # nothing was evaluated again
    return tmp, first, second


def test_teach_replays_the_solution_and_the_evaluator_gives_the_reward(taught):
    tmp, first, second = taught
    assert "stage teach: 1 episodes" in first and "(0 done, 0 to resume, 1 new)" in first
    assert "taught 1 episodes (1 with positive reward)" in first
    assert "(1 done, 0 to resume, 0 new)" in second and "taught 0 episodes" in second
    (line,) = [json.loads(x) for x in (tmp / "run/teach/episodes.jsonl").read_text().splitlines()]
    assert (line["task"], line["reason"], line["turns"], line["reward"]) == (
        "rmsnorm", "submitted", 4, 3,
    )  # fmt: skip
    trajectory = load_trajectory(tmp / "run/teach/trajectories/rmsnorm/000.jsonl")
    assert trajectory.end.reward == 3
    names = [c.name for t in trajectory.turns for c in t.assistant.tool_calls]
    assert names == ["write_file", "write_file", "verify", "submit"]
    evaluated = [json.loads(x) for x in (tmp / "evaluated.jsonl").read_text().splitlines()]
    assert {e["task"] for e in evaluated} == {"rmsnorm"}
    assert evaluated[-1]["files"] == {
        "kernels/rmsnorm.cu": "// the kernel\n",
        "model_new.py": FAST_CODE,
    }  # the evaluator judged exactly the stored files


def test_pre_rft_is_prepared_from_the_teaching_episodes(taught, tiny_model):
    pytest.importorskip("verl")
    tmp, *_ = taught
    out = invoke("pre_rft", "--model", str(tiny_model), "--run-dir", str(tmp / "run"), "--dry-run")
    assert "kept 1 of 1 trajectories" in out and "verl.trainer.sft_trainer" in out
    assert "--config-name pre_rft" in out
    (row,) = pq.read_table(tmp / "run/data/pre_rft.parquet").to_pylist()
    assert row["task"] == "rmsnorm" and "// the kernel" in row["messages"]


@pytest.mark.parametrize(
    ("args", "said"),
    [([], "missing --solutions"), (["--solutions", "nowhere"], "no such folder")],
)
def test_teach_refuses_bad_input_in_one_line(tmp_path, args, said):
    out = subprocess.run(
        [sys.executable, "-m", "cuda_agent", "train", "teach", "--run-dir", str(tmp_path), *args],
        capture_output=True, text=True, cwd=tmp_path, timeout=120,
    )  # fmt: skip
    assert out.returncode == 2
    assert said in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr
