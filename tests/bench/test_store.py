"""Results files written before typed violations and service errors still load, and say the same."""

from __future__ import annotations

import json

from cuda_agent.bench import RunMeta, RunStore, TaskResult, pending_tasks
from cuda_agent.bench.store import SERVICE_ERROR, failed_verdict
from cuda_agent.sandbox import Check, Rule, Stage, Status
from cuda_agent.task import load_tasks

TASKS = load_tasks("builtin")[:3]
STATIC_LINE = "model_new.py:14: calls torch.softmax (PyTorch compute); write a kernel instead"


def _store(tmp_path, records: list[dict]) -> RunStore:
    store = RunStore(tmp_path)
    store.start(RunMeta(kind="solutions", tasks="builtin", solutions="/s", stage=Stage.COMPILE))
    (tmp_path / RunStore.RESULTS).write_text("".join(json.dumps(r) + "\n" for r in records))
    return store


def _record(task, status: Status, message: str, **verdict) -> dict:
    record = json.loads(TaskResult.of(task, failed_verdict(task, Stage.COMPILE, status, message))
                        .model_dump_json())  # fmt: skip
    record["verdict"].update(verdict)
    return record


def _old(record: dict) -> dict:
    """The record as it was written before Verdict.service_error existed."""
    record["verdict"].pop("service_error")
    return record


def test_an_old_line_with_string_violations_loads_with_the_same_lines(tmp_path):
    old = _old(_record(TASKS[0], Status.VIOLATION, "rejected", violations=[STATIC_LINE]))
    [result] = _store(tmp_path, [old]).results()
    [violation] = result.verdict.violations
    assert (violation.rule, violation.check) == (Rule.UNKNOWN, Check.STATIC_GUARD)
    assert f"violation: {STATIC_LINE}" in result.verdict.summary()
    assert result.status == "violation" and not result.verdict.service_error


def test_service_errors_are_redone_by_their_field_or_in_old_files_by_their_message(tmp_path):
    lost = failed_verdict(TASKS[0], Stage.COMPILE, Status.RUNTIME_ERROR, "lost", service_error=True)
    assert lost.service_error and lost.message == f"{SERVICE_ERROR} lost"
    store = _store(tmp_path, [
        json.loads(TaskResult.of(TASKS[0], lost).model_dump_json()),
        _old(_record(TASKS[1], Status.TIMEOUT, f"{SERVICE_ERROR} the worker was lost twice")),
        _old(_record(TASKS[2], Status.RUNTIME_ERROR, "the candidate raised")),
    ])  # fmt: skip
    assert [r.verdict.service_error for r in store.results()] == [True, True, False]
    assert pending_tasks(TASKS, store) == TASKS[:2]
