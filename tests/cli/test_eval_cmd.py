import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[2]
CHAIN = REPO / "tests" / "sandbox" / "solutions" / "elementwise_chain"


def cli(*args: str, cache: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "CUDA_AGENT_CACHE": str(cache)}
    return subprocess.run(
        [sys.executable, "-m", "cuda_agent", *args],
        capture_output=True,
        text=True,
        timeout=1800,
        env=env,
    )


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    shared = os.environ.get("CUDA_AGENT_TEST_CACHE")
    return Path(shared) if shared else tmp_path_factory.mktemp("cache")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the machine without a GPU")
def test_eval_without_gpu_says_so_as_json(cache):
    out = cli(
        "eval", "--task", "elementwise_chain", "--solution", str(CHAIN), "--json", cache=cache
    )
    assert out.returncode == 0, out.stderr
    verdict = json.loads(out.stdout)
    assert verdict["status"] == "no_gpu" and verdict["compiled"] is True
    assert verdict["reward"] == -1 and "need a CUDA GPU" in verdict["message"]


def test_eval_summary_and_usage_errors(cache, tmp_path):
    (tmp_path / "empty").mkdir()
    missing = cli(
        "eval", "--task", "elementwise_chain", "--solution", str(tmp_path / "empty"), cache=cache
    )
    assert missing.returncode == 2 and "missing model_new.py" in missing.stderr
    bad_stage = cli(
        "eval",
        "--task",
        "elementwise_chain",
        "--solution",
        str(CHAIN),
        "--stage",
        "fast",
        cache=cache,
    )
    assert bad_stage.returncode == 2 and "choose compile, verify or profile" in bad_stage.stderr
    bad_timing = cli(
        "eval", "--task", "elementwise_chain", "--solution", str(CHAIN), "--timing", "wall",
        cache=cache,
    )  # fmt: skip
    assert bad_timing.returncode == 2 and "choose events, kernels, span" in bad_timing.stderr
    assert "Traceback" not in bad_timing.stderr
    compiled = cli(
        "eval",
        "--task",
        "elementwise_chain",
        "--solution",
        str(CHAIN),
        "--stage",
        "compile",
        cache=cache,
    )
    assert compiled.returncode == 0 and compiled.stdout.startswith("elementwise_chain: ok")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the machine without a GPU")
def test_eval_single_file_as_kernelbench_names_it(cache, tmp_path):
    source = REPO / "tests/sandbox/single_file/honest/strings/model_new.py"
    task = str(REPO / "tests/sandbox/tasks/scale_gelu.py")
    file = tmp_path / "level_1_problem_1_sample_0_kernel.py"
    file.write_text(source.read_text())
    out = cli("eval", "--task", task, "--solution", str(file), "--stage", "compile", "--json",
              cache=cache)  # fmt: skip
    assert out.returncode == 0, out.stderr
    verdict = json.loads(out.stdout)
    assert verdict["status"] == "ok" and verdict["compiled"], verdict["message"]
    assert "load_inline('scale_gelu_ext')" in verdict["message"]
    renamed = cli("eval", "--task", task, "--solution", str(file), "--entry-point", "Fast",
                  "--stage", "compile", "--json", cache=cache)  # fmt: skip
    assert json.loads(renamed.stdout)["status"] == "invalid"
    text = tmp_path / "notes.txt"
    text.write_text("not python")
    wrong = cli("eval", "--task", task, "--solution", str(text), cache=cache)
    assert wrong.returncode == 2 and "a .py file" in wrong.stderr


def test_module_mode_by_format_and_by_option(cache):
    workdir = REPO / "tests" / "fixtures" / "workdirs" / "axpby_cuda_agent"
    args = ("eval", "--task", str(workdir / "model.py"), "--solution", str(workdir))
    auto = cli(*args, "--stage", "compile", "--json", cache=cache)
    assert auto.returncode == 0, auto.stderr
    assert json.loads(auto.stdout)["module_mode"] == "eval"
    chosen = cli(*args, "--stage", "compile", "--json", "--module-mode", "train", cache=cache)
    assert json.loads(chosen.stdout)["module_mode"] == "train"
    bad = cli(*args, "--module-mode", "inference", cache=cache)
    assert bad.returncode == 2 and "choose auto, train, eval" in bad.stderr


def test_a_single_files_literal_builds_start_before_torch_and_the_verdict_says_so(cache, tmp_path):
    """The second evaluation on a machine finds the toolchain the first recorded: its file's
    sources (never built before) start building as the command starts."""
    example = REPO / "tests" / "sandbox" / "single_file" / "honest" / "kernelbench_example"
    task = REPO / "tests" / "sandbox" / "tasks" / "elementwise_add.py"
    verdicts = []
    for n in range(2):
        text = (example / "model_new.py").read_text()
        marker = f"#include <cuda_runtime.h>\n// variant {os.getpid()}-{n}-{tmp_path.name}"
        path = tmp_path / f"variant_{n}.py"
        path.write_text(text.replace("#include <cuda_runtime.h>", marker, 1))
        args = ("eval", "--task", str(task), "--solution", str(path), "--stage", "compile")
        out = cli(*args, "--json", cache=cache)
        assert out.returncode == 0, out.stderr
        verdicts.append(json.loads(out.stdout))
    last = verdicts[-1]
    assert last["compiled"] is True, last["message"]
    assert any("started building as the command started" in n for n in last["notes"])
