"""`cuda-agent train`: sampling against a served policy (the scripted OpenAI server standing in
for vLLM), then every training stage prepared from the run, checked against the installed veRL
and printed. Nothing is launched: the veRL stages need GPUs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml
from typer.testing import CliRunner

from tests.rl.extras import RAY_MISSING

pytest.importorskip("ray", reason=RAY_MISSING)
from cuda_agent.agent import load_trajectory
from cuda_agent.cli.main import build_app
from cuda_agent.errors import UserError
from cuda_agent.rl import CONFIG_DIR
from cuda_agent.task import BUILTIN_DIR
from tests.rl.scripted_server import ScriptedCompletions
from tests.rl.scripts import SCRIPTS, STUCK, SUCCESS

REPO = Path(__file__).resolve().parents[2]
runner = CliRunner()


def invoke(*args: str):
    result = runner.invoke(build_app(), ["train", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture(scope="module")
def sampled(tokenizer, tmp_path_factory):
    """Two tasks, two samples each, through the sample stage; then the same command again."""
    tmp = tmp_path_factory.mktemp("train")
    config = yaml.safe_load((CONFIG_DIR / "sample_small.yaml").read_text())
    config["sampling"].update(samples_per_task=2, max_turns=3, concurrency=2)
    config["evaluator"] = {"factory": "tests.rl.evaluators:ScriptedEvaluator", "kwargs": {}}
    (tmp / "sample.yaml").write_text(yaml.safe_dump(config))
    (tmp / "tasks").mkdir()
    for name in (SUCCESS, STUCK):
        (tmp / "tasks" / f"{name}.py").write_text((BUILTIN_DIR / f"{name}.py").read_text())
    with ScriptedCompletions(tokenizer, SCRIPTS) as server:
        args = ["sample", "--config", str(tmp / "sample.yaml"), "--run-dir", str(tmp / "run")]
        args += ["--tasks", str(tmp / "tasks"), "--base-url", f"{server.url}/v1"]
        first = invoke(*args)
        requests = len(server.requests)
        second = invoke(*args)
        assert len(server.requests) == requests  # nothing was asked again
    return tmp, first, second


def test_sample_writes_agent_trajectories_and_resumes(sampled):
    tmp, first, second = sampled
    assert "4 episodes (0 done, 0 to resume, 4 new)" in first
    assert "4 episodes (4 done, 0 to resume, 0 new)" in second and "sampled 0 episodes" in second
    lines = [json.loads(x) for x in (tmp / "run/sample/episodes.jsonl").read_text().splitlines()]
    assert sorted((x["task"], x["reward"], x["reason"]) for x in lines) == [
        (SUCCESS, 3, "submitted"),
        (SUCCESS, 3, "submitted"),
        (STUCK, 1, "turn_budget"),
        (STUCK, 1, "turn_budget"),
    ]
    broken = load_trajectory(tmp / f"run/sample/trajectories/{STUCK}/000.jsonl").turns[0]
    assert broken.observations == []  # the server's parser kept the broken block as text


def test_an_interrupted_episode_is_resumed(sampled, tokenizer):
    tmp, *_ = sampled
    path = tmp / f"run/sample/trajectories/{SUCCESS}/001.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:2]))  # the episode record and the first turn only
    args = ["sample", "--config", str(tmp / "sample.yaml"), "--run-dir", str(tmp / "run")]
    args += ["--tasks", str(tmp / "tasks")]
    with ScriptedCompletions(tokenizer, SCRIPTS) as server:
        out = invoke(*args, "--base-url", f"{server.url}/v1")
        assert [r["turn"] for r in server.requests] == [1, 2]
    assert "(3 done, 1 to resume, 0 new)" in out
    resumed = load_trajectory(path)
    assert resumed.end.reward == 3 and [t.index for t in resumed.turns] == [0, 1, 2]


def test_rft_and_value_are_prepared_from_the_samples(sampled, tiny_model):
    tmp, *_ = sampled
    run = tmp / "run"
    common = ["--model", str(tiny_model), "--run-dir", str(run), "--min-reward", "2", "--dry-run"]
    out = invoke("rft", "--config", "rft_small", *common)
    assert "kept 2 of 4 trajectories; dropped 2 (reward 2)" in out
    assert "torchrun --standalone --nnodes=1 --nproc_per_node=8 -m verl.trainer.sft_trainer" in out
    assert f"model.path={tiny_model}" in out
    rows = pq.read_table(run / "data/rft.parquet").to_pylist()
    assert {r["task"] for r in rows} == {SUCCESS} and all(r["reward"] == 3 for r in rows)
    report = json.loads((run / "data/rft_filter.json").read_text())
    assert report["by_rule"] == {rule: 2 if rule == "reward" else 0 for rule in report["by_rule"]}
    out = invoke("value", "--config", "value_small", *common)
    assert "-m verl.trainer.main_ppo" in out and "--config-name value_small" in out
    replay = pq.read_table(run / "data/value.parquet").to_pylist()
    assert {r["agent_name"] for r in replay} == {"cuda_agent_replay"} and len(replay) == 2


def test_task_stages_are_prepared_and_checked(tmp_path, tiny_model):
    for stage in ("warmup", "ppo"):
        out = invoke(
            stage, "--config", f"{stage}_small", "--model", str(tiny_model),
            "--run-dir", str(tmp_path), "--dry-run", "trainer.total_epochs=3",
        )  # fmt: skip
        assert f"data.train_files={tmp_path}/data/{stage}_train.parquet" in out
        assert out.rstrip().endswith("trainer.total_epochs=3")
        rows = pq.read_table(tmp_path / f"data/{stage}_train.parquet").to_pylist()
        expected = "single_turn_agent" if stage == "warmup" else "cuda_agent"
        assert {r["agent_name"] for r in rows} == {expected} and len(rows) == 9


def test_bad_input_is_one_line_and_exit_2(tmp_path, tiny_model):
    renamed = tmp_path / "renamed.yaml"
    renamed.write_text(
        (CONFIG_DIR / "ppo_small.yaml").read_text() + "\nalgorithm:\n  lambda: 0.95\n"
    )
    (tmp_path / "ppo_small.yaml").write_text((CONFIG_DIR / "ppo_small.yaml").read_text())
    (tmp_path / "ppo.yaml").write_text((CONFIG_DIR / "ppo.yaml").read_text())
    run = ("--run-dir", str(tmp_path), "--dry-run")
    in_process = {
        ("ppo", *run): "missing --model",
        (
            "rft",
            "--model",
            str(tiny_model),
            "--trajectories",
            str(tmp_path / "none"),
            "--dry-run",
        ): ("no such trajectory"),
        ("ppo", "--config", "nope", "--model", "m"): "no such file or packaged config",
    }
    for args, message in in_process.items():
        with pytest.raises(UserError, match=message):
            runner.invoke(build_app(), ["train", *args], catch_exceptions=False)
    cases = {
        ("train", "sideways"): "unknown stage",
        ("train", "ppo", "--config", str(renamed), "--model", str(tiny_model), *run): (
            "has no key algorithm.lambda"
        ),
    }
    for args, message in cases.items():
        out = subprocess.run(
            [sys.executable, "-m", "cuda_agent", *args],
            capture_output=True,
            text=True,
            cwd=REPO,
            timeout=300,
        )
        assert out.returncode == 2, (args, out.stderr)
        assert out.stderr.strip().startswith("error:") and message in out.stderr, out.stderr
        assert len(out.stderr.strip().splitlines()) == 1, out.stderr


def test_the_model_is_checked_before_anything_is_prepared(tmp_path):
    (tmp_path / "empty").mkdir()
    run = ("--run-dir", str(tmp_path / "run"), "--dry-run")
    for model, message in (
        (str(tmp_path / "no-such-model"), "no such folder, and not a hub id"),
        (str(tmp_path / "empty"), "no config.json there, not a model folder"),
    ):
        with pytest.raises(UserError, match=message):
            runner.invoke(
                build_app(), ["train", "ppo", "--model", model, *run], catch_exceptions=False
            )
    assert not (tmp_path / "run" / "data").exists()


def test_hydra_writes_under_the_run_folder(tmp_path, tiny_model):
    out = invoke(
        "ppo", "--config", "ppo_small", "--model", str(tiny_model),
        "--run-dir", str(tmp_path), "--dry-run",
    )  # fmt: skip
    assert f"hydra.run.dir={tmp_path.resolve()}/hydra/ppo" in out


def test_a_training_stage_without_a_gpu_stops_before_launching(tmp_path, tiny_model):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    args = ["train", "ppo", "--config", "ppo_small", "--model", str(tiny_model)]
    with pytest.raises(UserError, match="stage ppo runs on GPUs and none is visible here"):
        runner.invoke(build_app(), [*args, "--run-dir", str(tmp_path)], catch_exceptions=False)
    assert not (tmp_path / "data").exists()


def test_without_the_rl_extra_one_line_names_the_install(tmp_path, tiny_model):
    hidden = (
        "import sys; sys.modules['verl'] = sys.modules['hydra'] = None; "
        "from cuda_agent.cli.main import main; sys.argv = ['cuda-agent', *sys.argv[1:]]; main()"
    )
    args = ["train", "ppo", "--model", str(tiny_model), "--run-dir", str(tmp_path), "--dry-run"]
    out = subprocess.run(
        [sys.executable, "-c", hidden, *args], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 2, out.stderr
    assert (
        out.stderr
        == "error: the rl extra is not installed (hydra is missing): pip install -e '.[rl]'\n"
    )
