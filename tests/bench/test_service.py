"""The evaluation service's modes on CPU: verdicts flow (no_gpu, compile_error) and belong to
their jobs, one failure stays one failure, and a killed worker is replaced."""

from __future__ import annotations

import os
import signal
from dataclasses import replace

import pytest

from cuda_agent.bench import EvaluationService, Job, ServiceConfig
from cuda_agent.sandbox import Stage, Status, read_solution
from cuda_agent.task import load_task
from tests.bench.conftest import FIXTURES, GOOD, broken

pytestmark = pytest.mark.timeout(2400)


def jobs() -> list[Job]:
    """Both honest fixtures, each also broken, keyed so that identity can be checked."""
    out = []
    for name in GOOD:
        task, solution = load_task(name), read_solution(FIXTURES / name)
        out.append(Job(task, solution, Stage.PROFILE, key=f"{name}/good"))
        out.append(Job(task, broken(solution), Stage.PROFILE, key=f"{name}/broken"))
    return out


def check(results: list) -> None:
    """Every job got a verdict for its own task and solution: good ones build, broken ones fail."""
    assert sorted(j.id for j, _ in results) == sorted(j.id for j in jobs())
    for job, v in results:
        assert (v.task, v.task_hash) == (job.task.name, job.task.hash)
        if job.id.endswith("/good"):
            assert v.status == Status.NO_GPU and v.compiled, v.message
        else:
            assert v.status == Status.COMPILE_ERROR and ".cu" in v.message, v.message


def test_local_mode_pipeline_and_identity(built):
    config = ServiceConfig(mode="local", gpus=("0", "1"), compile_workers=1, env=built)
    with EvaluationService(config) as service:
        check(list(service.map(jobs())))
        stats = {s.name: s for s in service.stats()}
        assert sum(s.calls for s in stats.values() if s.role == "build") == 4
        # compile errors end on the build worker; only the two good builds reach a GPU worker
        assert sum(s.calls for s in stats.values() if s.role == "gpu") == 2
        assert all(s.restarts == 0 for s in stats.values())


def test_killed_workers_are_replaced(built):
    config = ServiceConfig(mode="local", gpus=("0",), compile_workers=1, env=built)
    task, solution = load_task(GOOD[0]), read_solution(FIXTURES / GOOD[0])
    with EvaluationService(config) as service:
        before = {s.name: s.pid for s in service.stats()}
        for pid in before.values():
            os.kill(pid, signal.SIGKILL)
        v = service.evaluate(task, solution, Stage.PROFILE)
        assert v.status == Status.NO_GPU, v.message
        after = {s.name: s for s in service.stats()}
        for name, pid in before.items():
            assert after[name].restarts == 1 and after[name].pid != pid
        v = service.evaluate(task, broken(solution))
        assert v.status == Status.COMPILE_ERROR


def test_a_failing_call_fails_alone(built):
    """On CPU the Environment refuses to time baselines: each task gets its error, the worker
    stays, and evaluations still work after."""
    config = ServiceConfig(mode="local", gpus=("0",), compile_workers=0, env=built)
    tasks = [load_task(n) for n in GOOD]
    with EvaluationService(config) as service:
        pid = service.stats()[0].pid
        out = dict((t.name, r) for t, r in service.baselines(tasks))
        assert set(out) == set(GOOD)
        assert all(isinstance(r, Exception) and "needs a CUDA GPU" in str(r) for r in out.values())
        v = service.evaluate(tasks[0], read_solution(FIXTURES / GOOD[0]))
        assert v.status == Status.NO_GPU  # built on the GPU worker (no build pool)
        assert service.stats()[0].pid == pid and service.stats()[0].restarts == 0


def test_in_process_mode(built):
    with EvaluationService(ServiceConfig(mode="inprocess", env=built)) as service:
        check(list(service.map(jobs())))
        assert service.stats()[0].pid == os.getpid()


def test_ray_local_mode(built):
    ray = pytest.importorskip("ray", reason="the ray extra is not installed")
    config = ServiceConfig(mode="ray", ray_num_cpus=2, env=built)
    with EvaluationService(config) as service:
        check(list(service.map(jobs())))
        gpu = service.workers[1][0]
        first = ray.get(gpu.actor.pid.remote())
        ray.kill(gpu.actor, no_restart=False)  # Ray restarts it; the service carries on
        task = load_task(GOOD[0])
        v = service.evaluate(task, read_solution(FIXTURES / GOOD[0]))
        assert v.status == Status.NO_GPU, v.message
        assert ray.get(gpu.actor.pid.remote()) != first
    assert not ray.is_initialized()  # the service stopped the cluster it started


def test_bad_configuration_is_a_user_error(env_config):
    from cuda_agent.errors import UserError

    with pytest.raises(UserError, match="unknown service mode"):
        EvaluationService(replace(ServiceConfig(env=env_config), mode="cloud"))
    with pytest.raises(UserError, match="compile-workers"):
        EvaluationService(ServiceConfig(mode="local", compile_workers=-1, env=env_config))
