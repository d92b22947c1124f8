import json
import subprocess
import sys

from tests.conftest import FIXTURE_KERNELBENCH, kernelbench_or_skip


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "cuda_agent", *args], capture_output=True, text=True, timeout=120
    )


def test_tasks_lists_builtin_table():
    out = cli("tasks")
    assert out.returncode == 0, out.stderr
    assert "10 tasks in builtin" in out.stdout and "scaled_softmax" in out.stdout


def test_tasks_kernelbench_json_by_level():
    out = cli("tasks", str(kernelbench_or_skip()), "--levels", "1-3", "--json")
    assert out.returncode == 0, out.stderr
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert len(rows) == 250
    assert [r["level"] for r in rows] == sorted(r["level"] for r in rows)
    assert {"name", "hash", "ops", "source", "level", "problem_id"} <= rows[0].keys()
    assert "code" not in rows[0]


def test_tasks_table_counts_levels():
    out = cli("tasks", str(kernelbench_or_skip()), "--levels", "1,3")
    assert out.returncode == 0
    assert "level 1: 100, level 3: 50" in out.stdout


def test_tasks_kernelbench_from_the_named_copy():
    out = cli("tasks", "kernelbench", "--kernelbench", str(FIXTURE_KERNELBENCH), "--json")
    assert out.returncode == 0, out.stderr
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert [(r["level"], r["problem_id"]) for r in rows] == [(1, 1), (1, 2), (1, 10), (2, 1),
                                                             (2, 2), (3, 1)]  # fmt: skip
    assert all(r["kind"] == "kernelbench" and len(r["hash"]) == 16 for r in rows)


def test_bad_input_is_one_line_and_exit_2(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import torch\n")
    for args in (("tasks", str(bad)), ("tasks", "--levels", "x"), ("tasks", "missing.jsonl")):
        out = cli(*args)
        assert out.returncode == 2
        assert out.stderr.startswith("error: ") and out.stderr.count("\n") == 1
        assert "Traceback" not in out.stderr
