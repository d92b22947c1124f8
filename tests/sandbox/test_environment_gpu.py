"""The environment on the GPU: stages, verdict figures, caches, repeated rounds."""

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from cuda_agent.sandbox import EnvConfig, Environment, Stage, Status, read_solution
from cuda_agent.task import load_task, load_tasks
from tests.conftest import kernelbench_or_skip

pytestmark = pytest.mark.gpu
HERE = Path(__file__).parent
CHAIN = HERE / "solutions" / "elementwise_chain"


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    cache = Path(os.environ.get("CUDA_AGENT_TEST_CACHE") or tmp_path_factory.mktemp("cache"))
    with Environment(EnvConfig(cache_dir=cache)) as environment:
        environment.warm_up().join()
        yield environment


def _report(name: str, **data) -> None:
    path = os.environ.get("CUDA_AGENT_GPU_REPORT")
    if path:
        with open(path, "a") as fh:
            fh.write(json.dumps({"test": name, **data}) + "\n")


def test_stages_of_an_honest_kernel(env):
    task, solution = load_task("elementwise_chain"), read_solution(CHAIN)
    compiled = env.evaluate(task, solution, Stage.COMPILE)
    assert compiled.status == Status.OK and compiled.compiled
    verified = env.evaluate(task, solution, Stage.VERIFY)
    assert verified.status == Status.OK and verified.correct and verified.reward == 1
    profiled = env.evaluate(task, solution, Stage.PROFILE)
    assert profiled.status == Status.OK, profiled.message
    assert profiled.correct and profiled.candidate_ms > 0 and profiled.eager_ms > 0
    # one fused pass instead of four: clearly faster than eager
    assert profiled.speedup_vs_eager > 1.5 and profiled.reward >= 2
    _report("stages", verdict=json.loads(profiled.model_dump_json()))


def test_rounds_after_editing_one_kernel(env, tmp_path):
    """Round latency (recorded, not asserted: benchmarks/ measures it) and identical verdicts."""
    task = load_task("elementwise_chain")
    work = tmp_path / "ws"
    shutil.copytree(CHAIN, work)
    cu = work / "kernels" / "chain.cu"
    rounds = []
    for i in range(3):
        cu.write_text(cu.read_text() + f"\n// edit {i}\n")
        start = time.perf_counter()
        verdict = env.evaluate(task, read_solution(work), Stage.PROFILE)
        rounds.append(time.perf_counter() - start)
        assert verdict.status == Status.OK and verdict.reward >= 2, verdict.message
    _report("rounds", seconds=rounds, stage_seconds=verdict.seconds)


def test_wrong_kernel_is_a_mismatch(env, tmp_path):
    task = load_task("elementwise_chain")
    work = tmp_path / "wrong"
    shutil.copytree(CHAIN, work)
    cu = work / "kernels" / "chain.cu"
    cu.write_text(cu.read_text().replace("v * scale + shift", "v * scale - shift"))
    verdict = env.evaluate(task, read_solution(work), Stage.VERIFY)
    assert verdict.status == Status.MISMATCH and verdict.reward == -1
    assert "values outside" in verdict.message


@pytest.mark.large_gpu_memory
def test_degenerate_relu_inputs_are_redrawn(env):
    [relu] = load_tasks(kernelbench_or_skip(), levels={1}, problem_ids={19})
    audit = env.audit(relu)
    assert "input 0 itself" in audit.passing["task"]
    assert audit.redrawn and not audit.degenerate
    _report("audit_relu", audit=audit.model_dump())


def test_baselines_are_cached(env):
    task = load_task("elementwise_chain")
    first = env.baselines(task)
    again = env.baselines(task)
    assert again == first and first.compile_ms > 0 and first.eager_ms > 0
    assert first.gpu and first.torch_version


def test_prepared_baselines_record_the_cold_first_call(tmp_path):
    """A sweep compiles in one worker and times in another: the record keeps the first
    worker's cold torch.compile cost, not the second's cache hit."""
    task, config = load_task("row_sum_squares"), EnvConfig(cache_dir=tmp_path / "cache")
    with Environment(config) as first:
        cold = first.prepare_baselines(task)
    assert cold is not None and cold > 0
    with Environment(config) as second:
        record = second.baselines(task)
        assert record.compile_first_call_s == pytest.approx(cold)
        assert record.compile_ms > 0 and record.eager_ms > 0
        assert second.prepare_baselines(task) is None  # the baseline is cached: nothing to do
    _report("prepared_baselines", cold_first_call_s=cold, record=record.model_dump())
