"""`--rules` on eval, bench and compare: a bad profile is one usage line naming the choices, and
eval's verdict carries the profile and what it listed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RULES = REPO / "tests" / "sandbox" / "rules"
TASK = str(RULES / "add_relu_task.py")
CHOICES = "error: rules profile 'foo': choose cuda-agent, kernelbench\n"


def cli(*args: str, cache: Path, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "CUDA_AGENT_CACHE": str(cache)}
    return subprocess.run(
        [sys.executable, "-m", "cuda_agent", *args],
        capture_output=True, text=True, timeout=900, env=env, cwd=cwd,
    )  # fmt: skip


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    shared = os.environ.get("CUDA_AGENT_TEST_CACHE")
    return Path(shared) if shared else tmp_path_factory.mktemp("cache")


@pytest.mark.parametrize(
    "args",
    [
        ("eval", "--task", TASK, "--solution", str(RULES / "partial_add_relu"), "--rules", "foo"),
        ("bench", "--out", "run", "--tasks", TASK, "--solutions", str(RULES), "--rules", "foo"),
    ],
    ids=["eval", "bench"],
)
def test_an_unknown_profile_is_one_usage_line(args, cache, tmp_path):
    out = cli(*args, cache=cache, cwd=tmp_path)
    assert out.returncode == 2 and out.stderr == CHOICES, out.stderr


def test_eval_json_names_the_profile_and_refuses_a_partial_kernel_by_default(cache):
    out = cli("eval", "--task", TASK, "--solution", str(RULES / "partial_add_relu"),
              "--stage", "compile", "--json", cache=cache)  # fmt: skip
    assert out.returncode == 0, out.stderr
    verdict = json.loads(out.stdout)
    assert verdict["status"] == "violation" and verdict["rules"] == "cuda-agent"
    assert verdict["torch_ops"] == []


def test_eval_json_lists_the_torch_ops_under_kernelbench(cache):
    out = cli("eval", "--task", TASK, "--solution", str(RULES / "single_partial_add_relu.py"),
              "--stage", "compile", "--rules", "kernelbench", "--json", cache=cache)  # fmt: skip
    assert out.returncode == 0, out.stderr
    verdict = json.loads(out.stdout)
    assert verdict["status"] == "ok" and verdict["rules"] == "kernelbench", verdict["message"]
    assert verdict["torch_ops"] == [
        {"op": "torch.relu", "layer": "static_python", "file": "model_new.py", "line": 48}
    ]
