"""The synthesis run: candidates streamed through the stages until enough tasks are accepted.

compose -> eager (cheap filters) -> labels -> dedup -> decontam -> compile (slow, survivors only)
-> export. Every stage appends one journal line per candidate; a rerun skips what is done. The
harness only orchestrates and compares: every program runs in an isolated child (`batch.py`),
and `scheduler.py` keeps the workers busy. Setup (the seed catalog, the KernelBench signatures)
runs its two parts side by side and is cached on disk.
"""

from __future__ import annotations

import json
import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import torch

from cuda_agent.errors import UserError
from cuda_agent.synth.catalog import load_catalog
from cuda_agent.synth.config import SynthConfig
from cuda_agent.synth.decontam import Reference, build_reference, cache_file
from cuda_agent.synth.executor import LocalPool, RayPool
from cuda_agent.synth.export import task_rows, write_dataset
from cuda_agent.synth.filters import FilterConfig
from cuda_agent.synth.jobs import reference_job
from cuda_agent.synth.journal import open_journals
from cuda_agent.synth.report import summarize, write_report
from cuda_agent.synth.scheduler import Scheduler, limits_for
from cuda_agent.task import KERNELBENCH, TaskError, load_tasks


class Progress(Protocol):
    """Receives progress per stage: `stage` sets a total and how much of it is already done."""

    def stage(self, name: str, total: int, done: int) -> None: ...
    def advance(self, name: str) -> None: ...


class NoProgress:
    def stage(self, name: str, total: int, done: int) -> None:
        pass

    def advance(self, name: str) -> None:
        pass


@dataclass
class RunResult:
    out: Path
    ids: list[int]  # candidates made
    accepted: list[int]  # candidates that passed every stage, in id order
    exported: list[int]
    summary: dict  # what report.md shows, as numbers (also in summary.json)
    seconds: dict[str, float] = field(default_factory=dict)  # worker-seconds per stage
    notes: list[str] = field(default_factory=list)
    resolved: list[int] = field(default_factory=list)  # candidates with a final verdict
    unfinished: list[int] = field(default_factory=list)  # taken up, cut by the deadline


class Pipeline:
    def __init__(self, cfg: SynthConfig, progress: Progress | None = None):
        self.cfg = cfg
        self.progress = progress or NoProgress()
        self.out = Path(cfg.out)
        self.notes: list[str] = []
        self._check_run_file()
        start = time.monotonic()
        with ThreadPoolExecutor(2) as setup:  # both parts keep their own workers busy
            catalog_job = setup.submit(load_catalog, cfg.cache_dir, False, cfg.workers)
            reference_job_ = setup.submit(self._reference)
            catalog, self.reference = catalog_job.result(), reference_job_.result()
        self.setup_seconds = time.monotonic() - start
        if not catalog.entries:
            raise UserError("the seed catalog is empty; check the torch installation")
        self.notes += list(catalog.notes)
        self.catalog_path = self.out / "catalog.json"
        self.catalog_path.write_text(catalog.model_dump_json())
        self.journals = open_journals(self.out)
        self.filters = self._filter_config()
        if cfg.ray:
            share = 1.0 / cfg.workers if cfg.device.startswith("cuda") else 0.0
            self.pool: LocalPool | RayPool = RayPool(cfg.ray, cfg.workers, share)
        else:
            self.pool = LocalPool(cfg.workers)

    # ---- the run ----

    def run(self, candidates: int | None = None, deadline: float | None = None,
            drain_s: float = 0.0) -> RunResult:  # fmt: skip
        """Until `cfg.n` tasks are accepted (or the cap is hit); exactly `candidates` if given.

        `deadline` (a `time.monotonic()` time): no candidate is taken up after `deadline -
        drain_s`, nothing starts after `deadline`, and the jobs in flight are cut there; what
        finished is exported and reported all the same."""
        scheduler = Scheduler(self.cfg, self.journals, self.reference, self.filters,
                              str(self.catalog_path), self.pool, self.progress)  # fmt: skip
        limits = limits_for(self.cfg, candidates, deadline, drain_s)
        start = time.monotonic()
        try:
            scheduler.run(limits)
        finally:
            self.pool.close()
        wall = time.monotonic() - start
        ids = sorted(i for i in self.journals["compose"].records if i < scheduler.admitted)
        accepted = scheduler.accepted()
        capped = scheduler.admitted >= self.cfg.candidate_cap
        if candidates is None and len(accepted) < self.cfg.n and capped:
            self.notes.append(f"stopped at the candidate cap ({self.cfg.candidate_cap}) with "
                              f"{len(accepted)} of {self.cfg.n} tasks")  # fmt: skip
        if deadline is not None and scheduler.unfinished_ids():
            self.notes.append(f"stopped at the time limit: {len(scheduler.unfinished_ids())} "
                              "candidates taken up had no verdict yet")  # fmt: skip
        exported = accepted[: self.cfg.n] if candidates is None else accepted
        seconds = self._seconds(ids, scheduler, wall)
        start = time.monotonic()
        rows = task_rows(self.journals, exported, self.cfg.seed, self.cfg.device)
        write_dataset(rows, self.out)
        seconds["export"] = time.monotonic() - start
        summary = summarize(self.journals, ids, rows, self.reference)
        write_report(self.out, summary, seconds, self.notes)
        return RunResult(self.out, ids, accepted, exported, summary, seconds, self.notes,
                         sorted(scheduler.final), scheduler.unfinished_ids())  # fmt: skip

    def _seconds(self, ids: list[int], scheduler: Scheduler, wall: float) -> dict[str, float]:
        """Worker-seconds per stage (the children's own clocks), the parent's share, the wall."""
        seconds = {"setup": self.setup_seconds, "run": wall}
        for stage in ("compose", "eager", "compile"):
            journal = self.journals[stage]
            seconds[stage] = sum(r.get("seconds") or 0.0 for i in ids
                                 if (r := journal.get(i)) is not None)  # fmt: skip
        seconds["dedup+decontam (parent)"] = scheduler.parent_seconds
        return seconds

    # ---- setup ----

    def _check_run_file(self) -> None:
        self.out.mkdir(parents=True, exist_ok=True)
        path = self.out / "run.json"
        identity = self.cfg.identity()
        if path.is_file():
            before = json.loads(path.read_text())
            # a setting missing from an older run.json did not exist then: it had its default
            defaults = {k: f.default for k, f in SynthConfig.model_fields.items()}
            before = {k: before.get(k, defaults.get(k)) for k in identity}
            changed = [k for k in identity if before[k] != identity[k]]
            if changed:
                was = ", ".join(f"{k}={before[k]!r}" for k in changed)
                raise UserError(
                    f"{self.out} holds a run with {was}; resume it with the same options "
                    "or choose another --out"
                )
        else:
            path.write_text(json.dumps(identity, indent=2) + "\n")

    def _reference(self) -> Reference:
        if not self.cfg.decontaminate:
            self.notes.append(
                "decontamination skipped (--skip-decontamination): tasks may copy KernelBench "
                "problems; do not evaluate on KernelBench a model trained on them"
            )
            return Reference(names=(), signatures={}, tokens=(), untraced=())
        try:
            tasks = load_tasks(KERNELBENCH, kernelbench=self.cfg.kernelbench)
        except TaskError as err:
            raise UserError(
                f"synthesis decontaminates against KernelBench and found none: {err} "
                "(or opt out with --skip-decontamination)"
            ) from None
        cache = cache_file(self.cfg.cache_dir)
        workers = min(self.cfg.workers, os.cpu_count() or 1)
        pool = LocalPool(workers)
        trace = lambda chunks: (recs for _, recs in pool.map(reference_job, chunks))  # noqa: E731
        try:
            reference = build_reference(tasks, cache, trace, parts=2 * workers)
        finally:
            pool.close()
        if reference.untraced:
            self.notes.append(
                f"{len(reference.untraced)} KernelBench programs could not be traced: "
                f"{', '.join(reference.untraced[:5])}"
            )
        return reference

    def _filter_config(self) -> FilterConfig:
        cfg = self.cfg
        cuda = cfg.device.startswith("cuda")
        if cuda and not torch.cuda.is_available():
            raise UserError("--device cuda: no CUDA GPU here; use --device cpu")
        workers = cfg.workers
        return FilterConfig(
            device=cfg.device,
            window_ms=cfg.window,
            atol=cfg.atol,
            rtol=cfg.rtol,
            threads=max(1, (os.cpu_count() or 1) // workers),
            memory_fraction=0.9 / workers if cuda and workers > 1 else None,
            compile_threads=1 if workers > 1 else None,
            compile_backend=cfg.compile_backend,
            seed=cfg.seed,
        )
