"""`cuda-agent export`: a KernelBench file to standard output or --out, a CUDA Agent workdir to a
new folder, and one error line for a bad --to or a folder in use."""

import ast
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CHAIN = REPO / "tests" / "fixtures" / "solutions" / "elementwise_chain"


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "cuda_agent", *args],
        capture_output=True, text=True, timeout=300, cwd=cwd,
    )  # fmt: skip


def test_kernelbench_to_stdout_and_to_a_file(tmp_path):
    out = cli(
        "export", str(CHAIN), "--task", "elementwise_chain", "--to", "kernelbench", cwd=tmp_path
    )
    assert out.returncode == 0, out.stderr
    assert "class ModelNew" in out.stdout and "load_inline(" in out.stdout
    ast.parse(out.stdout)
    target = tmp_path / "sub" / "level_1_problem_1_sample_0_kernel.py"
    args = ("export", str(CHAIN), "--task", "elementwise_chain", "--to", "kernelbench")
    written = cli(*args, "--out", str(target), cwd=tmp_path)
    assert written.returncode == 0, written.stderr
    assert target.read_text() == out.stdout


def test_cuda_agent_workdir_by_default_beside(tmp_path):
    out = cli(
        "export", str(CHAIN), "--task", "elementwise_chain", "--to", "cuda-agent", cwd=tmp_path
    )
    assert out.returncode == 0, out.stderr
    workdir = tmp_path / "elementwise_chain-cuda-agent"
    assert (workdir / "model.py").is_file() and (workdir / "binding_registry.h").is_file()
    again = cli(
        "export", str(CHAIN), "--task", "elementwise_chain", "--to", "cuda-agent", cwd=tmp_path
    )
    assert again.returncode == 2 and again.stderr.startswith("error: ")
    assert "not empty" in again.stderr and "Traceback" not in again.stderr


def test_an_unknown_format_is_one_error_line(tmp_path):
    out = cli("export", str(CHAIN), "--task", "elementwise_chain", "--to", "triton", cwd=tmp_path)
    assert out.returncode == 2
    assert out.stderr.strip() == "error: --to 'triton': choose kernelbench or cuda-agent"
