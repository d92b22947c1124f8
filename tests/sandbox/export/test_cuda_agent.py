"""A workspace solution exported as a CUDA Agent workdir: their layout, their registration
convention in the bindings, and the workdir evaluated unchanged by this harness (guard, build)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cuda_agent.errors import UserError
from cuda_agent.sandbox import EnvConfig, Environment, Stage, Status, read_solution
from cuda_agent.sandbox.export import export_cuda_agent
from cuda_agent.sandbox.guard.static import check_static
from cuda_agent.task import load_task

SOLUTIONS = Path(__file__).parents[2] / "fixtures" / "solutions"


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    cache = Path(os.environ.get("CUDA_AGENT_TEST_CACHE") or tmp_path_factory.mktemp("cache"))
    with Environment(EnvConfig(cache_dir=cache)) as environment:
        yield environment


@pytest.mark.parametrize("name", ["elementwise_chain", "rmsnorm"])
def test_the_workdir_has_their_layout_and_convention(name, tmp_path, env):
    task = load_task(name)
    out = export_cuda_agent(task, read_solution(SOLUTIONS / name), tmp_path / "workdir")
    names = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert {"model.py", "model_new.py", "binding.cpp", "binding_registry.h"} <= set(names)
    assert (out / "model.py").read_text() == task.code
    binding = next(out.glob("kernels/*_binding.cpp")).read_text()
    assert '#include "../binding_registry.h"' in binding
    assert f"static void cuda_agent_register_{name}(pybind11::module& m)" in binding
    assert f"REGISTER_BINDING({name}, cuda_agent_register_{name});" in binding
    solution = read_solution(out)
    assert solution.format == "cuda-agent" and check_static(solution) == []
    verdict = env.evaluate(task, solution, Stage.COMPILE)
    assert verdict.status == Status.OK and verdict.compiled, verdict.message


def test_a_workdir_in_their_convention_is_kept(tmp_path):
    workdir = Path(__file__).parents[2] / "fixtures" / "workdirs" / "axpby_cuda_agent"
    task = load_task(workdir / "model.py")
    out = export_cuda_agent(task, read_solution(workdir), tmp_path / "again")
    for rel in ("kernels/axpby_binding.cpp", "kernels/axpby.cu", "model_new.py"):
        assert (out / rel).read_text() == (workdir / rel).read_text()


def test_a_folder_in_use_is_refused(tmp_path):
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "x").write_text("")
    with pytest.raises(UserError, match="not empty"):
        export_cuda_agent(
            load_task("rmsnorm"), read_solution(SOLUTIONS / "rmsnorm"), tmp_path / "taken"
        )
