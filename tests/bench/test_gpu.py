"""On a GPU (the lead's H200 runs): the service's workers give the same verdicts as one
Environment, and a stored-solutions run over the honest fixtures reports real speed-ups."""

from __future__ import annotations

import pytest

from cuda_agent.bench import (
    EvaluationService,
    Job,
    RunMeta,
    RunStore,
    ServiceConfig,
    StoredSolutions,
    run_stored,
    write_report,
)
from cuda_agent.sandbox import Stage, Status, read_solution
from cuda_agent.task import load_task, load_tasks
from tests.bench.conftest import FIXTURES

pytestmark = [pytest.mark.gpu, pytest.mark.timeout(3600)]


def builtin_fixtures() -> list[str]:
    names = {t.name for t in load_tasks("builtin")}
    return sorted(p.name for p in FIXTURES.iterdir() if p.name in names)


def test_two_workers_on_one_gpu_agree_with_one_environment(built):
    jobs = [
        Job(load_task(n), read_solution(FIXTURES / n), Stage.VERIFY) for n in builtin_fixtures()
    ]
    with EvaluationService(ServiceConfig(mode="inprocess", env=built)) as one:
        alone = {j.id: v for j, v in one.map(jobs)}
    with EvaluationService(ServiceConfig(mode="local", gpus=("0", "0"), env=built)) as two:
        pooled = {j.id: v for j, v in two.map(jobs)}
        assert sum(s.calls for s in two.stats() if s.role == "gpu") == len(jobs)
    for name, v in alone.items():
        assert v.status == Status.OK and v.correct, v.message
        assert (pooled[name].status, pooled[name].correct) == (v.status, v.correct)


def test_stored_run_over_the_honest_fixtures_reports_speedups(tmp_path, built):
    run = tmp_path / "run"
    store = RunStore(run)
    store.start(RunMeta(kind="solutions", tasks="builtin", solutions=str(FIXTURES)))
    tasks = load_tasks("builtin")
    with EvaluationService(ServiceConfig(mode="local", env=built)) as service:
        results = run_stored(tasks, StoredSolutions(FIXTURES), store, service, Stage.PROFILE)
    ok = [r for r in results if r.status == "ok"]
    assert {r.name for r in ok} == set(builtin_fixtures())
    assert all(r.verdict.speedup_vs_eager and r.verdict.reward >= 1 for r in ok)
    files = write_report(run)
    assert "| this run |" in files.markdown.read_text()
