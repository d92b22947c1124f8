"""benchmarks/public_submissions.py on tiny corpora written here: the manifest, which file is which
problem and sample, the stored-solutions layout, and the comparison with a crafted run folder."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from cuda_agent.bench import TheirResult
from cuda_agent.bench.runner import StoredSolutions, check_solutions
from cuda_agent.bench.solution_files import find_solutions
from cuda_agent.bench.store import RunMeta, RunStore, TaskResult
from cuda_agent.errors import UserError
from cuda_agent.sandbox import Status
from cuda_agent.task import load_tasks
from tests.bench.conftest import verdict
from tests.conftest import FIXTURE_KERNELBENCH, REPO

sys.path.insert(0, str(REPO / "benchmarks"))

import _public_compare as compare  # noqa: E402
import _public_corpora as corpora  # noqa: E402
import _run_facts  # noqa: E402
import public_submissions  # noqa: E402

TASKS = {(t.level, t.source.problem_id): t for t in load_tasks(FIXTURE_KERNELBENCH)}
KERNEL = "import torch\nclass ModelNew(torch.nn.Module):\n    pass  # {tag}\n"
NO_IMAGE = "CUDA error: no kernel image is available for execution on the device"
STATIC_FINDING = "model_new.py:7: calls torch.relu in forward: PyTorch computes the result"


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _sample(compiled=True, correct=True, runtime=-1.0, **metadata) -> dict:
    return {"sample_id": 0, "compiled": compiled, "correctness": correct, "runtime": runtime,
            "metadata": {"hardware": "NVIDIA A100", **metadata}}  # fmt: skip


def make_corpora(root: Path) -> Path:
    """Three corpora (a KernelBench run folder pair, a leaderboard, a detailed-results run) and
    their manifest; returns the manifest's path."""
    relu, softmax = TASKS[1, 1].code, TASKS[1, 2].code
    # kbrun: two runs of level 1; its copy of problem 1 differs from ours only in whitespace,
    # its copy of problem 2 is another version of the problem
    kb = root / "kbrun"
    _write(kb / "KernelBench/level1/1_Elementwise_ReLU.py", relu.replace("\n", "  \r\n"))
    _write(kb / "KernelBench/level1/2_Softmax_Over_Features.py", softmax.replace("randn", "rand"))
    for pid in (1, 2):
        _write(
            kb / f"runs/a/level_1_problem_{pid}_sample_0_kernel.py", KERNEL.format(tag=f"a{pid}")
        )
    _write(kb / "runs/a/eval_results.json", json.dumps({
        "1": _sample(runtime=2.0),
        "2": _sample(correct=False, max_difference=["0.05"], correctness_issue="Output mismatch"),
        "3": _sample(correct=False),  # no file: not a submission
        "10": _sample(compiled=False, error="Kernel not found for problem 10 sample 0"),
    }))  # fmt: skip
    _write(kb / "logs/eval.log", "\n".join([
        "Starting Batch Eval with config: EvalConfig({'run_name': 'a', 'level': 1})",
        "[Eval Result] Problem ID: 1, Sample ID: 0",
        "compiled=True correctness=True runtime=2.0 runtime_stats={} ref_runtime=3.0 x",
    ]))  # fmt: skip
    _write(kb / "runs/b/level_1_problem_1_sample_0_kernel.py", KERNEL.format(tag="b1"))
    runs_b = {"1": _sample(correct=False, runtime_error=NO_IMAGE)}
    _write(kb / "runs/b/eval_results.json", json.dumps(runs_b))
    # board: a leaderboard numbering problems from 0, every row correct
    board = root / "board"
    _write(board / "problems/l1_p1.py", relu)
    _write(board / "problems/l1_p10.py", TASKS[1, 10].code)
    rows = [{"level": 1, "problem_id": 0, "file": "f2", "display_name": "m2", "torch_speedup": 1.5,
             "kernel_eval_time": 0.1},
            {"level": 1, "problem_id": 0, "file": "f1", "display_name": "m1", "torch_speedup": 0.5},
            {"level": 1, "problem_id": 9, "file": "f3", "display_name": "m1", "torch_speedup": 2.0},
            {"level": 1, "problem_id": 1, "file": "gone", "display_name": "m1"}]  # fmt: skip
    _write(board / "data/raw.json", json.dumps(rows))
    for name in ("f1", "f2", "f3"):
        _write(board / f"solutions/{name}.py", KERNEL.format(tag=name))
    # detail: problem_N_kernel.py beside detailed_results.json, read from the hub
    detail = root / "detail"
    _write(detail / "runs/o/problem_1_kernel.py", KERNEL.format(tag="o1"))
    _write(detail / "runs/o/problem_2_kernel.py", KERNEL.format(tag="o2"))
    _write(detail / "runs/o/detailed_results.json", json.dumps({"results": [
        {"problem_id": 1, "eval_result": {"compiled": True, "correctness": True, "runtime": 1.0,
                                          "metadata": {"hardware": "NVIDIA A100"}}},
        {"problem_id": 2, "eval_result": None, "error": "no verdict"},
    ]}))  # fmt: skip
    manifest = {"corpora": [
        {"name": "kbrun", "repo": "https://example.org/kbrun", "commit": "a" * 40,
         "gpu": "NVIDIA A100", "problems": "KernelBench/level{level}/{problem}_*.py",
         "sources": [
             {"format": "eval_results", "run": "runs/a", "level": 1, "model": "m",
              "log": "logs/eval.log"},
             {"format": "eval_results", "run": "runs/b", "level": 1}]},
        {"name": "board", "repo": "https://example.org/board", "commit": "b" * 40,
         "gpu": "NVIDIA L40S", "problems": "problems/l{level}_p{problem}.py",
         "sources": [{"format": "leaderboard", "verdicts": "data/raw.json",
                      "kernels": "solutions/{file}.py", "problem_id_base": 0}]},
        {"name": "detail", "repo": "https://example.org/detail", "commit": "c" * 40,
         "problems_scored": "hub", "problems": "missing/{level}/{problem}.py",
         "sources": [{"format": "detailed_results", "run": "runs/o", "level": 1}]},
    ]}  # fmt: skip
    return _write(root / "manifest.json", json.dumps(manifest))


@pytest.fixture
def corpus_root(tmp_path) -> Path:
    root = tmp_path / "corpora"
    make_corpora(root)
    return root


def _all(root: Path) -> list[corpora.Submission]:
    return [
        s for c in corpora.read_manifest(root / "manifest.json") for s in corpora.collect(c, root)
    ]


def test_the_manifest_is_read_and_its_faults_named(tmp_path, corpus_root):
    found = corpora.read_manifest(corpus_root / "manifest.json")
    assert [c.name for c in found] == ["kbrun", "board", "detail"]
    assert found[0].sources[0] == corpora.Source("eval_results", run="runs/a", level=1, model="m",
                                                 log="logs/eval.log")  # fmt: skip
    assert found[2].problems_scored == "hub" and found[1].sources[0].problem_id_base == 0
    cases = {
        "missing commit, sources": {"corpora": [{"name": "x", "repo": "r"}]},
        "format eval_results needs level": {"corpora": [{"name": "x", "repo": "r", "commit": "c",
                                            "sources": [{"format": "eval_results", "run": "r"}]}]},
        "unknown keys colour": {"corpora": [{"name": "x", "repo": "r", "commit": "c", "sources": [
            {"format": "eval_results", "run": "r", "level": 1, "colour": "red"}]}]},
        "names repeat": {"corpora": [{"name": "x", "repo": "r", "commit": "c", "sources": [
            {"format": "leaderboard", "verdicts": "v", "kernels": "k"}]}] * 2},
        "non-empty list": {"corpora": []},
    }  # fmt: skip
    for message, data in cases.items():
        with pytest.raises(UserError, match=message):
            corpora.read_manifest(_write(tmp_path / "m.json", json.dumps(data)))
    with pytest.raises(UserError, match="not valid JSON"):
        corpora.read_manifest(_write(tmp_path / "m.json", "{"))


def test_each_file_maps_to_its_problem_and_a_sample_of_the_corpus(corpus_root):
    subs = {(s.corpus, s.problem_id, s.sample): s for s in _all(corpus_root)}
    assert set(subs) == {("kbrun", 1, 0), ("kbrun", 2, 0), ("kbrun", 1, 1), ("board", 1, 0),
                         ("board", 1, 1), ("board", 10, 0), ("detail", 1, 0)}  # fmt: skip
    first, second = subs["kbrun", 1, 0], subs["kbrun", 1, 1]  # both runs' sample 0, kept apart
    assert (first.source, first.source_sample, first.path) == (
        "runs/a", 0, "runs/a/level_1_problem_1_sample_0_kernel.py")  # fmt: skip
    assert first.theirs.correct and first.theirs.speedup == pytest.approx(1.5)  # from the log
    assert second.source == "runs/b" and second.theirs.outcome == "runtime_error"
    assert second.theirs.sample_id == 1 and "no kernel image" in second.theirs.error
    mismatch = subs["kbrun", 2, 0].theirs
    assert mismatch.outcome == "mismatch" and mismatch.max_difference == pytest.approx(0.05)
    # the leaderboard's 0-based ids; its samples ordered by model; a row without its file skipped
    assert [(subs["board", 1, k].path, subs["board", 1, k].model) for k in (0, 1)] == [
        ("solutions/f1.py", "m1"), ("solutions/f2.py", "m2")]  # fmt: skip
    board = subs["board", 1, 1].theirs
    assert (board.correct, board.speedup, board.runtime, board.hardware) == (
        True, 1.5, 0.1, "NVIDIA L40S")  # fmt: skip
    assert subs["detail", 1, 0].theirs.correct  # problem 2 has no eval_result: no verdict


def test_a_corpus_not_fetched_says_how_to_fetch_it(tmp_path, corpus_root, capsys):
    found = corpora.read_manifest(corpus_root / "manifest.json")
    with pytest.raises(UserError, match=r"git clone https://example.org/kbrun .*checkout a{40}"):
        corpora.check_fetched(found, tmp_path / "elsewhere")
    with pytest.raises(SystemExit, match="corpus kbrun is not fetched"):
        public_submissions.main(["list", "--manifest", str(corpus_root / "manifest.json"),
                                 "--corpora", str(tmp_path / "elsewhere")])  # fmt: skip


def test_the_selection_is_stable_and_takes_passed_and_failed_files(corpus_root):
    subs = _all(corpus_root)
    assert corpora.select(subs, {2}) == []
    picked = corpora.select(subs, None, per_corpus=2)
    kb = [s for s in picked if s.corpus == "kbrun"]
    assert len(kb) == 2 and sorted(s.theirs.correct for s in kb) == [False, True]
    assert len([s for s in picked if s.corpus == "board"]) == 2
    again = corpora.select(list(reversed(subs)), None, per_corpus=2)  # whatever the order read
    assert sorted(s.key for s in again) == sorted(s.key for s in picked)


def test_the_layout_is_a_solutions_folder_bench_reads(tmp_path, corpus_root):
    subs = [s for s in _all(corpus_root) if s.corpus == "kbrun"]
    folders = corpora.lay_out(subs, corpus_root, tmp_path / "solutions")
    folder = folders["kbrun"]
    assert sorted(p.name for p in folder.iterdir()) == [
        "level_1_problem_1_sample_0_kernel.py", "level_1_problem_1_sample_1_kernel.py",
        "level_1_problem_2_sample_0_kernel.py"]  # fmt: skip
    assert "b1" in (folder / "level_1_problem_1_sample_1_kernel.py").read_text()
    check_solutions(list(TASKS.values()), StoredSolutions(folder, None))
    assert [k for k, _ in find_solutions(folder, TASKS[1, 1])] == [0, 1]
    kept = folder / "level_1_problem_1_sample_0_kernel.py"
    os.utime(kept, (1, 1))
    smaller = [s for s in subs if s.problem_id == 1]  # a smaller selection, laid out again
    corpora.lay_out(smaller, corpus_root, tmp_path / "solutions")
    assert kept.stat().st_mtime == 1  # the same text: left as it is
    assert not (folder / "level_1_problem_2_sample_0_kernel.py").exists()
    corpus = corpora.read_manifest(corpus_root / "manifest.json")[0]
    problems = corpora.lay_out_problems(corpus, corpus_root, subs, tmp_path / "problems")
    own = {(t.level, t.source.problem_id): t for t in load_tasks(problems)}
    assert set(own) == {(1, 1), (1, 2)} and "torch.rand(" in own[1, 2].code


def test_bench_is_run_per_corpus_and_level_under_the_kernelbench_rules(tmp_path):
    cmd = public_submissions.bench_command("kbrun", 2, [5, 1, 5], Path("/kb"), tmp_path, ["--x"])
    assert cmd[1:4] == ["-m", "cuda_agent", "bench"]
    assert cmd[-1] == "--x"
    flags = dict(zip(cmd[4:-1:2], cmd[5:-1:2], strict=True))
    assert flags == {
        "--out": str(tmp_path / "runs/kbrun/level2"),
        "--tasks": "kernelbench",
        "--kernelbench": "/kb",
        "--levels": "2",
        "--ids": "1,5",
        "--solutions": str(tmp_path / "solutions/kbrun"),
        "--rules": "kernelbench",
    }


def test_the_problem_text_is_compared_with_ours(corpus_root):
    kb, _, detail = corpora.read_manifest(corpus_root / "manifest.json")
    copy = corpora.their_problem(kb, corpus_root, 1, 1).read_text()
    assert compare.problem_status(kb, copy, TASKS[1, 1]) == ("same", "")  # whitespace only
    other = corpora.their_problem(kb, corpus_root, 1, 2).read_text()
    status, detail_text = compare.problem_status(kb, other, TASKS[1, 2])
    assert status == "differs" and "torch.rand(" in detail_text and "torch.randn(" in detail_text
    assert compare.problem_status(kb, None, TASKS[1, 1])[0] == "unknown"
    assert compare.problem_status(kb, copy, None)[0] == "absent"
    hub = compare.problem_status(detail, copy, TASKS[1, 1])
    assert hub == ("unknown", "the source read the Hugging Face dataset; the repository's copy "
                              "is the same as ours")  # fmt: skip


def _run_folder(run: Path, cases: dict) -> None:
    """A bench run folder (kernelbench rules) holding crafted verdicts by (level, id, sample)."""
    store = RunStore(run)
    store.start(RunMeta(kind="solutions", tasks="kernelbench", solutions="/s", rules="kernelbench"))
    for (level, pid, sample), v in cases.items():
        task = TASKS[level, pid]
        v = v.model_copy(update={"task": task.name, "task_hash": task.hash, "gpu": "NVIDIA H100"})
        store.record(TaskResult.of(task, v, sample=sample))


def _sub(corpus="kbrun", pid=1, sample=0, **theirs) -> corpora.Submission:
    base = {"level": 1, "problem_id": pid, "sample_id": sample, "compiled": True, "correct": True,
            "hardware": "NVIDIA A100"}  # fmt: skip
    t = TheirResult(**{**base, **theirs})
    return corpora.Submission(corpus, "runs/a", None, 1, pid, sample, sample, f"f{pid}_{sample}", t)


def test_disagreements_are_named_by_reason(tmp_path):
    run = tmp_path / "run"
    cases = {  # (level, problem, sample): ours, beside the source's verdict below
        (1, 1, 0): verdict("x", True, 2.0, 1.5),
        (1, 1, 1): verdict("x", status=Status.VIOLATION, violations=[STATIC_FINDING]),
        (1, 1, 2): verdict("x", max_abs_error=0.05),
        (1, 1, 3): verdict("x", max_abs_error=3.0),
        (1, 1, 4): verdict("x", True, 1.0, 1.0),
        (1, 1, 5): verdict("x", status=Status.COMPILE_ERROR, message="nvcc: error\nmore"),
        (1, 1, 6): verdict("x", status=Status.NO_GPU),
        (1, 2, 0): verdict("x", True, 1.0, 1.0),
    }  # fmt: skip
    _run_folder(run, cases)
    subs = [_sub(speedup=1.0), _sub(sample=1), _sub(sample=2), _sub(sample=3),
            _sub(sample=4, correct=False, runtime_error=True, error=NO_IMAGE),
            _sub(sample=5), _sub(sample=6), _sub(pid=2, correct=False), _sub(sample=7)]  # fmt: skip
    texts = {(1, 1): ("same", ""), (1, 2): ("differs", "line 20: theirs 'a', ours 'b'")}
    results = compare.our_results(run)
    rows = compare.compare_rows(run, [s.theirs for s in subs], 1)
    lines = [compare.judge(s, texts[1, s.problem_id], results.get((1, s.problem_id, s.sample)),
                           rows.get((1, s.problem_id, s.sample))) for s in subs]  # fmt: skip
    by = {(x["problem_id"], x["sample"]): x for x in lines}
    agree = by[1, 0]
    assert agree["verdict"] == "agree" and agree["agree_compile"] and agree["gpu_differs"]
    assert (agree["ours"]["speedup_vs_eager"], agree["theirs"]["speedup"]) == (2.0, 1.0)
    assert [x["kind"] for x in by[1, 1]["reasons"]] == ["hack"]
    assert "our static guard: " + STATIC_FINDING in by[1, 1]["reasons"][0]["detail"]
    assert by[1, 1]["agree_compile"] is None  # a refusal says nothing about the build
    assert (
        by[1, 2]["reason"] == "precision"
        and "0.05 is within 10x" in by[1, 2]["reasons"][0]["detail"]
    )
    assert by[1, 3]["reason"] == "unexplained" and by[1, 3]["compare"]  # compare_run's reasons
    gpu = by[1, 4]
    assert gpu["reason"] == "different_gpu" and "no kernel image" in gpu["reasons"][0]["detail"]
    assert "theirs NVIDIA A100, ours NVIDIA H100" in gpu["reasons"][0]["detail"]
    assert by[1, 5]["reason"] == "unexplained" and by[1, 5]["ours"]["message"] == "nvcc: error"
    assert by[1, 6]["verdict"] == "no_verdict" and by[1, 6]["agree_correct"] is None
    assert by[2, 0]["reason"] == "changed_problem" and "line 20" in by[2, 0]["reasons"][0]["detail"]
    assert by[1, 7]["verdict"] == "not_run" and by[1, 7]["ours"] is None

    summary = compare.summarize(lines)
    overall = summary["overall"]
    assert (overall["files"], overall["compared"], overall["agree"]) == (9, 7, 1)
    assert (overall["no_verdict"], overall["not_run"]) == (1, 1)
    assert overall["problem_text"]["same"] == {"files": 8, "compared": 6, "agree": 1}
    assert overall["agreement_where_text_same"] == round(1 / 6, 4)
    assert overall["reasons"] == {"unexplained": 2, "hack": 1, "precision": 1,
                                  "different_gpu": 1, "changed_problem": 1}  # fmt: skip
    assert overall["speedup_pairs"] == 1 and overall["median_speedup_ratio_ours_over_theirs"] == 2
    refused = summary["refused_passed_by_source"]
    assert [(r["sample"], r["reason"]) for r in refused] == [(1, "hack"), (5, "unexplained")]
    assert summary["goal"] == {"agreement_where_text_same": round(1 / 6, 4), "target": 0.95,
                               "met": False, "refused_unexplained": 1}  # fmt: skip
    markdown = compare.summary_markdown(summary, {"gpu": "NVIDIA H100", "commit": "abc"})
    assert "| kbrun | 9 | 7 | 1 | 14.3 % | 1/6 |" in markdown
    assert "a hack we catch" in markdown and "## Disagreements (6)" in markdown


def test_compare_writes_a_line_per_file_and_the_summary(tmp_path, corpus_root, monkeypatch):
    monkeypatch.setattr(_run_facts, "run_facts", lambda: {"gpu": "NVIDIA H100", "commit": "c"})
    work, out = tmp_path / "work", tmp_path / "out" / "public.jsonl"
    _run_folder(work / "runs/kbrun/level1", {(1, 1, 0): verdict("x", True, 1.2, 1.0),
                                             (1, 1, 1): verdict("x", True, 1.0, 1.0)})  # fmt: skip
    args = ["compare", "--manifest", str(corpus_root / "manifest.json"), "--corpora",
            str(corpus_root), "--kernelbench", str(FIXTURE_KERNELBENCH), "--work", str(work),
            "--out", str(out), "--only", "kbrun,board"]  # fmt: skip
    assert public_submissions.main(args) == 0
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert [(x["corpus"], x["problem_id"], x["sample"], x["verdict"]) for x in lines] == [
        ("kbrun", 1, 0, "agree"),
        ("kbrun", 1, 1, "disagree"),
        ("kbrun", 2, 0, "not_run"),
        ("board", 1, 0, "not_run"),
        ("board", 1, 1, "not_run"),
        ("board", 10, 0, "not_run"),
    ]
    assert lines[1]["reason"] == "different_gpu" and lines[0]["machine"]["gpu"] == "NVIDIA H100"
    assert lines[2]["problem_text"] == "differs" and lines[3]["problem_text"] == "same"
    assert (work / "solutions/board/level_1_problem_10_sample_0_kernel.py").is_file()
    summary = json.loads((tmp_path / "out" / "public.summary.json").read_text())
    assert summary["overall"]["compared"] == 2 and summary["by_corpus"]["board"]["not_run"] == 3
    assert (tmp_path / "out" / "public.summary.md").read_text().startswith("# Public submissions")


def test_a_bench_past_the_budget_is_interrupted_and_no_other_started(tmp_path, monkeypatch, capsys):
    started = []

    def slow(corpus, level, *rest):
        started.append((corpus, level))
        return [sys.executable, "-c", "import time; time.sleep(60)"]

    monkeypatch.setattr(public_submissions, "bench_command", slow)
    subs = [_sub(corpus="a"), _sub(corpus="b")]
    found = [corpora.Corpus(name, "r", "c", None, None, "copy", ()) for name in ("a", "b")]
    plan = {"a": (Path("/kb"), {}), "b": (Path("/kb"), {})}
    public_submissions.run_benches(found, subs, plan, tmp_path, [], budget_s=1)
    assert started == [("a", 1)]
    said = capsys.readouterr().out
    assert "interrupted at --budget-s" in said and "b level 1: not started" in said
    assert (tmp_path / "logs" / "a-level1.log").is_file()
