"""A run's rules profile: part of its identity, shown in its report with the pass rate with and
without partial kernels, and the profile our verdicts are compared under."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from cuda_agent.bench import compare_with_file
from cuda_agent.bench.report import write_report
from cuda_agent.bench.store import RunMeta, RunStore, TaskResult
from cuda_agent.errors import UserError
from cuda_agent.sandbox import Status, TorchOp
from cuda_agent.task import Task, TaskSource
from tests.bench.conftest import verdict
from tests.conftest import FIXTURE_KERNELBENCH

EVAL_RESULTS = FIXTURE_KERNELBENCH / "results" / "eval_results_level1.json"
RELU = TorchOp(op="torch.relu", layer="static_python", file="model_new.py", line=12)
PROGRAM = "import torch\n\n\ndef get_inputs():\n    return [torch.randn({n})]\n"


def _meta(rules: str = "kernelbench") -> RunMeta:
    return RunMeta(kind="solutions", tasks="kernelbench", solutions="/s", rules=rules)


def _task(level: int, pid: int) -> Task:
    source = TaskSource("kernelbench", f"level{level}/{pid}_Op.py", level=level, problem_id=pid)
    return Task(f"L{level}_{pid}_Op", PROGRAM.format(n=pid), source)


def _run(root, rules: str, cases: dict) -> RunStore:
    store = RunStore(root)
    store.start(_meta(rules))
    for (level, pid), v in cases.items():
        task = _task(level, pid)
        store.record(TaskResult.of(task, v.model_copy(update={"task": task.name})))
    return store


def _partial(name: str = "x"):
    return verdict(name, True, 1.5, 1.2, rules="kernelbench", torch_ops=[RELU])


def test_a_run_is_never_resumed_under_another_profile(tmp_path):
    store = RunStore(tmp_path / "run")
    store.start(_meta())
    assert store.start(_meta()).rules == "kernelbench"
    with pytest.raises(UserError, match=r"kernelbench rules, .* this one is .* cuda-agent rules"):
        store.start(_meta("cuda-agent"))


def test_a_run_written_before_profiles_is_a_cuda_agent_run(tmp_path):
    store = RunStore(tmp_path / "run")
    store.start(_meta("cuda-agent"))
    path = tmp_path / "run" / RunStore.META
    old = {k: v for k, v in json.loads(path.read_text()).items() if k != "rules"}
    path.write_text(json.dumps(old))
    assert store.meta().rules == "cuda-agent"
    assert store.start(_meta("cuda-agent")).rules == "cuda-agent"  # resumes
    with pytest.raises(UserError, match="choose another --out"):
        store.start(_meta("kernelbench"))


def test_the_report_gives_the_pass_rate_with_and_without_partial_kernels(tmp_path):
    _run(tmp_path, "kernelbench", {
        (1, 1): _partial(),
        (1, 2): verdict("x", True, 2.0, 1.5, rules="kernelbench"),
        (1, 3): verdict("x", status=Status.MISMATCH, rules="kernelbench", torch_ops=[RELU]),
        (2, 1): verdict("x", status=Status.VIOLATION, rules="kernelbench"),
    })  # fmt: skip
    files = write_report(tmp_path)
    md, html = files.markdown.read_text(), files.html.read_text()
    assert "## Partial kernels (PyTorch computes part of the result)" in md
    assert "| L1 | 3 | 66.7 % | 33.3 % | 1 |" in md
    assert "| L2 | 1 | 0.0 % | 0.0 % | 0 |" in md
    assert "| overall | 4 | 50.0 % | 25.0 % | 1 |" in md
    assert "Judged by the kernelbench rules" in md and "1 of the 2 correct tasks" in md
    assert 'id="partial"' in html and "pass rate without partial kernels" in html
    assert "torch op (allowed by the kernelbench rules): torch.relu at model_new.py:12" in html


def test_a_cuda_agent_report_has_no_partial_kernel_figures(tmp_path):
    _run(tmp_path, "cuda-agent", {(1, 1): verdict("x", True, 1.5, 1.2, rules="cuda-agent")})
    md = write_report(tmp_path).markdown.read_text()
    assert "Partial kernels" not in md and "Judged by" not in md


def test_compare_rescores_partial_kernels_under_the_cuda_agent_rules(tmp_path):
    _run(tmp_path, "kernelbench", {(1, 1): _partial(), (1, 2): _partial()})
    own = compare_with_file(tmp_path, EVAL_RESULTS, level=1)
    assert own.rules == "kernelbench"
    assert {r.problem_id: r.ours for r in own.rows if r.ours} == {1: "correct", 2: "correct"}
    rescored = compare_with_file(tmp_path, EVAL_RESULTS, level=1, rules="cuda-agent")
    assert rescored.rules == "cuda-agent"
    rows = {r.problem_id: r for r in rescored.rows if r.ours}
    assert {pid: r.ours for pid, r in rows.items()} == {1: "violation", 2: "violation"}
    reasons = [x for r in rows.values() for x in r.reasons]
    assert any(x.kind == "rules" and "torch.relu (model_new.py:12)" in x.detail for x in reasons)
    assert any("re-scored by the cuda-agent rules" in n for n in rescored.notes)


def test_compare_refuses_kernelbench_rules_over_a_cuda_agent_run(tmp_path):
    _run(tmp_path, "cuda-agent", {(1, 1): verdict("x", True, 1.5, 1.2, rules="cuda-agent")})
    with pytest.raises(UserError, match="judged by the cuda-agent rules"):
        compare_with_file(tmp_path, EVAL_RESULTS, level=1, rules="kernelbench")
    with pytest.raises(UserError, match="rules profile 'foo': choose cuda-agent, kernelbench"):
        compare_with_file(tmp_path, EVAL_RESULTS, level=1, rules="foo")


def test_the_compare_command_takes_rules_and_says_what_it_compared_under(tmp_path):
    _run(tmp_path / "run", "kernelbench", {(1, 1): _partial()})
    base = [sys.executable, "-m", "cuda_agent", "compare", str(tmp_path / "run"),
            "--kernelbench-results", str(EVAL_RESULTS)]  # fmt: skip
    out = subprocess.run([*base, "--rules", "cuda-agent"], capture_output=True, text=True,
                         timeout=120, env={"COLUMNS": "200", **os.environ})  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "ours by the cuda-agent rules" in out.stdout
    data = json.loads((tmp_path / "run" / "compare.json").read_text())
    assert data["rules"] == "cuda-agent" and data["summary"]["reasons"] == {"rules": 1}
    bad = subprocess.run([*base, "--rules", "foo"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2
    assert bad.stderr == "error: rules profile 'foo': choose cuda-agent, kernelbench\n"
