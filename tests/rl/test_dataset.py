"""The RL dataset in veRL's parquet schema, read back by veRL's RLHFDataset."""

from __future__ import annotations

import subprocess
import sys

import pyarrow.parquet as pq
import pytest

from tests.rl.extras import VERL_MISSING

pytest.importorskip("verl", reason=VERL_MISSING)
from omegaconf import OmegaConf
from verl.utils.dataset.rl_dataset import RLHFDataset

from cuda_agent.agent import initial_messages, skill_text
from cuda_agent.errors import UserError
from cuda_agent.rl import write_rl_dataset
from cuda_agent.rl.stages import split_tasks
from cuda_agent.task import Task, load_tasks


def test_rows_carry_the_task_and_the_agents_prompt(tmp_path, tokenizer):
    tasks = load_tasks()
    path = write_rl_dataset(tasks + tasks[:2], tmp_path / "train.parquet", "multi_turn")
    rows = pq.read_table(path).to_pylist()
    assert len(rows) == len(tasks)  # the same program appears once
    first = rows[0]
    assert first["prompt"] == initial_messages(tasks[0], skill_text())
    assert first["agent_name"] == "cuda_agent" and first["data_source"] == "builtin"
    assert first["reward_model"] == {"style": "rule", "ground_truth": tasks[0].hash}
    assert first["extra_info"]["task_hash"] == tasks[0].hash
    assert Task.from_record(first["extra_info"]["task"]) == tasks[0]
    config = OmegaConf.create(
        {"max_prompt_length": 8192, "filter_overlong_prompts": False, "prompt_key": "prompt"}
    )
    item = RLHFDataset(str(path), tokenizer, config)[0]
    assert (
        item["raw_prompt"] == first["prompt"]
        and item["extra_info"]["task"]["code"] == tasks[0].code
    )


def test_single_turn_rows_use_veRLs_loop_and_the_answer_format(tmp_path):
    rows = pq.read_table(
        write_rl_dataset(load_tasks()[:1], tmp_path / "w.parquet", "single_turn")
    ).to_pylist()
    assert (
        rows[0]["agent_name"] == "single_turn_agent"
        and "### model_new.py" in rows[0]["prompt"][1]["content"]
    )


def test_empty_set_and_validation_split(tmp_path):
    with pytest.raises(UserError, match="no tasks"):
        write_rl_dataset([], tmp_path / "x.parquet", "multi_turn")
    tasks = load_tasks()
    train, val = split_tasks(tasks * 1)
    assert len(val) == 1 and not {t.hash for t in train} & {t.hash for t in val}
    assert split_tasks(tasks[:1]) == (tasks[:1], tasks[:1])


def test_engine_agnostic_modules_never_import_verl():
    modules = "cuda_agent.rl, cuda_agent.rl.reward, cuda_agent.rl.stages, cuda_agent.rl.sampling"
    code = f"import sys, {modules}; print('verl' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.stdout.strip() == "False", out.stderr
