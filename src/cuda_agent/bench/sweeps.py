"""`cuda-agent baselines` and `cuda-agent audit`: one Environment call per task over a set, on the
service's GPU workers, each result appended to a JSONL data file as it finishes.

The Environment owns both caches (a rerun of a task costs a file read there); these files are
the record to publish and compare: baselines keyed by (task hash, GPU, torch version), audits by
(task hash, torch version, tolerances, module mode), each task audited in both modes (a record
without a mode is training mode's). A rerun skips the keys already in the file; a task whose
call failed is reported, not written, and retried by the next run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from cuda_agent.bench.jsonl import JsonlLog
from cuda_agent.bench.metrics import level_key
from cuda_agent.bench.service import EvaluationService
from cuda_agent.sandbox import TIMING_METHOD
from cuda_agent.task import Task


@dataclass(frozen=True)
class SweepItem:
    """One task's outcome: the record written, or the error (the task stays to do)."""

    task: Task
    record: dict | None
    error: str | None


def _task_fields(task: Task) -> dict:
    return {
        "level": task.level,
        "problem_id": task.source.problem_id,
        "source": task.source.describe(),
    }


def run_baselines(
    tasks: list[Task],
    service: EvaluationService,
    out: Path,
    on_item: Callable[[SweepItem], None] | None = None,
    on_prepared: Callable[[Task], None] | None = None,
) -> list[SweepItem]:
    """Eager and torch.compile timings of every task not yet in `out` for this GPU, torch and
    timing method (rows of an older method are timed again and appended; readers take the
    newest row of a task).

    Two passes: every task's untimed GPU work first (the audit, torch.compile's first call:
    `Environment.prepare_baselines`), then the timings, which then wait on no long compile. A
    task that fails the first pass is not reported there: the timing pass meets the same error
    and reports it."""
    log = JsonlLog(out)
    ident = service.identity()
    have = {
        (r.get("task_hash"), r.get("gpu"), r.get("torch_version"))
        for r in log.read()
        if r.get("timing_method") == TIMING_METHOD
    }
    todo = [t for t in tasks if (t.hash, ident["gpu"], ident["torch_version"]) not in have]
    for task, _ in service.prepare_baselines(todo):
        if on_prepared is not None:
            on_prepared(task)
    return _sweep(service.baselines(todo), log, on_item)


def run_audit(
    tasks: list[Task],
    service: EvaluationService,
    out: Path,
    on_item: Callable[[SweepItem], None] | None = None,
    modes: tuple[str, ...] = ("train", "eval"),
) -> list[SweepItem]:
    """The null-kernel battery of every task not yet in `out` for this torch and tolerance, in
    each module mode of `modes`."""
    log = JsonlLog(out)
    ident = service.identity()
    env = service.config.env
    have = {
        (r.get("task_hash"), r.get("torch_version"), r.get("atol"), r.get("rtol"))
        + (r.get("module_mode", "train"),)
        for r in log.read()
    }
    items = []
    for mode in modes:
        key = (ident["torch_version"], env.atol, env.rtol, mode)
        todo = [t for t in tasks if (t.hash, *key) not in have]
        results = service.audit(todo, mode)
        items += _sweep(results, log, on_item, lambda a: {"redrawn": a.redrawn})
    write_audit_table(log.read(), out.with_suffix(".md"))
    return items


def _sweep(results, log: JsonlLog, on_item, extra=lambda value: {}) -> list[SweepItem]:
    items = []
    for task, value in results:
        if isinstance(value, Exception):
            item = SweepItem(
                task,
                None,
                str(value).strip().splitlines()[-1] if str(value) else type(value).__name__,
            )
        else:
            record = {**_task_fields(task), **value.model_dump(), **extra(value)}
            log.append(record)
            item = SweepItem(task, record, None)
        items.append(item)
        if on_item is not None:
            on_item(item)
    return items


def write_audit_table(records: list[dict], path: Path) -> Path:
    """Markdown: the tasks a trivial output passes under their own inputs, and what fixes them."""
    flagged = [r for r in records if r.get("passing", {}).get("task") or r.get("degenerate")]
    flagged.sort(
        key=lambda r: (
            r.get("level") is None,
            r.get("level") or 0,
            r.get("problem_id") or 0,
            r.get("task", ""),
        )
    )
    lines = [
        "# Null-kernel audit",
        "",
        f"{len(records)} audits (task, module mode); {len(flagged)} pass a trivial output under "
        "their own inputs (or under every distribution tried).",
        "",
        "| task | level | mode | trivial outputs passing the task's own inputs | scored on "
        "| degenerate |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r in flagged:
        passing = ", ".join(r.get("passing", {}).get("task", [])) or "—"
        lines.append(
            f"| {r.get('task')} | {level_key(r.get('level'))} | {r.get('module_mode', 'train')} "
            f"| {passing} | "
            f"{r.get('distribution')} | {'yes' if r.get('degenerate') else 'no'} |"
        )
    bound = [
        r for r in records if r.get("launch_bound") and r.get("module_mode", "train") == "train"
    ]
    if bound:
        lines += [
            "",
            "## Launch-bound tasks",
            "",
            "The reference's host takes well over twice its GPU busy time to issue a call: "
            "speed-ups on these tasks measure launch overhead, and the timing methods disagree.",
            "",
            "| task | level | host ms per call | GPU busy ms per call |",
            "| --- | --- | --- | --- |",
        ]
        lines += [
            f"| {r.get('task')} | {level_key(r.get('level'))} | {r['launch_ms']:.4f} "
            f"| {r['busy_ms']:.4f} |"
            for r in bound
        ]
    path.write_text("\n".join(lines) + "\n")
    return path
