"""The admission of an evaluation on a shared GPU: one whose estimated memory is not free
starts alone, holding the GPU's lock exclusively, and its verdict says what it waited."""

from __future__ import annotations

import json
from pathlib import Path

from cuda_agent.bench.runner import verdict_line
from cuda_agent.bench.store import TaskResult
from cuda_agent.sandbox import EnvConfig, Environment, Stage, Status, read_solution
from cuda_agent.sandbox.admission import EVALUATION_CALLS, evaluation_bytes, must_wait
from cuda_agent.sandbox.check.audit import AuditRecord, load_audit
from cuda_agent.sandbox.verdict import Verdict
from cuda_agent.task import load_task

HERE = Path(__file__).parent
CHAIN = HERE / "solutions" / "elementwise_chain"
GIB = 2**30


def _audit(**fields) -> AuditRecord:
    base = dict(task="t", task_hash="h", torch_version="x", atol=0.01, rtol=0.01,
                distribution="task", degenerate=False, passing={}, nonfinite=[])  # fmt: skip
    return AuditRecord(**{**base, **fields})


def test_the_estimate_is_the_task_s_measured_call_times_the_evaluation_s_calls():
    assert evaluation_bytes(_audit(call_bytes=3 * GIB)) == EVALUATION_CALLS * 3 * GIB
    assert evaluation_bytes(_audit()) is None  # not measured: no admission
    assert must_wait(12 * GIB, 8 * GIB) and not must_wait(8 * GIB, 12 * GIB)
    assert not must_wait(None, 0)


def test_an_audit_from_before_the_estimate_is_measured_again(tmp_path):
    old = tmp_path / "old.json"
    old.write_text(_audit(launch_ms=0.1, busy_ms=0.05).model_dump_json())
    assert load_audit(old) is None  # measured on a GPU without call_bytes: audited again
    cpu = tmp_path / "cpu.json"
    cpu.write_text(_audit().model_dump_json())
    assert load_audit(cpu) is not None  # no GPU figures at all: nothing to measure again
    new = tmp_path / "new.json"
    new.write_text(json.dumps({**_audit(launch_ms=0.1).model_dump(), "call_bytes": 5}))
    assert load_audit(new).call_bytes == 5


def _evaluate(tmp_path, monkeypatch, held, need: int, free: int) -> tuple[Verdict, list]:
    from cuda_agent.sandbox import environment as env_mod

    task, modes = load_task("elementwise_chain"), []

    def evaluate(self, task, solution, stage, prebuilt, alone):
        modes.append((held[-1] if held else None, alone))
        return Verdict(task=task.name, task_hash=task.hash, stage=stage, status=Status.OK,
                       compiled=True, correct=True, reward=1, seconds={"verify": 1.0})  # fmt: skip

    monkeypatch.setattr(env_mod.Environment, "_evaluate", evaluate)
    monkeypatch.setattr(env_mod.Environment, "_memory_need", lambda *a: (need, free))
    with Environment(EnvConfig(cache_dir=tmp_path)) as env:
        verdict = env.evaluate(task, read_solution(CHAIN), Stage.PROFILE)
    return verdict, modes


def test_an_evaluation_whose_memory_is_free_starts_beside_the_others(
    tmp_path, monkeypatch, recorded_gpu_lock
):
    verdict, modes = _evaluate(tmp_path, monkeypatch, recorded_gpu_lock, 4 * GIB, 40 * GIB)
    assert modes == [(None, False)]
    assert "gpu_memory_wait" not in verdict.seconds and not verdict.notes


def test_an_evaluation_whose_memory_is_not_free_runs_alone_and_says_so(
    tmp_path, monkeypatch, recorded_gpu_lock
):
    verdict, modes = _evaluate(tmp_path, monkeypatch, recorded_gpu_lock, 24 * GIB, 10 * GIB)
    assert modes == [("exclusive", True)] and recorded_gpu_lock == []
    assert verdict.status == Status.OK and verdict.seconds["gpu_memory_wait"] == 0.0
    assert verdict.seconds["verify"] == 1.0
    [note] = verdict.notes
    assert "needed about 24.0 GiB of GPU memory where 10.0 GiB was free" in note
    assert "then ran alone" in note
    line = verdict_line(TaskResult.of(load_task("elementwise_chain"), verdict))
    assert line.endswith("(reward 1; waited 0.0 s for GPU memory)")
