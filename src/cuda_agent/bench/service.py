"""The evaluation service: `Environment.evaluate`'s API over many CPU and GPU workers.

    with EvaluationService(ServiceConfig(mode="local")) as service:
        verdict = service.evaluate(task, solution, Stage.PROFILE)      # as Environment.evaluate
        future = service.submit(task, solution)                        # concurrent.futures.Future
        for job, verdict in service.map(jobs):                          # as they finish
            ...

Compilation runs on a pool of CPU workers, verification and profiling on one worker per GPU,
so GPUs never wait on nvcc. Modes: `inprocess` (one Environment here; nothing runs in
parallel), `local` (worker processes on this host), `ray` (actors on a Ray cluster).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, as_completed
from dataclasses import dataclass, field
from typing import Literal

from cuda_agent.bench.pipeline import Pipeline, WorkerStats
from cuda_agent.bench.workers import InProcessWorker, Worker, WorkerLost, local_workers
from cuda_agent.errors import UserError
from cuda_agent.sandbox import AuditRecord, BaselineRecord, EnvConfig, Solution, Stage, Verdict
from cuda_agent.task import Task

Mode = Literal["inprocess", "local", "ray"]
MAX_DEFAULT_BUILDERS = 8
DEFAULT_CALL_TIMEOUT_S = 3600.0  # far above the Environment's own limits: a stuck worker only


@dataclass(frozen=True)
class Job:
    """One evaluation; `key` identifies it to the caller (the task name by default)."""

    task: Task
    solution: Solution
    stage: Stage = Stage.PROFILE
    key: str = ""

    @property
    def id(self) -> str:
        return self.key or self.task.name


@dataclass(frozen=True)
class ServiceConfig:
    """Where the workers run.

    `gpus`: devices for evaluation workers, one worker per entry (repeat an id for several
    workers on one GPU); None: every visible GPU, or one worker without a GPU on a CPU-only host.
    In Ray mode only the count matters (Ray places the actors). `compile_workers` None: half the
    CPUs left after one per evaluation worker (1 to 8); 0: the evaluation workers build.
    """

    mode: Mode = "local"
    gpus: tuple[str, ...] | None = None
    compile_workers: int | None = None
    ray_address: str | None = None  # "auto", "HOST:PORT", or None for a new local cluster
    ray_num_cpus: int | None = None  # CPUs of a new local Ray cluster (None: all)
    call_timeout_s: float = DEFAULT_CALL_TIMEOUT_S
    env: EnvConfig = field(default_factory=EnvConfig)


class EvaluationService:
    """Thread-safe: any number of callers may submit at once."""

    def __init__(self, config: ServiceConfig | None = None):
        self.config = config or ServiceConfig()
        self._stop_ray = False
        self._log_dir = None
        try:
            builders, evaluators = self._start_workers()
        except WorkerLost as err:
            raise UserError(f"the evaluation service could not start its workers: {err}") from None
        self._pipeline = Pipeline(builders, evaluators, self.config.call_timeout_s)

    def evaluate(self, task: Task, solution: Solution, stage: Stage = Stage.PROFILE) -> Verdict:
        """Same contract as Environment.evaluate: always a Verdict, never an exception."""
        return self.submit(task, solution, stage).result()

    def submit(self, task: Task, solution: Solution, stage: Stage = Stage.PROFILE) -> Future:
        """A Future of the Verdict; builds and evaluations of many submissions overlap."""
        return self._pipeline.submit_evaluation(task, solution, stage)

    def map(self, jobs: Iterable[Job]) -> Iterator[tuple[Job, Verdict]]:
        """Submit every job, then yield (job, verdict) pairs in the order they finish."""
        futures = {self.submit(j.task, j.solution, j.stage): j for j in jobs}
        for future in as_completed(futures):
            yield futures[future], future.result()

    def baselines(self, tasks: Iterable[Task]) -> Iterator[tuple[Task, BaselineRecord | Exception]]:
        """(task, Environment.baselines(task)) as they finish, or (task, the exception)."""
        return self._gpu_map("baselines", tasks)

    def prepare_baselines(
        self, tasks: Iterable[Task]
    ) -> Iterator[tuple[Task, float | None | Exception]]:
        """(task, Environment.prepare_baselines(task)) as they finish, or (task, the exception)."""
        return self._gpu_map("prepare_baselines", tasks)

    def audit(
        self, tasks: Iterable[Task], module_mode: str = "train"
    ) -> Iterator[tuple[Task, AuditRecord | Exception]]:
        """(task, Environment.audit(task, module_mode)) as they finish, or (task, the error)."""
        return self._gpu_map("audit", tasks, module_mode)

    def identity(self) -> dict:
        """{"gpu": name or None, "torch_version": ...} of a GPU worker."""
        return self._pipeline.submit_gpu("identity", ()).result()

    def stats(self) -> list[WorkerStats]:
        return self._pipeline.stats()

    @property
    def workers(self) -> tuple[list[Worker], list[Worker]]:
        """(build workers, GPU workers): LocalWorker, InProcessWorker or RayWorker handles."""
        return self._pipeline.workers

    @property
    def gpu_workers(self) -> int:
        return sum(1 for s in self.stats() if s.role == "gpu")

    def close(self, cancel_pending: bool = False) -> None:
        self._pipeline.close(cancel_pending)
        if self._stop_ray:
            from cuda_agent.bench.ray_workers import import_ray

            import_ray().shutdown()
            self._stop_ray = False
        if self._log_dir is not None:
            shutil.rmtree(self._log_dir, ignore_errors=True)

    def __enter__(self) -> EvaluationService:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.close(cancel_pending=exc_type is not None)

    def _gpu_map(self, method: str, tasks: Iterable[Task], *args):
        futures = {self._pipeline.submit_gpu(method, (t, *args)): t for t in tasks}
        for future in as_completed(futures):
            err = future.exception()
            yield futures[future], err if err is not None else future.result()

    def _start_workers(self):
        cfg = self.config
        if cfg.mode == "inprocess":
            return [], [InProcessWorker(cfg.env)]
        if cfg.mode == "local":
            devices = list(cfg.gpus) if cfg.gpus is not None else _visible_gpus()
            evaluators = devices or [None]
            builders, gpu_workers, self._log_dir = local_workers(
                cfg.env, evaluators, _compile_workers(cfg.compile_workers, len(evaluators))
            )
            return builders, gpu_workers
        if cfg.mode == "ray":
            from cuda_agent.bench.ray_workers import ray_workers

            builders, gpu_workers, self._stop_ray = ray_workers(
                cfg.env,
                cfg.ray_address,
                len(cfg.gpus) if cfg.gpus is not None else None,
                cfg.compile_workers,
                cfg.ray_num_cpus,
            )
            return builders, gpu_workers
        raise UserError(f"unknown service mode {cfg.mode!r}; use inprocess, local or ray")


def _visible_gpus() -> list[str]:
    """GPU ids this process may use (CUDA_VISIBLE_DEVICES, else every GPU torch counts)."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        return [d.strip() for d in visible.split(",") if d.strip() and d.strip() != "-1"]
    import torch

    return [str(i) for i in range(torch.cuda.device_count())]


def _compile_workers(asked: int | None, evaluators: int) -> int:
    if asked is not None:
        if asked < 0:
            raise UserError(f"--compile-workers {asked}: give 0 or more")
        return asked
    # each build compiles its files in parallel itself: half the spare CPUs keeps nvcc busy
    return max(1, min(MAX_DEFAULT_BUILDERS, ((os.cpu_count() or 2) - evaluators) // 2))
