"""`cuda-agent bench`: stored solutions or an agent over a task set, one result line per task.

Stored solutions: one per task, named by task name (a workspace folder, a single-file NAME.py or
NAME/model_new.py), or as KernelBench's scripts name them (solution_files.py), where every
sample K of a task is scored, each result carrying its K. A task without one is scored as a
failure with status `missing`; an unreadable folder as `invalid`. Results are appended as tasks
finish; a rerun into the same folder skips the tasks already finished (for the same program),
and redoes those that failed for reasons outside the solution (the model endpoint, the
evaluation service losing a worker twice, or the harness running out of GPU memory beside the
other evaluations on its GPU: a stored solution that met the last is evaluated again alone
before the run ends).
"""

from __future__ import annotations

import queue
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from cuda_agent.bench.service import EvaluationService, Job
from cuda_agent.bench.solution_files import find_solutions
from cuda_agent.bench.store import (
    MISSING,
    MODEL_ERROR,
    RunStore,
    TaskResult,
    failed_verdict,
    sample_key,
)
from cuda_agent.errors import UserError
from cuda_agent.sandbox import Stage, Status, Verdict, read_submission
from cuda_agent.task import Task

if TYPE_CHECKING:
    from cuda_agent.bench.agent_runs import AgentPolicy

MODEL_ERRORS_TO_STOP = 3  # tasks in a row the endpoint failed: the endpoint is down, not a task
STOP_GRACE_S = 2.0  # for running episodes to kill their commands once the run stops


class EndpointFailing(UserError):
    """The model endpoint failed on several tasks in a row; the run stopped (a rerun resumes)."""


@dataclass(frozen=True)
class StoredSolutions:
    folder: Path
    entry_point: str | None = None  # single files' class; None: ModelNew, else a lone Model


def check_solutions(tasks: list[Task], source: StoredSolutions) -> None:
    """UserError when the folder is missing or holds a solution for no task of the set (a wrong
    folder would score every task `missing`)."""
    folder = source.folder
    if not folder.is_dir():
        raise UserError(f"--solutions {folder}: no such folder")
    if any(find_solutions(folder, task) for task in tasks):
        return
    there = sorted(p.name for p in folder.iterdir())
    names = sorted(t.name for t in tasks)
    found = f"it holds {', '.join(there[:3])}" if there else "it is empty"
    raise UserError(
        f"--solutions {folder}: nothing there is named after a task of the set ({found}; the "
        f"tasks are named like {', '.join(names[:3])}); give per task a folder NAME/ (model_new.py "
        "and kernels/, or a single model_new.py), a file NAME.py, or KernelBench's "
        "level_L_problem_ID_sample_K_kernel.py, with NAME as `cuda-agent tasks` lists it"
    )


def pending_tasks(tasks: list[Task], store: RunStore) -> list[Task]:
    """Tasks without a final result in the run."""
    _check_unique(tasks)
    done = _final(tasks, store)
    return [t for t in tasks if t.name not in done]


def pending_samples(
    tasks: list[Task], source: StoredSolutions, store: RunStore
) -> list[tuple[Task, int | None, Path | None]]:
    """(task, sample K, its file) of each stored solution without a final result in the run;
    a task with none found comes once, with no file."""
    _check_unique(tasks)
    done = _final(tasks, store)
    out = []
    for task in tasks:
        found = find_solutions(source.folder, task) or [(None, None)]
        out += [(task, k, path) for k, path in found if sample_key(task.name, k) not in done]
    return out


def _check_unique(tasks: list[Task]) -> None:
    """Task names name result keys and folders: they must be unique."""
    dupes = [name for name, n in Counter(t.name for t in tasks).items() if n > 1]
    if dupes:
        raise UserError(
            f"task names repeat in the set ({', '.join(dupes[:5])}); names must be unique"
        )


def _final(tasks: list[Task], store: RunStore) -> set[str]:
    """Keys of the results that a rerun keeps: for the same program, and not ended by a cause
    outside the solution."""
    final = {
        r.key
        for r in store.results()
        if r.status not in (MODEL_ERROR, Status.HARNESS_ERROR) and not r.verdict.service_error
    }
    return store.finished(tasks) & final


def run_stored(
    tasks: list[Task],
    source: StoredSolutions,
    store: RunStore,
    service: EvaluationService,
    stage: Stage,
    on_result: Callable[[TaskResult], None] | None = None,
) -> list[TaskResult]:
    """Evaluate each pending task's stored solution; returns the results of this call."""
    check_solutions(tasks, source)
    done: list[TaskResult] = []

    def record(result: TaskResult) -> None:
        store.record(result)
        done.append(result)
        if on_result is not None:
            on_result(result)

    jobs, samples = [], {}
    for task, sample, found in pending_samples(tasks, source, store):
        if found is None:
            message = (
                f"no solution: neither {source.folder / task.name} nor "
                f"{source.folder / task.name}.py exists"
            )
            verdict = failed_verdict(task, stage, Status.INVALID, message)
            record(TaskResult.of(task, verdict, status=MISSING))
            continue
        try:
            solution = read_submission(found, source.entry_point)
        except UserError as err:
            verdict = failed_verdict(task, stage, Status.INVALID, str(err))
            record(TaskResult.of(task, verdict, sample=sample))
            continue
        key = sample_key(task.name, sample)
        store.save_solution(key, solution)
        jobs.append(Job(task, solution, stage, key=key))
        samples[key] = sample
    crowded = []
    for job, verdict in service.map(jobs):
        if verdict.status == Status.HARNESS_ERROR:
            crowded.append(job)  # recorded once retried: a killed run redoes it
        else:
            record(TaskResult.of(job.task, verdict, solution=job.solution, sample=samples[job.id]))
    for job in crowded:  # one at a time, with every other worker idle
        verdict = service.evaluate(job.task, job.solution, job.stage)
        record(TaskResult.of(job.task, verdict, solution=job.solution, sample=samples[job.id]))
    return done


def run_agent(
    tasks: list[Task],
    policy: AgentPolicy,
    store: RunStore,
    service: EvaluationService,
    stage: Stage,
    on_result: Callable[[TaskResult], None] | None = None,
) -> list[TaskResult]:
    """Run one episode per pending task, `policy.workers` at a time; the service evaluates."""
    from cuda_agent.bench.agent_runs import run_task  # the agent package only for agent runs

    stop = threading.Event()

    def episode(task: Task) -> TaskResult:
        started = time.monotonic()
        path = store.trajectory_path(task.name)
        outcome = run_task(task, policy, service, path, stop)
        verdict, solution = outcome.verdict, outcome.solution
        if solution is not None and (verdict is None or verdict.stage != stage):
            verdict = service.evaluate(task, solution, stage)  # score at the run's stage
        if solution is not None:
            store.save_solution(task.name, solution)
        if verdict is None:
            why = f"the episode ended ({outcome.reason}) without a solution"
            verdict = failed_verdict(
                task, stage, Status.INVALID, f"{why}: {outcome.message}" if outcome.message else why
            )
        status = MODEL_ERROR if outcome.reason == MODEL_ERROR and not verdict.correct else None
        return TaskResult.of(
            task,
            verdict,
            status=status,
            solution=solution,
            trajectory=path.relative_to(store.root).as_posix(),
            seconds=time.monotonic() - started,
        )

    done: list[TaskResult] = []
    failing: list[TaskResult] = []  # the model errors since the last task the endpoint served
    results = _in_threads(episode, pending_tasks(tasks, store), policy.workers, stop)
    try:
        for result in results:
            store.record(result)
            done.append(result)
            if on_result is not None:
                on_result(result)
            failing = [*failing, result] if result.status == MODEL_ERROR else []
            if len(failing) >= MODEL_ERRORS_TO_STOP:
                last = " ".join(result.verdict.message.split())[:300]
                raise EndpointFailing(
                    f"the model endpoint failed on {len(failing)} tasks in a row, so the run "
                    f"stops (the last: {last}); fix the endpoint and rerun the same command: "
                    "finished tasks are kept, these are redone"
                )
    finally:
        results.close()  # stops the episodes still running, now
    return done


def _in_threads(fn, items: list, workers: int, stop: threading.Event) -> Iterator:
    """fn(item) for every item on `workers` daemon threads, yielded as each finishes.

    When the caller stops early (an error, Ctrl-C) `stop` is set: no new item starts, running
    episodes end at their next turn or bash command (after killing it), and, being daemons, an
    episode waiting on a model request never holds up the process's exit."""
    todo: queue.Queue = queue.Queue()
    for item in items:
        todo.put(item)
    finished: queue.Queue = queue.Queue()

    def work() -> None:
        while not stop.is_set():
            try:
                item = todo.get_nowait()
            except queue.Empty:
                return
            try:
                finished.put((True, fn(item)))
            except BaseException as err:  # handed to the caller, which stops the run
                finished.put((False, err))

    threads = [
        threading.Thread(target=work, name=f"episode-{i}", daemon=True)
        for i in range(min(max(1, workers), len(items)))
    ]
    for thread in threads:
        thread.start()
    try:
        for _ in items:
            ok, value = finished.get()
            if not ok:
                raise value
            yield value
    finally:
        stop.set()
        deadline = time.monotonic() + STOP_GRACE_S
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))


def verdict_line(result: TaskResult) -> str:
    """One short line for progress output."""
    v: Verdict = result.verdict
    if result.status == MODEL_ERROR:
        return f"{result.key}: model_error: {' '.join(v.message.split())[:300]}"
    speed = f" {v.speedup_vs_eager:.2f}x eager" if v.speedup_vs_eager is not None else ""
    waited = v.seconds.get("gpu_memory_wait")
    wait = f"; waited {waited:.1f} s for GPU memory" if waited is not None else ""
    ops = f"; PyTorch computes {len(v.torch_ops)} op(s)" if v.torch_ops else ""
    return f"{result.key}: {result.status}{speed} (reward {v.reward}{wait}{ops})"
