"""The environment on a machine without a GPU: static guard, compile-only build, no_gpu."""

import os
import shutil
from pathlib import Path

import pytest
import torch

from cuda_agent.sandbox import EnvConfig, Environment, Stage, Status, read_solution
from cuda_agent.task import load_task

HERE = Path(__file__).parent
CHAIN = HERE / "solutions" / "elementwise_chain"

pytestmark = pytest.mark.skipif(
    torch.cuda.is_available(), reason="covers the machine without a GPU"
)


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    cache = Path(os.environ.get("CUDA_AGENT_TEST_CACHE") or tmp_path_factory.mktemp("cache"))
    with Environment(EnvConfig(cache_dir=cache)) as environment:
        yield environment


def test_compile_only_then_no_gpu(env):
    task = load_task("elementwise_chain")
    verdict = env.evaluate(task, read_solution(CHAIN), Stage.PROFILE)
    assert verdict.status == Status.NO_GPU
    assert verdict.compiled and not verdict.correct and verdict.reward == -1
    assert "need a CUDA GPU" in verdict.message
    compiled = env.evaluate(task, read_solution(CHAIN), Stage.COMPILE)
    assert compiled.status == Status.OK and compiled.compiled


def test_compile_error_is_trimmed_and_names_the_line(env, tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(CHAIN, broken)
    cu = broken / "kernels" / "chain.cu"
    cu.write_text(cu.read_text().replace("float y = v * scale + shift;", "float y = v * scale +;"))
    verdict = env.evaluate(load_task("elementwise_chain"), read_solution(broken), Stage.VERIFY)
    assert verdict.status == Status.COMPILE_ERROR and not verdict.compiled
    assert "chain.cu" in verdict.message and "error" in verdict.message.lower()
    assert len(verdict.message) <= 4500


def test_static_violation_stops_before_build(env, tmp_path):
    cheat = tmp_path / "cheat"
    shutil.copytree(CHAIN, cheat)
    entry = cheat / "model_new.py"
    entry.write_text(
        entry.read_text().replace(
            "return cuda_extension.chain_forward(x, self.scale, self.shift)",
            "return torch.clamp(torch.nn.functional.gelu(x * self.scale + self.shift), -0.5, 2.0)",
        )
    )
    verdict = env.evaluate(load_task("elementwise_chain"), read_solution(cheat))
    assert verdict.status == Status.VIOLATION and verdict.violations
    assert verdict.reward == -1 and "build" not in verdict.seconds


def test_library_headers_missing_here_is_no_gpu_not_a_compile_error(env):
    gemm = HERE.parent / "fixtures" / "solutions" / "gemm_bias_gelu"
    verdict = env.evaluate(load_task("gemm_bias_gelu"), read_solution(gemm), Stage.PROFILE)
    assert verdict.status == Status.NO_GPU and verdict.reward == -1
    assert "cuBLAS/cuDNN headers" in verdict.message and "cublas_v2.h" in verdict.message


def test_a_binding_no_kernel_registers_is_a_runtime_error_without_a_gpu(env, tmp_path):
    typo = tmp_path / "typo"
    shutil.copytree(CHAIN, typo)
    entry = typo / "model_new.py"
    entry.write_text(entry.read_text().replace("chain_forward(", "chain_fwd("))
    verdict = env.evaluate(load_task("elementwise_chain"), read_solution(typo), Stage.PROFILE)
    assert verdict.status == Status.RUNTIME_ERROR and verdict.compiled
    assert "model_new.py:14: cuda_extension.chain_fwd" in verdict.message
    assert verdict.reward == -1


def test_a_task_whose_get_inputs_raises_is_named_without_a_gpu(env, tmp_path):
    code = load_task("elementwise_chain").code
    path = tmp_path / "broken_chain.py"
    raising = "def get_inputs():\n    raise ValueError('no inputs today')"
    path.write_text(code.replace("def get_inputs():", raising, 1))
    verdict = env.evaluate(load_task(path), read_solution(CHAIN), Stage.PROFILE)
    assert verdict.status == Status.INVALID and verdict.compiled
    assert "the task's own program fails" in verdict.message
    assert "get_inputs() raised ValueError: no inputs today" in verdict.message


def test_a_sound_task_and_solution_say_what_was_checked_without_a_gpu(env):
    verdict = env.evaluate(load_task("elementwise_chain"), read_solution(CHAIN), Stage.VERIFY)
    assert verdict.status == Status.NO_GPU
    assert "every binding model_new.py calls is registered" in verdict.message


def test_a_build_made_beforehand_reports_its_own_time(env):
    task, solution = load_task("elementwise_chain"), read_solution(CHAIN)
    build = env.build(task, solution)
    verdict = env.evaluate(task, solution, Stage.COMPILE, prebuilt=build)
    assert verdict.seconds["build"] == build.seconds["total"] > 0


def test_the_compile_stage_checks_the_bindings_too_without_a_gpu(env, tmp_path):
    typo = tmp_path / "typo"
    shutil.copytree(CHAIN, typo)
    entry = typo / "model_new.py"
    entry.write_text(entry.read_text().replace("chain_forward(", "chain_fwd("))
    verdict = env.evaluate(load_task("elementwise_chain"), read_solution(typo), Stage.COMPILE)
    assert verdict.status == Status.RUNTIME_ERROR and "cuda_extension.chain_fwd" in verdict.message
