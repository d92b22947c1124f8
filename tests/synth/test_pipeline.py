"""A small CPU synthesis through every stage; the dataset's invariants checked on its output."""

import json
import os
import subprocess
import sys
import time
from collections import Counter

import pyarrow.parquet as pq
import pytest

from cuda_agent.errors import UserError
from cuda_agent.sandbox import run_isolated
from cuda_agent.synth import Pipeline, SynthConfig
from cuda_agent.synth.decontam import ast_tokens, build_reference, cache_file, similarity
from cuda_agent.synth.dedup import signature_key, source_key
from cuda_agent.synth.journal import STAGES, open_journals
from cuda_agent.synth.verify import count_label_calls
from cuda_agent.task import KERNELBENCH_ENV, content_hash, load_tasks
from tests.conftest import FIXTURE_KERNELBENCH_JSONL
from tests.synth.conftest import E2E_TASKS


@pytest.fixture(scope="module")
def rows(e2e):
    return [json.loads(line) for line in (e2e.out / "tasks.jsonl").read_text().splitlines()]


def test_the_run_exports_the_tasks_it_was_asked_for(e2e, rows):
    assert len(rows) == E2E_TASKS == len(e2e.exported)
    assert [r["candidate"] for r in rows] == e2e.exported == e2e.accepted[:E2E_TASKS]
    funnel = {f["stage"]: f for f in e2e.summary["funnel"]}
    assert list(funnel) == [*STAGES, "export"]
    for before, after in zip(STAGES, STAGES[1:], strict=False):
        assert funnel[after]["in"] <= funnel[before]["passed"]


def test_no_duplicates(rows, e2e):
    journals = open_journals(e2e.out)
    assert len({source_key(r["code"]) for r in rows}) == len(rows)
    sigs = {signature_key(journals["labels"].get(r["candidate"])["signature"]) for r in rows}
    assert len(sigs) == len(rows)
    assert len({r["hash"] for r in rows}) == len(rows)


def test_every_label_names_an_operator_the_code_calls(rows):
    """Re-counted in fresh children by patching each label's operator (not by the tracer)."""
    for r in rows:
        labels = json.loads(r["ops"])
        res = run_isolated(count_label_calls, (r["code"], labels, "cpu"), timeout_s=300)
        assert res.ok, res.error
        assert all(n > 0 for n in res.value.values()), (labels, res.value, r["code"])


def test_no_kernelbench_signature_matches_or_near_copies(rows, e2e, e2e_config):
    journals = open_journals(e2e.out)
    kernelbench = load_tasks(FIXTURE_KERNELBENCH_JSONL)
    untraced = []
    trace = lambda chunks: untraced.extend(chunks) or []  # noqa: E731
    ref = build_reference(kernelbench, cache_file(e2e_config.cache_dir), trace)
    assert not untraced  # the run traced and cached every reference program
    for r in rows:
        aten = tuple(tuple(a) for a in journals["labels"].get(r["candidate"])["aten"])
        assert aten not in ref.signatures
        mine = ast_tokens(r["code"])
        assert max(similarity(mine, ast_tokens(t.code), 0.9) for t in kernelbench) <= 0.9


def test_at_least_thirty_percent_have_three_or_more_operators(rows, e2e):
    share = sum(r["num_ops"] >= 3 for r in rows) / len(rows)
    assert share >= 0.3
    assert e2e.summary["share_3_plus_ops"] == share
    assert e2e.summary["invariants"] == {
        "duplicate_sources": 0, "duplicate_signatures": 0, "label_mismatches": 0,
        "kernelbench_signature_matches": 0,
    }  # fmt: skip


def test_the_dataset_loads_back_as_tasks_and_with_datasets(rows, e2e):
    for path in (e2e.out / "tasks.parquet", e2e.out / "tasks.jsonl"):
        tasks = load_tasks(path)
        assert [t.code for t in tasks] == [r["code"] for r in rows]
        assert [list(t.ops) for t in tasks] == [json.loads(r["ops"]) for r in rows]
        assert all(
            t.hash == r["hash"] == content_hash(r["code"]) for t, r in zip(tasks, rows, strict=True)
        )
    table = pq.read_table(e2e.out / "tasks.parquet")
    assert {"code", "ops", "data_source", "input_shapes", "output_shapes", "eager_ms",
            "compile_ms", "seed", "hash"} <= set(table.column_names)  # fmt: skip
    datasets = pytest.importorskip("datasets")
    ds = datasets.load_dataset("parquet", data_files=str(e2e.out / "tasks.parquet"))["train"]
    assert ds.num_rows == len(rows) and ds[0]["data_source"] == "cuda-agent-synth"
    assert isinstance(json.loads(ds[0]["ops"]), list)


def test_runtimes_are_inside_the_cpu_window(rows, e2e):
    lo, hi = json.loads((e2e.out / "run.json").read_text())["window_ms"]
    assert all(lo <= r["eager_ms"] <= hi for r in rows)
    assert all(r["compile_ms"] > 0 for r in rows)


def test_the_report_has_the_funnel_and_the_plots(e2e):
    report = (e2e.out / "report.md").read_text()
    for stage in (*STAGES, "export"):
        assert f"| {stage} |" in report
    for name in ("funnel", "op_counts", "op_frequencies", "runtime"):
        png = e2e.out / "plots" / f"{name}.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    summary = json.loads((e2e.out / "summary.json").read_text())
    assert summary["exported"] == E2E_TASKS and summary["candidates"] == len(e2e.ids)


def test_a_rerun_resumes_without_redoing_anything(e2e, e2e_config):
    journal = e2e.out / "journal"
    before = {p.name: p.read_text() for p in journal.iterdir()}
    again = Pipeline(e2e_config).run()
    assert {p.name: p.read_text() for p in journal.iterdir()} == before
    assert again.exported == e2e.exported


def test_a_rerun_with_other_options_is_refused(e2e, e2e_config):
    with pytest.raises(UserError, match="resume it with the same options"):
        Pipeline(e2e_config.model_copy(update={"seed": e2e_config.seed + 1}))


def test_the_command_resumes_the_run_and_reports(e2e, e2e_config):
    cmd = [
        sys.executable,
        "-m",
        "cuda_agent",
        "synth",
        "--n",
        str(E2E_TASKS),
        "--out",
        str(e2e.out),
        "--device",
        "cpu",
        "--workers",
        "2",
        "--seed",
        str(e2e_config.seed),
        "--kernelbench",
        str(FIXTURE_KERNELBENCH_JSONL),
        "--cache-dir",
        str(e2e_config.cache_dir),
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ,
                         "COLUMNS": "200"})  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert f"{E2E_TASKS} tasks in" in out.stdout and "label mismatches 0" in out.stdout


def test_the_command_explains_what_is_missing():
    out = subprocess.run([sys.executable, "-m", "cuda_agent", "synth", "--out", "/tmp/x"],
                         capture_output=True, text=True)  # fmt: skip
    assert out.returncode == 2
    assert out.stderr.strip() == (
        "error: synth needs --n N and --out DIR (see: cuda-agent synth --help)"
    )


def test_rejections_are_counted_per_reason(e2e):
    journals = open_journals(e2e.out)
    for f in e2e.summary["funnel"][:-1]:
        records = [journals[f["stage"]].get(i) for i in e2e.ids]
        failed = Counter(r["reason"] for r in records if r is not None and not r["ok"])
        assert dict(failed) == f["rejected"]


@pytest.mark.gpu
def test_a_gpu_run_meets_the_targets(synth_cache, catalog, tmp_path):
    cfg = SynthConfig(n=8, out=tmp_path / "gpu", device="cuda", workers=8, seed=1,
                      kernelbench=FIXTURE_KERNELBENCH_JSONL, cache_dir=synth_cache)  # fmt: skip
    result = Pipeline(cfg).run()
    assert len(result.exported) == 8
    assert set(result.summary["invariants"].values()) == {0}
    rows = [json.loads(line) for line in (cfg.out / "tasks.jsonl").read_text().splitlines()]
    assert all(1.0 <= r["eager_ms"] <= 100.0 for r in rows)
    assert all(r["device"] == "cuda" for r in rows)


def test_a_run_cut_by_its_time_limit_keeps_what_finished_and_a_rerun_finishes_it(
    catalog, synth_cache, tmp_path
):
    cfg = SynthConfig(n=4, out=tmp_path / "cut", device="cpu", workers=2, seed=11,
                      kernelbench=FIXTURE_KERNELBENCH_JSONL, cache_dir=synth_cache)  # fmt: skip
    cut = Pipeline(cfg).run(candidates=4, deadline=time.monotonic() + 1.0)
    assert cut.unfinished and set(cut.unfinished).isdisjoint(cut.resolved)
    assert any("time limit" in note for note in cut.notes)
    assert (cfg.out / "report.md").is_file() and (cfg.out / "tasks.jsonl").is_file()
    journal = cfg.out / "journal"
    before = {p.name: p.read_text() for p in journal.iterdir()} if journal.is_dir() else {}
    done = Pipeline(cfg).run(candidates=4)
    assert done.resolved == [0, 1, 2, 3] and not done.unfinished
    for name, text in before.items():
        after = (cfg.out / "journal" / name).read_text()
        assert after.startswith(text)  # what the cut run wrote stands
        ids = [json.loads(line)["id"] for line in after.splitlines()]
        assert len(ids) == len(set(ids)), name  # and nothing was done twice


def test_without_kernelbench_synth_says_decontamination_needs_it(catalog, synth_cache, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != KERNELBENCH_ENV}
    env.update(HF_HOME=str(tmp_path / "hf"), HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1")
    cmd = [sys.executable, "-m", "cuda_agent", "synth", "--n", "1", "--out", str(tmp_path / "run"),
           "--device", "cpu", "--workers", "1", "--cache-dir", str(synth_cache)]  # fmt: skip
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert out.returncode == 2, out.stderr
    line = out.stderr.strip().splitlines()[-1]
    assert line.startswith("error: synthesis decontaminates against KernelBench and found none")
    assert "--kernelbench PATH" in line and "--skip-decontamination" in line


def test_skipping_decontamination_is_explicit_noted_and_fixed_per_run(catalog, synth_cache,
                                                                       tmp_path):  # fmt: skip
    cfg = SynthConfig(n=1, out=tmp_path / "run", device="cpu", workers=1, cache_dir=synth_cache,
                      decontaminate=False)  # fmt: skip
    pipeline = Pipeline(cfg)
    pipeline.pool.close()
    assert pipeline.reference.names == ()
    assert any(n.startswith("decontamination skipped") for n in pipeline.notes)
    checked = cfg.model_copy(
        update={"decontaminate": True, "kernelbench": FIXTURE_KERNELBENCH_JSONL}
    )
    with pytest.raises(UserError, match="holds a run with decontaminate=False"):
        Pipeline(checked)


def test_a_run_folder_from_before_the_setting_resumes_with_its_default(catalog, synth_cache,
                                                                        tmp_path):  # fmt: skip
    cfg = SynthConfig(n=1, out=tmp_path / "old", device="cpu", workers=1, cache_dir=synth_cache,
                      kernelbench=FIXTURE_KERNELBENCH_JSONL)  # fmt: skip
    older = {k: v for k, v in cfg.identity().items() if k != "decontaminate"}
    cfg.out.mkdir()
    (cfg.out / "run.json").write_text(json.dumps(older))
    pipeline = Pipeline(cfg)
    pipeline.pool.close()
    assert len(pipeline.reference.names) == len(load_tasks(FIXTURE_KERNELBENCH_JSONL))
