"""`kernelbench` as a named task set: the user's copy (flag or environment), else the hub."""

import json
import os
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from cuda_agent.task import KERNELBENCH_ENV, TaskError, load_tasks
from tests.conftest import FIXTURE_KERNELBENCH, FIXTURE_KERNELBENCH_JSONL, REPO

ALL = [(1, 1), (1, 2), (1, 10), (2, 1), (2, 2), (3, 1)]


def _keys(tasks):
    return [(t.level, t.source.problem_id) for t in tasks]


def _versions(tasks):
    return [(t.name, t.hash) for t in tasks]


def test_the_checkout_and_the_jsonl_hold_the_same_problems():
    checkout, jsonl = load_tasks(FIXTURE_KERNELBENCH), load_tasks(FIXTURE_KERNELBENCH_JSONL)
    assert _keys(checkout) == ALL  # problem 10 after 2: ordered by number, not by name
    assert _versions(checkout) == _versions(jsonl)
    assert all(t.source.kind == "kernelbench" for t in checkout + jsonl)


@pytest.mark.parametrize("copy", [FIXTURE_KERNELBENCH, FIXTURE_KERNELBENCH / "KernelBench",
                                  FIXTURE_KERNELBENCH_JSONL])  # fmt: skip
def test_the_named_set_reads_the_copy_given(copy):
    assert _keys(load_tasks("kernelbench", kernelbench=copy)) == ALL
    chosen = load_tasks("kernelbench", levels={2}, problem_ids={2}, kernelbench=copy)
    assert [t.name for t in chosen] == ["L2_2_Linear_BatchNorm_Scale"]


def test_the_named_set_defaults_to_levels_one_to_three(tmp_path):
    rows = [json.loads(line) for line in FIXTURE_KERNELBENCH_JSONL.read_text().splitlines()]
    extra = {**rows[0], "level": 4, "problem_id": 1, "name": "1_Whole_model"}
    path = tmp_path / "kb.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in [*rows, extra]))
    assert _keys(load_tasks("kernelbench", kernelbench=path)) == ALL
    assert _keys(load_tasks("kernelbench", levels={4}, kernelbench=path)) == [(4, 1)]
    assert len(load_tasks(path)) == len(ALL) + 1  # the file by its path: every level in it


def test_the_environment_variable_names_the_copy(monkeypatch):
    monkeypatch.setenv(KERNELBENCH_ENV, str(FIXTURE_KERNELBENCH_JSONL))
    assert _keys(load_tasks("kernelbench", levels={1})) == ALL[:3]


def test_a_named_copy_that_is_not_there_says_how_to_point_at_one(monkeypatch, tmp_path):
    with pytest.raises(TaskError, match=r"^--kernelbench .*nope: no such file or folder; pass"):
        load_tasks("kernelbench", kernelbench=tmp_path / "nope")
    monkeypatch.setenv(KERNELBENCH_ENV, str(tmp_path / "gone"))
    with pytest.raises(TaskError, match=rf"^\${KERNELBENCH_ENV} .*gone: no such file"):
        load_tasks("kernelbench")


def test_a_copy_without_levels_is_refused():
    with pytest.raises(TaskError, match="holds no KernelBench problems"):
        load_tasks("kernelbench", kernelbench=REPO / "src" / "cuda_agent" / "task" / "builtin")


def _hub_folder(root):
    """A dataset folder laid out as KernelBench's hub repository is: data/level_N-*.parquet."""
    rows = [json.loads(line) for line in FIXTURE_KERNELBENCH_JSONL.read_text().splitlines()]
    (root / "data").mkdir(parents=True)
    for level in (1, 2, 3):
        mine = [r for r in rows if r["level"] == level]
        table = pa.table({k: [r[k] for r in mine] for k in ("code", "level", "name", "problem_id")})
        pq.write_table(table, root / "data" / f"level_{level}-00000-of-00001.parquet")
    return root


def test_the_hub_loader_reads_one_split_per_level(tmp_path):
    folder = _hub_folder(tmp_path / "hub")
    script = (
        "import json, sys\n"
        "from cuda_agent.task import TaskError, load_from_hub\n"
        "tasks = load_from_hub([1, 3], dataset=sys.argv[1])\n"
        "print(json.dumps([[t.level, t.source.problem_id, t.name, t.hash, t.source.path,"
        " t.source.kind] for t in tasks]))\n"
        "try:\n    load_from_hub([7], dataset=sys.argv[1])\n"
        "except TaskError as err:\n    print(err)\n"
    )
    env = {**os.environ, "HF_HOME": str(tmp_path / "home"), "HF_HUB_OFFLINE": "1"}
    out = subprocess.run([sys.executable, "-c", script, str(folder)], capture_output=True,
                         text=True, env=env, timeout=120)  # fmt: skip
    assert out.returncode == 0, out.stderr
    rows, error = out.stdout.splitlines()
    rows = json.loads(rows)
    expected = load_tasks(FIXTURE_KERNELBENCH, levels={1, 3})
    assert [(r[0], r[1]) for r in rows] == [(1, 1), (1, 2), (1, 10), (3, 1)]
    assert [(r[2], r[3]) for r in rows] == _versions(expected)
    assert {(r[4], r[5]) for r in rows} == {(f"hf:{folder}", "kernelbench")}
    assert error.startswith("KernelBench level 7: could not load") and "level_7" in error


def test_offline_without_a_copy_is_one_line_saying_how_to_point_at_one(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != KERNELBENCH_ENV}
    env.update(HF_HOME=str(tmp_path), HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1")
    out = subprocess.run([sys.executable, "-m", "cuda_agent", "tasks", "kernelbench"],
                         capture_output=True, text=True, env=env, timeout=120)  # fmt: skip
    assert out.returncode == 2
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith("error: KernelBench level 1: could not load the Hugging Face dataset")
    assert f"pass --kernelbench PATH or set {KERNELBENCH_ENV}=PATH" in last
    assert "Traceback" not in out.stderr
