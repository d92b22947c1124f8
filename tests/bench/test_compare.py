"""Our verdicts beside another harness's: the same, or each difference's named reason."""

import json
import os
import re
import subprocess
import sys

import pytest

from cuda_agent.bench import compare_with_file
from cuda_agent.bench.store import RunMeta, RunStore, TaskResult
from cuda_agent.errors import UserError
from cuda_agent.sandbox import Check, Rule, Status, Violation
from cuda_agent.task import Task, TaskSource, load_tasks
from tests.bench.conftest import verdict
from tests.conftest import FIXTURE_KERNELBENCH

EVAL_RESULTS = FIXTURE_KERNELBENCH / "results" / "eval_results_level1.json"
BASELINE = FIXTURE_KERNELBENCH / "results" / "baseline_time_torch.json"
TASKS = {(t.level, t.source.problem_id): t for t in load_tasks(FIXTURE_KERNELBENCH)}
STATIC_FINDING = "model_new.py:14: calls torch.softmax in forward: PyTorch computes the result"
RUNTIME_FINDING = "forward dispatched aten::lstm (1x): PyTorch computed part of the result"


def _run(root, cases: dict, modes: dict | None = None) -> RunStore:
    """A bench run of the fixture problems with crafted verdicts; `modes` adds the module mode a
    verdict records."""
    store = RunStore(root)
    store.start(RunMeta(kind="solutions", tasks="kernelbench", solutions="/s"))
    for key, v in cases.items():
        task = TASKS.get(key) or _extra(*key)
        v = v.model_copy(update={"task": task.name, "task_hash": task.hash})
        record = json.loads(TaskResult.of(task, v).model_dump_json())
        if modes and key in modes:
            record["verdict"]["module_mode"] = modes[key]
        with (root / RunStore.RESULTS).open("a") as fh:
            fh.write(json.dumps(record) + "\n")
    return store


def _extra(level: int, pid: int) -> Task:
    """A problem the fixtures lack: the ReLU problem's text under another number."""
    source = TaskSource("kernelbench", f"level{level}/{pid}_Extra.py", level=level, problem_id=pid)
    return Task(f"L{level}_{pid}_Extra", TASKS[1, 1].code + f"# problem {pid}\n", source)


def _jsonl(path, rows) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def _row(level, pid, compiled=True, correct=True, **extra) -> dict:
    return {"level": level, "problem_id": pid, "compiled": compiled, "correct": correct, **extra}


def _by_problem(comparison) -> dict:
    return {(r.level, r.problem_id): r for r in comparison.rows}


def test_the_check_that_caught_a_hack_is_read_from_the_typed_violation(tmp_path):
    stopped = Violation(
        rule=Rule.TRACE_STOPPED,
        check=Check.RUNTIME_GUARD,
        message="the candidate's process stopped recording GPU activity",
    )
    escaped = Violation(
        rule=Rule.ESCAPED_WORK,
        check=Check.TIMING_CHECKS,
        message="forward dispatched nothing, but work was still running",
    )
    _run(tmp_path / "a", {
        (1, 1): verdict("x", status=Status.VIOLATION, violations=[stopped]),
        (1, 2): verdict("x", status=Status.VIOLATION, violations=[escaped]),
    })  # fmt: skip
    rows = _by_problem(compare_with_file(tmp_path / "a", EVAL_RESULTS))
    assert [rows[key].reasons[0].detail for key in ((1, 1), (1, 2))] == [
        f"our runtime guard: {stopped.message}",
        f"our timing checks: {escaped.message}",  # however its line opens
    ]
    refused = verdict("x", status=Status.VIOLATION, message="sent a malformed extension call")
    _run(tmp_path / "b", {(1, 1): refused})
    [row] = [r for r in compare_with_file(tmp_path / "b", EVAL_RESULTS).rows if r.same is False]
    assert row.reasons[0].detail == "our guard: sent a malformed extension call"  # no rule named


def test_kernelbench_eval_results_beside_a_run(tmp_path):
    _run(tmp_path, {
        (1, 1): verdict("x", True, 2.0, 1.5),
        (1, 2): verdict("x", status=Status.VIOLATION, violations=[STATIC_FINDING, "b", "c"]),
        (1, 10): verdict("x", True, 1.2, 0.9),
        (2, 1): verdict("x", True, 1.1, 1.0),
    })  # fmt: skip
    with pytest.raises(UserError, match="names no level"):  # the run has two levels
        compare_with_file(tmp_path, EVAL_RESULTS)
    rows = _by_problem(compare_with_file(tmp_path, EVAL_RESULTS, level=1))
    assert set(rows) == {(1, 1), (1, 2), (1, 3), (1, 10)}  # level 2 is not compared
    relu = rows[1, 1]
    assert relu.same and relu.reasons == () and (relu.ours_speedup, relu.theirs_speedup) == (2, 2)
    softmax = rows[1, 2]
    assert not softmax.same and [r.kind for r in softmax.reasons] == ["guard"]
    assert softmax.reasons[0].detail == f"our static guard: {STATIC_FINDING} (+2 more)"
    row_sum = rows[1, 10]  # theirs missed by 0.0041, within our atol 1e-2
    assert [r.kind for r in row_sum.reasons] == ["tolerance"]
    assert "0.00412 is within ours (atol 0.01, rtol 0.01)" in row_sum.reasons[0].detail
    assert rows[1, 3].same is None and rows[1, 3].reasons[0].kind == "only_theirs"


def test_each_kind_of_difference_is_named(tmp_path):
    _run(tmp_path, {
        (1, 1): verdict("x", status=Status.MISMATCH, input_distribution="signed",
                        max_abs_error=0.8),
        (1, 2): verdict("x", status=Status.TIMEOUT),
        (1, 10): verdict("x", status=Status.COMPILE_ERROR, message="k.cu(3): error: x\nmore"),
        (2, 1): verdict("x", True, 1.3, 1.1),
        (2, 2): verdict("x", status=Status.MISMATCH),
        (1, 3): verdict("x", True, 1.3, 1.1),
        (3, 1): verdict("x", status=Status.VIOLATION, violations=[RUNTIME_FINDING]),
    }, modes={(2, 2): "eval"})  # fmt: skip
    theirs = _jsonl(tmp_path / "theirs.jsonl", [
        _row(1, 1), _row(1, 2), _row(1, 10),
        _row(2, 1, compiled=False, correct=False, hash="ffffffffffffffff", error="ptxas fatal"),
        _row(2, 2, mode="train"),
        _row(3, 1),
        _row(1, 3, correct=False),
    ])  # fmt: skip
    rows = _by_problem(compare_with_file(tmp_path, theirs))
    kinds = {key: [r.kind for r in row.reasons] for key, row in rows.items()}
    assert kinds == {
        (1, 1): ["inputs"],  # our re-drawn inputs: the recorded cause
        (1, 2): ["timeout"],
        (1, 3): ["inputs", "version"],  # neither file records why: the likely causes
        (1, 10): ["compile_error"],
        (2, 1): ["version", "compile_error"],
        (2, 2): ["module_mode", "inputs"],
        (3, 1): ["guard"],
    }
    assert all(row.same is False for row in rows.values())
    assert "re-drawn inputs (signed)" in rows[1, 1].reasons[0].detail
    assert [r.certain for r in rows[1, 3].reasons] == [False, False]
    assert rows[1, 10].reasons[0].detail == "ours failed to build: k.cu(3): error: x"
    assert rows[2, 1].reasons[0].detail.endswith("theirs ffffffffffffffff")
    assert rows[2, 1].reasons[1].detail == "theirs failed to build: ptxas fatal"
    assert rows[2, 2].reasons[0].detail == "module mode: ours eval, theirs train"
    assert rows[3, 1].reasons[0].detail.startswith("our runtime guard: forward dispatched")


def test_same_verdicts_still_note_a_different_problem_text(tmp_path):
    _run(tmp_path, {(1, 1): verdict("x", True, 2.0, 1.5),
                    (1, 2): verdict("x", status=Status.MISMATCH)})  # fmt: skip
    theirs = _jsonl(tmp_path / "t.jsonl", [
        _row(1, 1, hash=TASKS[1, 1].hash),
        _row(1, 2, compiled=False, correct=False, code=TASKS[1, 10].code),
    ])  # fmt: skip
    c = compare_with_file(tmp_path, theirs)
    rows = _by_problem(c)
    assert rows[1, 1].same and rows[1, 1].reasons == ()
    assert rows[1, 2].same and [r.kind for r in rows[1, 2].reasons] == ["version", "both_fail"]
    assert rows[1, 2].reasons[1].detail == "ours mismatch, theirs compile_error"
    assert not c.notes  # their rows identify the problem texts


def test_their_problems_give_the_versions_eval_results_lack(tmp_path):
    _run(tmp_path, {(1, 10): verdict("x", True, 1.2, 0.9)})
    copy = tmp_path / "theirs" / "KernelBench" / "level1"
    copy.mkdir(parents=True)
    source = FIXTURE_KERNELBENCH / "KernelBench" / "level1" / "10_Row_Sum.py"
    (copy / "10_Row_Sum.py").write_text(source.read_text().replace("length = 300", "length = 30"))
    c = compare_with_file(tmp_path, EVAL_RESULTS, their_problems=tmp_path / "theirs")
    row = _by_problem(c)[1, 10]
    assert [r.kind for r in row.reasons] == ["version", "tolerance"]
    assert not any("versions are unknown" in n for n in c.notes)
    plain = compare_with_file(tmp_path, EVAL_RESULTS)
    assert any("versions are unknown" in n for n in plain.notes)


def test_their_baseline_file_gives_the_speedups_their_results_lack(tmp_path):
    _run(tmp_path, {
        (1, 1): verdict("x", True, 2.0, 1.5),
        (1, 2): verdict("x", True, 1.8, 1.2),
        (1, 10): verdict("x", True, 1.2, 0.9),
    })  # fmt: skip
    assert _by_problem(compare_with_file(tmp_path, EVAL_RESULTS))[1, 2].theirs_speedup is None
    comparison = compare_with_file(tmp_path, EVAL_RESULTS, their_baseline=BASELINE)
    rows = _by_problem(comparison)
    assert rows[1, 2].theirs_speedup == pytest.approx(0.062 / 0.031)
    assert rows[1, 1].theirs_speedup == pytest.approx(2.0)  # their run timed its own reference
    assert rows[1, 10].theirs_speedup is None  # not correct: KernelBench times nothing
    assert any(str(BASELINE) in n and "over their runtime" in n for n in comparison.notes)
    assert not any("two machines" in n for n in comparison.notes)


def test_a_baseline_from_another_gpu_is_named(tmp_path):
    _run(tmp_path, {(1, 2): verdict("x", True, 1.8, 1.2)})
    other = json.loads(BASELINE.read_text())
    for entry in other["level1"].values():
        entry["hardware"] = "NVIDIA L40S"
    path = tmp_path / "l40s.json"
    path.write_text(json.dumps(other))
    notes = compare_with_file(tmp_path, EVAL_RESULTS, level=1, their_baseline=path).notes
    assert any("timed on NVIDIA L40S, their kernels on NVIDIA H100 80GB HBM3" in n for n in notes)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"level1": {"2_Softmax.py": {"std": 0.1}}}, "'2_Softmax.py' has no mean time"),
        ({"level1": {"Softmax.py": {"mean": 0.1}}}, "'Softmax.py' has no mean time"),
        ({"level1": {}}, "holds no timings"),
        ([1, 2], "expected KernelBench's baseline timing JSON"),
    ],
)
def test_a_baseline_file_of_another_shape_is_one_clear_error(tmp_path, data, message):
    _run(tmp_path / "run", {(1, 2): verdict("x", True, 1.8, 1.2)})
    path = tmp_path / "baseline.json"
    path.write_text(json.dumps(data))
    with pytest.raises(UserError, match=re.escape(message)):
        compare_with_file(tmp_path / "run", EVAL_RESULTS, their_baseline=path)


def test_the_command_prints_a_table_and_writes_markdown_and_json(tmp_path):
    run = tmp_path / "run"
    caught = verdict("x", status=Status.VIOLATION, violations=[STATIC_FINDING])
    _run(run, {(1, 1): verdict("x", True, 2.0, 1.5), (1, 2): caught})
    cmd = [sys.executable, "-m", "cuda_agent", "compare", str(run), "--kernelbench-results",
           str(EVAL_RESULTS)]  # fmt: skip
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                         env={"COLUMNS": "200", **_env()})  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "2 in both: 1 the same, 1 different; 0 only in ours, 2 only in theirs" in out.stdout
    md = (run / "compare.md").read_text()
    assert "| L1 #2 | L1_2_Softmax_Over_Features | violation | correct |" in md
    assert "different: guard: our static guard: model_new.py:14:" in md
    assert "Their GPU: NVIDIA H100 80GB HBM3." in md
    data = json.loads((run / "compare.json").read_text())
    assert data["summary"] == {"compared": 2, "same": 1, "different": 1, "only_ours": 0,
                               "only_theirs": 2, "reasons": {"guard": 1}}  # fmt: skip
    assert data["rows"][0]["reasons"] == [] and data["theirs"] == str(EVAL_RESULTS)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--kernelbench-results", "nope.json"), "--kernelbench-results nope.json: no such file"),
        (("--kernelbench-results", str(EVAL_RESULTS), "--level", "2"),
         "holds no results of KernelBench level 2"),
        (("--kernelbench-results", str(EVAL_RESULTS), "--kernelbench-baseline", "nope.json"),
         "--kernelbench-baseline nope.json: no such file"),
        (("--kernelbench-results", str(EVAL_RESULTS), "--kernelbench-baseline",
          str(EVAL_RESULTS)), "key '1' is not a level"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, message):
    _run(tmp_path / "run", {(1, 1): verdict("x", True, 2.0, 1.5)})
    cmd = [sys.executable, "-m", "cuda_agent", "compare", str(tmp_path / "run"), *args]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert out.returncode == 2
    assert out.stderr.startswith("error: ") and out.stderr.count("\n") == 1
    assert message in out.stderr
    plain = subprocess.run([sys.executable, "-m", "cuda_agent", "compare", str(tmp_path), *args],
                           capture_output=True, text=True, timeout=120, cwd=tmp_path)  # fmt: skip
    assert plain.returncode == 2 and "not a bench run folder" in plain.stderr


def _env() -> dict:
    return dict(os.environ)


def test_a_run_of_several_samples_is_compared_sample_by_sample(tmp_path):
    """Our sample K beside their sample K: the fixture's problem 1 has a correct sample 0 and a
    sample 1 that did not compile."""
    store = RunStore(tmp_path)
    store.start(RunMeta(kind="solutions", tasks="kernelbench", solutions="/s"))
    task = TASKS[1, 1]
    for sample, v in ((0, verdict("x", True, 2.0, 1.5)), (1, verdict("x"))):
        v = v.model_copy(update={"task": task.name, "task_hash": task.hash})
        store.record(TaskResult.of(task, v, sample=sample))
    first = _by_problem(compare_with_file(tmp_path, EVAL_RESULTS, level=1))[1, 1]
    assert (first.ours, first.theirs, first.same) == ("correct", "correct", True)
    second = _by_problem(compare_with_file(tmp_path, EVAL_RESULTS, level=1, sample=1))[1, 1]
    # both failed it: the same verdict on whether it passes
    assert (second.ours, second.theirs, second.same) == ("mismatch", "compile_error", True)
