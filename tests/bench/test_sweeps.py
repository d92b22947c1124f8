"""Baselines and audit over a set: skipping what the data file has, errors reported not written,
and the audit table."""

from __future__ import annotations

import json

import pytest
import torch

from cuda_agent.bench import EvaluationService, ServiceConfig, run_audit, run_baselines
from cuda_agent.bench.sweeps import write_audit_table
from cuda_agent.sandbox import TIMING_METHOD
from cuda_agent.task import load_task
from tests.bench.conftest import GOOD

pytestmark = pytest.mark.timeout(2400)


@pytest.fixture(scope="module")
def service(env_config):
    with EvaluationService(ServiceConfig(mode="inprocess", env=env_config)) as svc:
        yield svc


def test_baselines_skip_recorded_keys_and_do_not_write_failures(tmp_path, service):
    tasks = [load_task(n) for n in GOOD]
    out = tmp_path / "baselines.jsonl"
    ident = service.identity()
    done = {
        "task": GOOD[0],
        "task_hash": tasks[0].hash,
        "gpu": ident["gpu"],
        "torch_version": torch.__version__,
        "eager_ms": 1.0,
        "timing_method": TIMING_METHOD,
    }
    # timed by an older method: timed again
    stale = {**done, "task": GOOD[1], "task_hash": tasks[1].hash, "timing_method": None}
    out.write_text(json.dumps(done) + "\n" + json.dumps(stale) + "\n")
    prepared = []
    items = run_baselines(tasks, service, out, on_prepared=prepared.append)
    assert [i.task.name for i in items] == [GOOD[1]]  # the recorded one was skipped
    assert prepared == [tasks[1]]  # its untimed work went first, and failed the same way
    assert items[0].record is None and "needs a CUDA GPU" in items[0].error  # no GPU here
    assert out.read_text().splitlines() == [json.dumps(done), json.dumps(stale)]


def test_audit_on_cpu_reports_each_task(tmp_path, service):
    tasks = [load_task(n) for n in GOOD]
    items = run_audit(tasks, service, tmp_path / "audit.jsonl")
    assert sorted(i.task.name for i in items) == sorted(GOOD * 2)  # in train and eval mode
    assert all(i.error and "needs a CUDA GPU" in i.error for i in items)
    assert (tmp_path / "audit.md").read_text().startswith("# Null-kernel audit")


def test_audit_table_lists_tasks_a_trivial_output_passes(tmp_path):
    records = [
        {
            "task": "L1_19_ReLU",
            "level": 1,
            "problem_id": 19,
            "distribution": "signed",
            "degenerate": False,
            "passing": {"task": ["input 0"], "signed": []},
        },
        {
            "task": "L1_23_Softmax",
            "level": 1,
            "problem_id": 23,
            "distribution": "task",
            "degenerate": False,
            "passing": {"task": []},
        },
        {
            "task": "L2_9_Const",
            "level": 2,
            "problem_id": 9,
            "distribution": "task",
            "degenerate": True,
            "passing": {"task": ["zeros"], "signed": ["zeros"]},
        },
        {
            "task": "L2_33_BatchNorm",
            "level": 2,
            "problem_id": 33,
            "distribution": "task",
            "degenerate": True,
            "passing": {"task": ["input 0 itself"]},
            "module_mode": "eval",
        },
    ]
    text = write_audit_table(records, tmp_path / "audit.md").read_text()
    assert "4 audits (task, module mode); 3 pass a trivial output" in text
    assert "| L1_19_ReLU | L1 | train | input 0 | signed | no |" in text
    assert "| L2_9_Const | L2 | train | zeros | task | yes |" in text
    assert "| L2_33_BatchNorm | L2 | eval | input 0 itself | task | yes |" in text
    assert "L1_23_Softmax" not in text
