"""The run folder of `cuda-agent bench`: what was asked, what finished, and the files behind it.

RUN/run.json           RunMeta: what the run evaluates (kept across reruns, checked on resume)
RUN/results.jsonl      one TaskResult a line, appended as each task finishes
RUN/solutions/NAME/    the solution evaluated for task NAME (model_new.py, kernels/)
RUN/trajectories/NAME.jsonl   the agent's episode for task NAME (agent runs)
"""

from __future__ import annotations

import datetime as dt
import json
from enum import StrEnum
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from cuda_agent.bench.jsonl import JsonlLog
from cuda_agent.errors import UserError
from cuda_agent.sandbox import Solution, Stage, Status, Verdict
from cuda_agent.task import Task

# A task result's status: its verdict's, or why no evaluation gave it one: "missing" (its
# solutions folder has no entry: scored as a failure) or "model_error" (an episode the model
# endpoint broke off: redone by a rerun).
ResultStatus = StrEnum(
    "ResultStatus",
    {**{s.name: s.value for s in Status}, "MISSING": "missing", "MODEL_ERROR": "model_error"},
)
MISSING = ResultStatus.MISSING
MODEL_ERROR = ResultStatus.MODEL_ERROR
SERVICE_ERROR = "evaluation service:"  # how the message of a verdict with service_error begins


class RunMeta(BaseModel):
    """What a run evaluates; a rerun into the same folder must agree on `identity()`."""

    model_config = ConfigDict(frozen=True)

    kind: Literal["solutions", "agent"]
    tasks: str
    stage: Stage = Stage.PROFILE
    solutions: str | None = None
    model: str | None = None
    base_url: str | None = None
    # the timing method of its verdicts (runs written before the field were timed by span)
    timing: str = "span"
    # the rules profile its guard judged by (runs written before the field: cuda-agent's)
    rules: str = "cuda-agent"
    entry_point: str | None = None  # single-file solutions' class, where the run named one
    created: str = ""

    def identity(self) -> dict:
        keys = ("kind", "stage", "solutions", "model", "base_url", "timing", "rules", "entry_point")
        return {k: getattr(self, k) for k in keys}

    def describe(self) -> str:
        if self.kind == "solutions":
            what = f"stored solutions in {self.solutions}"
            if self.entry_point is not None:
                what += f" entered at {self.entry_point}"
        else:
            what = f"model {self.model} at {self.base_url}"
        return (
            f"{what} on {self.tasks} (stage {self.stage.value}, {self.rules} rules, "
            f"timed by {self.timing})"
        )


class TaskResult(BaseModel):
    """One finished task: its record (without code), the verdict and where its files are."""

    model_config = ConfigDict(frozen=True)

    task: dict
    status: ResultStatus
    verdict: Verdict
    sample: int | None = None  # KernelBench's sample K where the task has several solutions
    solution_hash: str | None = None
    trajectory: str | None = None  # path relative to the run folder
    seconds: float | None = None
    finished: str = ""

    @model_validator(mode="before")
    @classmethod
    def _legacy_service_error(cls, data):
        """Results written before Verdict.service_error say so by their message alone."""
        verdict = data.get("verdict") if isinstance(data, dict) else None
        if isinstance(verdict, dict) and "service_error" not in verdict:
            legacy = str(verdict.get("message", "")).startswith(SERVICE_ERROR)
            data = {**data, "verdict": {**verdict, "service_error": legacy}}
        return data

    @property
    def name(self) -> str:
        return self.task["name"]

    @property
    def key(self) -> str:
        """The task's name, and its sample where it has one: what names its solution folder."""
        return self.name if self.sample is None else sample_key(self.name, self.sample)

    @property
    def level(self) -> int | None:
        return self.task.get("level")

    @classmethod
    def of(
        cls,
        task: Task,
        verdict: Verdict,
        *,
        status: ResultStatus | None = None,
        solution: Solution | None = None,
        trajectory: str | None = None,
        seconds: float | None = None,
        sample: int | None = None,
    ) -> TaskResult:
        record = task.to_record()
        record.pop("code")
        return cls(
            task=record,
            status=status or ResultStatus(verdict.status.value),
            verdict=verdict,
            sample=sample,
            solution_hash=solution.hash if solution is not None else None,
            trajectory=trajectory,
            seconds=seconds,
            finished=_now(),
        )


def sample_key(name: str, sample: int | None) -> str:
    return name if sample is None else f"{name}.sample_{sample}"


def first_samples(results: list[TaskResult]) -> list[TaskResult]:
    """One result per task, its lowest sample's: what a run's headline figures are over, as
    KernelBench's one-sample runs are scored."""
    first: dict[str, TaskResult] = {}
    for r in results:
        kept = first.get(r.name)
        if kept is None or _sample_order(r) < _sample_order(kept):
            first[r.name] = r
    return [r for r in results if first[r.name] is r]


def _sample_order(r: TaskResult) -> int:
    return -1 if r.sample is None else r.sample


def failed_verdict(
    task: Task, stage: Stage, status: Status, message: str, service_error: bool = False
) -> Verdict:
    """A verdict for a task whose evaluation never ran to an end in the environment (no or an
    unreadable solution, or the evaluation service failing it: `service_error`)."""
    return Verdict(
        task=task.name,
        task_hash=task.hash,
        stage=stage,
        status=status,
        compiled=False,
        correct=False,
        reward=-1,
        message=f"{SERVICE_ERROR} {message}" if service_error else message,
        service_error=service_error,
    )


class RunStore:
    """Reads and appends the files of one run folder."""

    META = "run.json"
    RESULTS = "results.jsonl"
    SOLUTIONS = "solutions"
    TRAJECTORIES = "trajectories"

    def __init__(self, root: str | Path):
        self.root = Path(root)
        self._log = JsonlLog(self.root / self.RESULTS)

    def start(self, meta: RunMeta) -> RunMeta:
        """Create the run, or resume it when the folder holds a run of the same identity."""
        if (self.root / self.META).is_file():
            old = self.meta()
            if old.identity() != meta.identity():
                raise UserError(
                    f"{self.root} holds a run of {old.describe()}; this one is "
                    f"{meta.describe()}: choose another --out folder to start a new run"
                )
            return old
        if self.root.exists() and not self.root.is_dir():
            raise UserError(f"{self.root}: exists and is not a folder; choose another --out")
        self.root.mkdir(parents=True, exist_ok=True)
        meta = meta.model_copy(update={"created": meta.created or _now()})
        (self.root / self.META).write_text(meta.model_dump_json(indent=2) + "\n")
        return meta

    def meta(self) -> RunMeta:
        path = self.root / self.META
        if not path.is_file():
            raise UserError(
                f"{self.root}: not a bench run folder (no {self.META}); "
                "give the --out folder of a `cuda-agent bench` run"
            )
        try:
            return RunMeta.model_validate_json(path.read_text())
        except ValidationError as err:
            raise UserError(f"{path}: not a run description ({err.error_count()} errors)") from None

    def results(self) -> list[TaskResult]:
        """The latest result of each task (of each sample, where it has several), in the order
        they first finished."""
        latest: dict[str, TaskResult] = {}
        for lineno, record in enumerate(self._log.read(), 1):
            try:
                result = TaskResult.model_validate(record)
            except ValidationError:
                raise UserError(
                    f"{self._log.path}:{lineno}: not a task result; the file is damaged"
                ) from None
            latest[result.key] = result
        return list(latest.values())

    def finished(self, tasks: list[Task]) -> set[str]:
        """Keys (TaskResult.key) of the results for the tasks' programs as they are now (same
        content hash)."""
        hashes = {t.name: t.hash for t in tasks}
        return {r.key for r in self.results() if hashes.get(r.name) == r.task.get("hash")}

    def record(self, result: TaskResult) -> None:
        self._log.append(json.loads(result.model_dump_json()))

    def save_solution(self, name: str, solution: Solution) -> None:
        folder = self.root / self.SOLUTIONS / name
        for rel, text in solution.files.items():
            dest = folder / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(text)

    def solution_files(self, name: str) -> dict[str, str]:
        """The saved solution of task `name` as {relative path: text} (empty when none)."""
        folder = self.root / self.SOLUTIONS / name
        if not folder.is_dir():
            return {}
        return {
            p.relative_to(folder).as_posix(): p.read_text(errors="replace")
            for p in sorted(folder.rglob("*"))
            if p.is_file()
        }

    def trajectory_path(self, name: str) -> Path:
        return self.root / self.TRAJECTORIES / f"{name}.jsonl"


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
