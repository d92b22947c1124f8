"""`cuda-agent bench`: stored solutions or an agent over a task set, one result line per task.

Stored solutions: one per task, named by task name (a workspace folder, a single-file NAME.py or
NAME/model_new.py) or as KernelBench's scripts name them (solution_files.py). A task
without one is scored as a failure with status `missing`; an unreadable folder as
`invalid`. Results are appended as tasks finish; a rerun into the same folder skips the tasks
already finished (for the same program), and redoes those that failed for reasons outside the
solution (the model endpoint, the evaluation service losing a worker twice, or the harness
running out of GPU memory beside the other evaluations on its GPU: a stored solution that met
the last is evaluated again alone before the run ends).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from cuda_agent.bench.pipeline import SERVICE_ERROR
from cuda_agent.bench.service import EvaluationService, Job
from cuda_agent.bench.solution_files import find_solution
from cuda_agent.bench.store import MISSING, MODEL_ERROR, RunStore, TaskResult, failed_verdict
from cuda_agent.errors import UserError
from cuda_agent.sandbox import Stage, Status, Verdict, read_submission
from cuda_agent.task import Task

if TYPE_CHECKING:
    from cuda_agent.bench.agent_runs import AgentPolicy


@dataclass(frozen=True)
class StoredSolutions:
    folder: Path


def pending_tasks(tasks: list[Task], store: RunStore) -> list[Task]:
    """Tasks without a final result in the run (unique names required: they name folders)."""
    dupes = [name for name, n in Counter(t.name for t in tasks).items() if n > 1]
    if dupes:
        raise UserError(
            f"task names repeat in the set ({', '.join(dupes[:5])}); names must be unique"
        )
    final = {
        r.name
        for r in store.results()
        if r.status not in (MODEL_ERROR, Status.HARNESS_ERROR)
        and not r.verdict.message.startswith(SERVICE_ERROR)
    }
    done = store.finished(tasks) & final
    return [t for t in tasks if t.name not in done]


def run_stored(
    tasks: list[Task],
    source: StoredSolutions,
    store: RunStore,
    service: EvaluationService,
    stage: Stage,
    on_result: Callable[[TaskResult], None] | None = None,
) -> list[TaskResult]:
    """Evaluate each pending task's stored solution; returns the results of this call."""
    if not source.folder.is_dir():
        raise UserError(f"--solutions {source.folder}: no such folder")
    done: list[TaskResult] = []

    def record(result: TaskResult) -> None:
        store.record(result)
        done.append(result)
        if on_result is not None:
            on_result(result)

    jobs = []
    for task in pending_tasks(tasks, store):
        found = find_solution(source.folder, task)
        if found is None:
            message = (
                f"no solution: neither {source.folder / task.name} nor "
                f"{source.folder / task.name}.py exists"
            )
            verdict = failed_verdict(task, stage, Status.INVALID, message)
            record(TaskResult.of(task, verdict, status=MISSING))
            continue
        try:
            solution = read_submission(found)
        except UserError as err:
            record(TaskResult.of(task, failed_verdict(task, stage, Status.INVALID, str(err))))
            continue
        store.save_solution(task.name, solution)
        jobs.append(Job(task, solution, stage))
    crowded = []
    for job, verdict in service.map(jobs):
        if verdict.status == Status.HARNESS_ERROR:
            crowded.append(job)  # recorded once retried: a killed run redoes it
        else:
            record(TaskResult.of(job.task, verdict, solution=job.solution))
    for job in crowded:  # one at a time, with every other worker idle
        verdict = service.evaluate(job.task, job.solution, job.stage)
        record(TaskResult.of(job.task, verdict, solution=job.solution))
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

    def episode(task: Task) -> TaskResult:
        started = time.monotonic()
        path = store.trajectory_path(task.name)
        outcome = run_task(task, policy, service, path)
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
    with ThreadPoolExecutor(max_workers=max(1, policy.workers)) as pool:
        futures = [pool.submit(episode, t) for t in pending_tasks(tasks, store)]
        try:
            for future in as_completed(futures):
                result = future.result()
                store.record(result)
                done.append(result)
                if on_result is not None:
                    on_result(result)
        except BaseException:  # stop starting episodes; running ones resume on the next run
            for future in futures:
                future.cancel()
            raise
    return done


def verdict_line(result: TaskResult) -> str:
    """One short line for progress output."""
    v: Verdict = result.verdict
    speed = f" {v.speedup_vs_eager:.2f}x eager" if v.speedup_vs_eager is not None else ""
    return f"{result.name}: {result.status}{speed} (reward {v.reward})"
