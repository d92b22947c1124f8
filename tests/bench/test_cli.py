"""`cuda-agent bench | baselines | audit | report` as a user runs them (real subprocesses).

Kept with the bench tests (the area of this package) though it tests cli/bench_cmd.py."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.bench.conftest import FIXTURES, GOOD

pytestmark = pytest.mark.timeout(2400)


def cli(*args: str, cache=None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    if cache is not None:
        env["CUDA_AGENT_CACHE"] = str(cache)
    return subprocess.run(
        [sys.executable, "-m", "cuda_agent", *args],
        capture_output=True,
        text=True,
        timeout=800,
        env=env,
    )


def test_usage_errors_are_one_line_and_exit_2(tmp_path):
    for args, message in (
        (("bench", "--out", str(tmp_path / "r")), "either --solutions"),
        (("bench", "--out", str(tmp_path / "r"), "--model", "m"), "needs --base-url"),
        (
            ("bench", "--out", str(tmp_path / "r"), "--solutions", str(FIXTURES), "--gpus", "a"),
            "--gpus",
        ),
        (("report", str(tmp_path)), "not a bench run folder"),
        (
            ("bench", "--out", str(tmp_path / "r"), "--solutions", str(FIXTURES), "--timing", "x"),
            "timing method 'x': choose events, kernels, span",
        ),
    ):
        out = cli(*args)
        assert out.returncode == 2, (args, out.stderr)
        assert out.stderr.startswith("error: ") and message in out.stderr, out.stderr
        assert "Traceback" not in out.stderr


def test_bench_stored_solutions_then_report(tmp_path, built):
    run, solutions = tmp_path / "run", tmp_path / "solutions"
    for name in GOOD:
        shutil.copytree(FIXTURES / name, solutions / name)
    args = (
        "bench",
        "--tasks",
        "builtin",
        "--solutions",
        str(solutions),
        "--out",
        str(run),
        "--in-process",
        "--stage",
        "compile",
    )
    out = cli(*args, cache=built.cache_dir)
    assert out.returncode == 0, out.stderr
    results = [json.loads(x) for x in (run / "results.jsonl").read_text().splitlines()]
    assert len(results) == 10
    status = {r["task"]["name"]: r["status"] for r in results}
    assert all(status[n] == "ok" for n in GOOD)  # compiled (stage compile)
    assert sum(s == "missing" for s in status.values()) == 8
    assert (run / "report.html").is_file() and (run / "report.md").is_file()
    again = cli(*args, cache=built.cache_dir)
    assert again.returncode == 0 and "10 already finished" in again.stderr
    assert len((run / "results.jsonl").read_text().splitlines()) == 10
    rendered = cli("report", str(run))
    assert rendered.returncode == 0 and "report.html" in rendered.stdout


def test_audit_without_gpu_says_so(tmp_path, env_config):
    out = cli(
        "audit",
        "--tasks",
        "builtin",
        "--out",
        str(tmp_path / "a.jsonl"),
        "--in-process",
        cache=env_config.cache_dir,
    )
    assert out.returncode == 2 and "needs a CUDA GPU" in out.stderr, out.stderr
    assert out.stderr.count("\n") == 1, out.stderr  # said once, not once per task
    assert not (tmp_path / "a.md").exists()  # and no empty audit table


def test_inputs_that_would_waste_a_run_are_refused_before_it_starts(tmp_path):
    from tests.agent.test_preflight import closed_port_url

    run = tmp_path / "r"
    solutions = ("bench", "--out", str(run), "--solutions", str(FIXTURES))
    agent = ("bench", "--out", str(run), "--model", "m", "--base-url")
    for args, message in (
        ((*agent, closed_port_url()), "cannot connect"),
        ((*agent, "not-a-url"), "--base-url 'not-a-url': not an http(s) URL"),
        ((*solutions, "--workers", "0"), "--workers 0: give 1 or more"),
        ((*solutions, "--workers", "-1"), "--workers -1: give 1 or more"),
        ((*solutions, "--ray", "127.0.0.1:1"), "--ray 127.0.0.1:1: no Ray cluster answers there"),
        ((*solutions, "--entry-point", "Model-New"), "--entry-point 'Model-New': not a Python"),
        (
            (*agent, "http://127.0.0.1:1", "--entry-point", "Model"),
            "--entry-point names the class of stored single files; give --solutions",
        ),
        (
            ("bench", "--out", str(run), "--solutions", str(FIXTURES.parent)),
            f"--solutions {FIXTURES.parent}: nothing there is named after a task of the set",
        ),
    ):
        out = cli(*args)
        assert out.returncode == 2, (args, out.stderr)
        assert out.stderr.startswith("error: ") and message in out.stderr, out.stderr
        assert out.stderr.count("\n") == 1, out.stderr
        assert not run.exists()  # nothing started, no run folder tied to a wrong input


def test_a_second_bench_into_a_busy_run_folder_is_refused(tmp_path):
    from tests.bench.test_run_lock import HOLD

    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(tmp_path / "run")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        (tmp_path / "solutions" / GOOD[0]).mkdir(parents=True)
        args = ("--solutions", str(tmp_path / "solutions"), "--stage", "compile")
        out = cli("bench", "--out", str(tmp_path / "run"), *args)
    finally:
        holder.kill()
        holder.wait()
    assert out.returncode == 2, out.stderr
    assert f"another run is using this folder (pid {holder.pid})" in out.stderr
    assert not (tmp_path / "run" / "results.jsonl").exists()
