"""Reading another harness's verdicts: KernelBench's eval_results.json and our JSONL rows."""

import json

import pytest

from cuda_agent.bench import read_their_results
from cuda_agent.errors import UserError
from cuda_agent.task import content_hash
from tests.conftest import FIXTURE_KERNELBENCH

EVAL_RESULTS = FIXTURE_KERNELBENCH / "results" / "eval_results_level1.json"


def test_eval_results_samples_outcomes_and_speedups():
    found = {r.problem_id: r for r in read_their_results(EVAL_RESULTS, level=1)}
    assert sorted(found) == [1, 2, 3, 10]
    relu = found[1]
    assert (relu.level, relu.sample_id, relu.outcome) == (1, 0, "correct")
    assert relu.speedup == pytest.approx(2.0)  # ref_runtime / runtime
    assert relu.mode == "train" and relu.hardware == "NVIDIA H100 80GB HBM3"
    assert found[2].speedup is None  # timed only the candidate: no speed-up
    assert found[10].outcome == "mismatch" and found[10].max_difference == pytest.approx(0.00412)
    assert found[3].outcome == "runtime_error"  # a single sample written as an object
    assert found[3].error == "CUDA error: an illegal memory access was encountered"
    [second] = [r for r in read_their_results(EVAL_RESULTS, level=1, sample=1)]
    assert second.outcome == "compile_error" and "relu_v2" in second.error


def test_eval_results_needs_its_level():
    with pytest.raises(UserError, match="names no level .* pass --level N"):
        read_their_results(EVAL_RESULTS)


def test_jsonl_rows(tmp_path):
    code = (FIXTURE_KERNELBENCH / "KernelBench" / "level2" / "1_Conv2d_ReLU_AddBias.py").read_text()
    rows = [
        {"level": 2, "problem_id": 1, "compiled": True, "correct": True, "speedup": 1.4,
         "code": code, "mode": "eval"},
        {"level": 2, "problem_id": 2, "compiled": True, "correctness": False, "timeout": True,
         "hash": "0123456789abcdef", "sample_id": 0},
        {"level": 3, "problem_id": 1, "compiled": False, "correct": False, "error": "nvcc: x\ny"},
    ]  # fmt: skip
    path = tmp_path / "theirs.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    conv, bn, lstm = read_their_results(path)
    assert conv.speedup == 1.4 and conv.mode == "eval" and conv.problem_hash == content_hash(code)
    assert bn.outcome == "timeout" and bn.problem_hash == "0123456789abcdef"
    assert lstm.outcome == "compile_error" and lstm.error == "nvcc: x"
    assert [r.problem_id for r in read_their_results(path, level=2)] == [1, 2]


def test_a_list_of_rows_naming_task_and_solution(tmp_path):
    """The fork's eval_results.json: problem and sample in task_id and solution_id, errors in
    metadata, runtime -1 where nothing was timed."""
    rows = [
        {"evaluation_id": "level_1_problem_19_solution_0", "task_id": "level_1_problem_19",
         "solution_id": "level_1_problem_19_solution_0", "compiled": True, "correctness": True,
         "metadata": {"hardware": "NVIDIA H100 80GB HBM3"}, "runtime": 0.41,
         "runtime_stats": {"mean": 0.41}},
        {"task_id": "level_1_problem_19", "solution_id": "level_1_problem_19_solution_1",
         "compiled": True, "correctness": False, "runtime": -1.0,
         "metadata": {"runtime_error": "CUDA error: misaligned address\nmore"}},
        {"task_id": "level_2_problem_3", "solution_id": 2, "compiled": False,
         "correctness": False, "metadata": {"compilation_error": "nvcc failed"}},
    ]  # fmt: skip
    path = tmp_path / "eval_results.json"
    path.write_text(json.dumps(rows))
    [first] = read_their_results(path)
    assert (first.level, first.problem_id, first.sample_id) == (1, 19, 0)
    assert first.outcome == "correct" and first.runtime == 0.41 and first.speedup is None
    assert first.mode == "train" and first.hardware == "NVIDIA H100 80GB HBM3"
    [second] = read_their_results(path, sample=1)
    assert second.outcome == "runtime_error" and second.runtime is None
    assert second.error == "CUDA error: misaligned address"
    [third] = read_their_results(path, level=2, sample=2)
    assert (third.problem_id, third.outcome, third.error) == (3, "compile_error", "nvcc failed")


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("r.json", "{not json", r"r\.json: not valid JSON"),
        ("r.json", "[1, 2]", r"r\.json item 0: expected KernelBench's eval_results\.json"),
        ("r.json", '{"x": []}', r"key 'x' is not a problem id"),
        ("r.json", '{"1": [{"sample_id": 0}]}', r"problem 1: expected KernelBench's"),
        ("r.json", "{}", r"holds no results"),
        ("r.jsonl", '{"level": 1, "problem_id": 2}\n', r"r\.jsonl:1: missing compiled, correct"),
        ("r.jsonl", '{"level": "one", "problem_id": 2, "compiled": true, "correct": true}\n',
         r"level 'one' is not a whole number"),
        ("r.json", '"text"', r"r\.json: expected"),
        ("r.json", '[{"task_id": "relu", "compiled": true}]', r"task_id 'relu' names no level_L"),
        ("r.json", '[{"task_id": "level_1_problem_2", "solution_id": "best", "compiled": true}]',
         r"solution_id 'best' ends in no _sample_K or _solution_K"),
        ("r.json", '[{"task_id": "level_1_problem_2"}]', r"item 0: missing compiled"),
    ],
)  # fmt: skip
def test_bad_files_are_one_clear_line(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(UserError, match=message) as err:
        read_their_results(path, level=1)
    assert "\n" not in str(err.value)


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(UserError, match=r"--kernelbench-results .*nope\.json: no such file"):
        read_their_results(tmp_path / "nope.json")
