"""`cuda-agent eval` of a single file starts building its literal extension calls before torch
is imported (single_file/early.py): from the record an Environment wrote, in a thread that
imports no torch, into the cache the evaluation then finds its objects in; stopped, it leaves
no compiler running and no object behind."""

from __future__ import annotations

import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cuda_agent.sandbox.single_file import early
from cuda_agent.sandbox.single_file.ahead import literal_calls
from cuda_agent.sandbox.single_file.build import ensure_binding_pch
from cuda_agent.sandbox.single_file.extensions import ExtensionBuilder

HERE = Path(__file__).parent
REPO = HERE.parents[2]
HONEST = sorted(p for p in (HERE / "honest").iterdir() if p.is_dir())
EXAMPLE = HERE / "honest" / "kernelbench_example" / "model_new.py"


@pytest.fixture(scope="module")
def tc():
    if shutil.which("nvcc") is None:
        pytest.skip("needs nvcc")
    from cuda_agent.sandbox.build.toolchain import find_toolchain

    return find_toolchain()


@pytest.fixture(scope="module")
def cache(tmp_path_factory, tc):
    """A cache with the record and the binding prelude's precompiled header, as any earlier
    single-file evaluation on the machine leaves it."""
    folder = tmp_path_factory.mktemp("early-cache")
    early.record(folder, None, tc)
    assert ensure_binding_pch(tc, folder) is not None
    return folder


def variant(tmp_path: Path) -> Path:
    """The example with CUDA source never built before (a comment of its own)."""
    text = EXAMPLE.read_text().replace(
        "#include <cuda_runtime.h>", f"#include <cuda_runtime.h>\n// {random.getrandbits(64)}", 1
    )
    assert text != EXAMPLE.read_text()
    path = tmp_path / "model_new.py"
    path.write_text(text)
    return path


@pytest.mark.parametrize("folder", HONEST, ids=[p.name for p in HONEST])
def test_the_recorded_signature_reads_the_calls_torchs_own_does(folder, tmp_path, tc):
    early.record(tmp_path, None, tc)
    recorded, signature = early._load(tmp_path, None)
    assert recorded == tc
    text = (folder / "model_new.py").read_text()
    assert literal_calls(text, signature) == literal_calls(text)


def test_nothing_starts_without_a_record_for_this_machine_and_arch(tmp_path, tc):
    assert early.start_early_build(EXAMPLE, tmp_path, None) is None  # no record
    early.record(tmp_path, None, tc)
    ensure_binding_pch(tc, tmp_path)
    assert early.start_early_build(EXAMPLE, tmp_path, "sm_80") is None  # recorded for another arch
    assert early.start_early_build(tmp_path / "absent.py", tmp_path, None) is None


def test_the_build_imports_no_torch_and_leaves_the_evaluation_nothing_to_compile(
    cache, tc, tmp_path
):
    path = variant(tmp_path)
    script = (
        "import sys\nfrom pathlib import Path\n"
        "from cuda_agent.sandbox.single_file.early import start_early_build\n"
        "build = start_early_build(Path(sys.argv[1]), Path(sys.argv[2]), None)\n"
        "assert build is not None, 'nothing started'\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
        "build.thread.join()\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
        "print(build.calls)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, str(path), str(cache)],
        capture_output=True, text=True, timeout=900, cwd=REPO,
    )  # fmt: skip
    assert out.returncode == 0 and out.stdout.strip() == "1", out.stderr[-3000:]
    builder = ExtensionBuilder(tc, cache, 600, [])
    (call,) = literal_calls(path.read_text())
    builder(call)
    assert builder.compiled == [] and builder.reused == ["add_ext/cuda.cu", "add_ext/main.cpp"]


def test_stopping_kills_the_compilers_and_keeps_no_object(cache, tmp_path):
    before = set(cache.glob("objects/**/*"))
    build = early.start_early_build(variant(tmp_path), cache, None)
    assert build is not None
    time.sleep(1.0)  # the compilers are running
    start = time.monotonic()
    build.stop()
    assert time.monotonic() - start < 5
    assert not build.thread.is_alive()
    made = {p for p in set(cache.glob("objects/**/*")) - before if p.suffix == ".o"}
    assert made == set()  # neither a finished object nor a compiler's temporary file
