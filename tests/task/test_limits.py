"""The size limit on task programs: a huge file or dataset row is refused at once, saying the
limit and how to raise it, before anything parses it."""

from __future__ import annotations

import json

import pytest

from cuda_agent.task import BUILTIN_DIR, TaskError, load_task, load_tasks

PROGRAM = (BUILTIN_DIR / "elementwise_chain.py").read_text()


def test_a_file_over_the_limit_is_refused_naming_the_limit(tmp_path, monkeypatch):
    big = tmp_path / "big.py"
    big.write_text(PROGRAM + "#" * 3000 + "\n")
    monkeypatch.setenv("CUDA_AGENT_MAX_TASK_BYTES", "2000")
    with pytest.raises(TaskError, match=r"over the 2,000-byte limit.*CUDA_AGENT_MAX_TASK_BYTES"):
        load_task(big)
    with pytest.raises(TaskError, match="big.py: .* bytes, over the 2,000-byte limit"):
        load_tasks(tmp_path)
    monkeypatch.setenv("CUDA_AGENT_MAX_TASK_BYTES", "10000")
    assert load_task(big).name == "big"


def test_the_default_limit_refuses_megabytes_without_parsing_them(tmp_path):
    huge = tmp_path / "huge.py"
    huge.write_text(PROGRAM + ("x = [" + "1, " * 2_000_000 + "]\n"))  # 6 MB: minutes to parse
    with pytest.raises(TaskError, match="over the 1,000,000-byte limit"):
        load_task(huge)


def test_a_dataset_row_over_the_limit(tmp_path, monkeypatch):
    rows = tmp_path / "tasks.jsonl"
    rows.write_text(
        json.dumps({"code": PROGRAM}) + "\n" + json.dumps({"code": PROGRAM + "#" * 5000}) + "\n"
    )
    monkeypatch.setenv("CUDA_AGENT_MAX_TASK_BYTES", "4000")
    with pytest.raises(TaskError, match="tasks.jsonl:2: .* over the 4,000-byte limit"):
        load_tasks(rows)


def test_a_bad_limit_is_named(tmp_path, monkeypatch):
    monkeypatch.setenv("CUDA_AGENT_MAX_TASK_BYTES", "lots")
    with pytest.raises(TaskError, match="CUDA_AGENT_MAX_TASK_BYTES='lots': give the largest"):
        load_task("elementwise_chain")
