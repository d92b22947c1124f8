"""The bench runner with stored solutions and with a scripted agent: statuses, files, resumption."""

from __future__ import annotations

import json
import shutil

import pytest

from cuda_agent.agent import AgentConfig
from cuda_agent.bench import (
    MISSING,
    MODEL_ERROR,
    AgentPolicy,
    EndpointFailing,
    EvaluationService,
    ResultStatus,
    RunMeta,
    RunStore,
    ServiceConfig,
    StoredSolutions,
    pending_samples,
    pending_tasks,
    run_agent,
    run_stored,
)
from cuda_agent.bench.store import failed_verdict
from cuda_agent.errors import UserError
from cuda_agent.sandbox import Stage, Status, read_solution
from cuda_agent.task import load_tasks
from tests.agent.scripted import Raw, ScriptedServer, call, reply
from tests.bench.conftest import FIXTURES, GOOD, broken

pytestmark = pytest.mark.timeout(2400)


@pytest.fixture(scope="module")
def service(built):
    with EvaluationService(ServiceConfig(mode="inprocess", env=built)) as svc:
        yield svc


@pytest.fixture
def solutions(tmp_path):
    """The two honest fixtures, a broken copy for scaled_softmax, a folder without model_new.py
    for rmsnorm; every other built-in task has no folder."""
    root = tmp_path / "solutions"
    for name in GOOD:
        shutil.copytree(FIXTURES / name, root / name)
    broken(read_solution(FIXTURES / GOOD[0])).write_to(root / "scaled_softmax")
    (root / "rmsnorm" / "kernels").mkdir(parents=True)
    return root


def stored_meta(solutions) -> RunMeta:
    return RunMeta(kind="solutions", tasks="builtin", solutions=str(solutions))


def test_stored_statuses_files_and_resume(tmp_path, solutions, service):
    tasks = load_tasks("builtin")
    store = RunStore(tmp_path / "run")
    store.start(stored_meta(solutions))
    first = [t for t in tasks if t.name in (*GOOD, "rmsnorm")]
    seen = []
    run_stored(first, StoredSolutions(solutions), store, service, Stage.PROFILE, seen.append)
    assert len(seen) == len(first)
    run_stored(tasks, StoredSolutions(solutions), store, service, Stage.PROFILE, seen.append)
    assert len(seen) == len(tasks)  # the rerun did only the tasks the first run had not
    by_name = {r.name: r for r in store.results()}
    lines = (store.root / RunStore.RESULTS).read_text().splitlines()
    assert len(by_name) == len(tasks) == len(lines)  # one line per task
    versions = {t.name: t.hash for t in tasks}  # each line says which program text it scored
    for row in map(json.loads, lines):
        assert row["task"]["hash"] == row["verdict"]["task_hash"] == versions[row["task"]["name"]]
    for name in GOOD:
        assert by_name[name].status == "no_gpu" and by_name[name].verdict.compiled
        assert by_name[name].solution_hash == read_solution(FIXTURES / name).hash
        assert store.solution_files(name) == read_solution(FIXTURES / name).files
    assert by_name["scaled_softmax"].status == "compile_error"
    assert (
        by_name["rmsnorm"].status == "invalid"
        and "model_new.py" in by_name["rmsnorm"].verdict.message
    )
    missing = [n for n, r in by_name.items() if r.status == MISSING]
    assert sorted(missing) == sorted(
        t.name for t in tasks if t.name not in {*GOOD, "scaled_softmax", "rmsnorm"}
    )
    assert all(by_name[n].verdict.reward == -1 for n in missing)
    assert pending_tasks(tasks, store) == []


def test_torn_last_line_is_redone(tmp_path, solutions, service):
    tasks = [t for t in load_tasks("builtin") if t.name in GOOD]
    store = RunStore(tmp_path / "run")
    store.start(stored_meta(solutions))
    run_stored(tasks, StoredSolutions(solutions), store, service, Stage.COMPILE)
    log = store.root / RunStore.RESULTS
    lines = log.read_text().splitlines(keepends=True)
    log.write_text(lines[0] + lines[1][: len(lines[1]) // 2])  # killed while writing line 2
    assert [t.name for t in pending_tasks(tasks, store)] == [json.loads(lines[1])["task"]["name"]]
    again = run_stored(tasks, StoredSolutions(solutions), store, service, Stage.COMPILE)
    assert len(again) == 1
    assert [json.loads(x)["task"]["name"] for x in log.read_text().splitlines()] == [
        json.loads(x)["task"]["name"] for x in lines
    ]


def test_statuses_are_read_back_typed_and_an_unknown_one_is_a_damaged_file(
    tmp_path, solutions, service
):
    tasks = [t for t in load_tasks("builtin") if t.name in GOOD]
    store = RunStore(tmp_path / "run")
    store.start(stored_meta(solutions))
    run_stored(tasks, StoredSolutions(solutions), store, service, Stage.COMPILE)
    assert {type(r.status) for r in store.results()} == {ResultStatus}
    log = store.root / RunStore.RESULTS
    row = json.loads(log.read_text().splitlines()[0])
    log.write_text(json.dumps({**row, "status": "nearly_ok"}) + "\n")
    with pytest.raises(UserError, match="results.jsonl:1: not a task result; the file is damaged"):
        store.results()


def test_a_changed_program_is_redone_and_a_different_run_refused(tmp_path, solutions, service):
    tasks = [t for t in load_tasks("builtin") if t.name == GOOD[0]]
    store = RunStore(tmp_path / "run")
    store.start(stored_meta(solutions))
    run_stored(tasks, StoredSolutions(solutions), store, service, Stage.COMPILE)
    changed = [type(tasks[0])(tasks[0].name, tasks[0].code + "\n# edited\n", tasks[0].source)]
    assert pending_tasks(changed, store) == changed
    with pytest.raises(UserError, match="choose another --out"):
        store.start(RunMeta(kind="solutions", tasks="builtin", solutions=str(tmp_path)))


def test_a_run_is_never_resumed_by_another_timing_method(tmp_path, solutions):
    store = RunStore(tmp_path / "run")
    meta = stored_meta(solutions).model_copy(update={"timing": "events"})
    store.start(meta)
    assert store.start(meta).timing == "events"  # the same method resumes
    with pytest.raises(UserError, match=r"timed by events\); this one is .* timed by kernels\)"):
        store.start(meta.model_copy(update={"timing": "kernels"}))


def test_a_run_is_never_resumed_with_another_entry_point(tmp_path, solutions):
    store = RunStore(tmp_path / "run")
    meta = stored_meta(solutions).model_copy(update={"entry_point": "Model"})
    store.start(meta)
    assert store.start(meta).entry_point == "Model"
    with pytest.raises(UserError, match=r"entered at Model .*; this one is stored solutions in"):
        store.start(meta.model_copy(update={"entry_point": None}))


class _CrowdedService:
    """A service whose GPU is crowded for the tasks in `crowded`: the harness runs out of memory
    on their first `times` evaluations; everything else gets a no_gpu verdict."""

    def __init__(self, crowded: set[str], times: int = 1):
        self.crowded, self.times, self.calls = crowded, times, []

    def _verdict(self, task, stage):
        self.calls.append(task.name)
        if task.name in self.crowded and self.calls.count(task.name) <= self.times:
            return failed_verdict(task, stage, Status.HARNESS_ERROR, "the harness ran out")
        return failed_verdict(task, stage, Status.NO_GPU, "no GPU here")

    def map(self, jobs):
        for job in jobs:
            yield job, self._verdict(job.task, job.stage)

    def evaluate(self, task, solution, stage):
        return self._verdict(task, stage)


def test_a_harness_out_of_memory_is_retried_alone_not_scored(tmp_path, solutions):
    tasks = [t for t in load_tasks("builtin") if t.name in GOOD]
    store = RunStore(tmp_path / "run")
    store.start(stored_meta(solutions))
    first, *others = [t.name for t in tasks]
    service = _CrowdedService({first})
    seen = run_stored(tasks, StoredSolutions(solutions), store, service, Stage.PROFILE)
    assert service.calls == [first, *others, first]  # the retry after every other evaluation
    assert [r.name for r in seen] == [*others, first]  # and only its verdict is recorded
    assert {r.name: r.status for r in store.results()} == {n: "no_gpu" for n in GOOD}
    assert pending_tasks(tasks, store) == []


def test_a_harness_error_that_persists_is_recorded_and_redone_by_a_rerun(tmp_path, solutions):
    tasks = [t for t in load_tasks("builtin") if t.name in GOOD]
    store = RunStore(tmp_path / "run")
    store.start(stored_meta(solutions))
    crowded = _CrowdedService({GOOD[0]}, times=2)
    run_stored(tasks, StoredSolutions(solutions), store, crowded, Stage.PROFILE)
    assert {r.name: r.status for r in store.results()}[GOOD[0]] == "harness_error"
    assert [t.name for t in pending_tasks(tasks, store)] == [GOOD[0]]
    run_stored(tasks, StoredSolutions(solutions), store, _CrowdedService(set()), Stage.PROFILE)
    assert {r.name: r.status for r in store.results()} == {n: "no_gpu" for n in GOOD}


def agent_script(fixture: str) -> list:
    """Write the fixture's files in one turn, submit in the next."""
    files = sorted(read_solution(FIXTURES / fixture).files.items())
    writes = [call("write_file", path=p, content=t, id=f"w{i}") for i, (p, t) in enumerate(files)]
    return [reply(*writes), reply(call("submit", id="s"))]


def test_agent_run_records_trajectory_solution_and_resumes(tmp_path, service):
    task = [t for t in load_tasks("builtin") if t.name == GOOD[1]]
    server = ScriptedServer(agent_script(GOOD[1]))
    try:
        from tests.agent.conftest import model_config

        policy = AgentPolicy(model_config(server), AgentConfig(max_turns=5), workers=1)
        store = RunStore(tmp_path / "run")
        store.start(RunMeta(kind="agent", tasks="builtin", model="scripted", base_url=server.url))
        (result,) = run_agent(task, policy, store, service, Stage.PROFILE)
        assert result.status == "no_gpu" and result.verdict.compiled, result.verdict.message
        assert store.solution_files(GOOD[1]) == read_solution(FIXTURES / GOOD[1]).files
        lines = (store.root / result.trajectory).read_text().splitlines()
        assert json.loads(lines[0])["type"] == "episode" and json.loads(lines[-1])["type"] == "end"
        requests = len(server.requests)
        assert run_agent(task, policy, store, service, Stage.PROFILE) == []  # finished: skipped
        assert len(server.requests) == requests
    finally:
        server.close()


def test_model_errors_are_retried_by_a_rerun(tmp_path, service):
    from tests.agent.conftest import model_config

    task = [t for t in load_tasks("builtin") if t.name == GOOD[1]]
    store = RunStore(tmp_path / "run")
    down = ScriptedServer([])  # every request: HTTP 400, the model endpoint fails
    try:
        policy = AgentPolicy(model_config(down), AgentConfig(max_turns=3), workers=1)
        store.start(RunMeta(kind="agent", tasks="builtin", model="scripted", base_url="x"))
        (failed,) = run_agent(task, policy, store, service, Stage.PROFILE)
        assert failed.status == MODEL_ERROR
    finally:
        down.close()
    assert pending_tasks(task, store) == task
    up = ScriptedServer(agent_script(GOOD[1]))
    try:
        policy = AgentPolicy(model_config(up), AgentConfig(max_turns=5), workers=1)
        (result,) = run_agent(task, policy, store, service, Stage.PROFILE)
        assert result.status == "no_gpu"
    finally:
        up.close()
    assert (store.root / "trajectories" / f"{GOOD[1]}.1.jsonl").is_file()  # the failed episode
    assert pending_tasks(task, store) == []


def test_a_model_failing_on_task_after_task_stops_the_run(tmp_path):
    from tests.agent.conftest import model_config

    tasks = load_tasks("builtin")[:5]
    store = RunStore(tmp_path / "run")
    store.start(RunMeta(kind="agent", tasks="builtin", model="scripted", base_url="x"))
    down = ScriptedServer([])  # every request: HTTP 400
    try:
        policy = AgentPolicy(model_config(down), AgentConfig(max_turns=3), workers=1)
        with pytest.raises(EndpointFailing, match="failed on 3 tasks in a row, so the run stops"):
            run_agent(tasks, policy, store, _CrowdedService(set()), Stage.PROFILE)
    finally:
        down.close()
    assert [r.status for r in store.results()] == [MODEL_ERROR] * 3  # two tasks never started
    assert pending_tasks(tasks, store) == tasks  # and a rerun redoes all five


def test_a_body_that_is_not_json_is_a_model_error_not_the_end_of_the_run(tmp_path):
    from tests.agent.conftest import model_config

    tasks = load_tasks("builtin")[:2]
    store = RunStore(tmp_path / "run")
    store.start(RunMeta(kind="agent", tasks="builtin", model="scripted", base_url="x"))
    server = ScriptedServer([Raw("this is {not json")] * 2)
    try:
        policy = AgentPolicy(model_config(server), AgentConfig(max_turns=3), workers=1)
        done = run_agent(tasks, policy, store, _CrowdedService(set()), Stage.PROFILE)
    finally:
        server.close()
    assert [r.status for r in done] == [MODEL_ERROR, MODEL_ERROR]
    assert all("it begins 'this is {not json'" in r.verdict.message for r in done)


def test_every_kernelbench_sample_of_a_task_is_scored_and_resumed(tmp_path, service):
    """level_L_problem_N_sample_K and _solution_K files: one result per sample, each with its K
    and its own solution folder; a rerun evaluates none of them again."""
    from tests.conftest import FIXTURE_KERNELBENCH

    tasks = [t for t in load_tasks(str(FIXTURE_KERNELBENCH)) if t.name == "L1_1_Elementwise_ReLU"]
    folder = tmp_path / "samples"
    folder.mkdir()
    (folder / "level_1_problem_1_sample_0_kernel.py").write_text("\n")  # empty: invalid
    (folder / "level_1_problem_1_solution_1_kernel.py").write_text("class ModelNew(:\n")
    store = RunStore(tmp_path / "run")
    store.start(RunMeta(kind="solutions", tasks="x", solutions=str(folder)))
    source = StoredSolutions(folder)
    assert [(t.name, k) for t, k, _ in pending_samples(tasks, source, store)] == [
        ("L1_1_Elementwise_ReLU", 0),
        ("L1_1_Elementwise_ReLU", 1),
    ]
    results = run_stored(tasks, source, store, service, Stage.COMPILE)
    assert sorted((r.sample, r.status) for r in results) == [(0, "invalid"), (1, "invalid")]
    assert "empty" in results[0].verdict.message and "parse" in results[1].verdict.message
    assert {r.key for r in store.results()} == {
        "L1_1_Elementwise_ReLU.sample_0",
        "L1_1_Elementwise_ReLU.sample_1",
    }
    assert store.solution_files("L1_1_Elementwise_ReLU.sample_1") == {
        "model_new.py": "class ModelNew(:\n"
    }
    assert pending_samples(tasks, source, store) == []
    assert run_stored(tasks, source, store, service, Stage.COMPILE) == []
