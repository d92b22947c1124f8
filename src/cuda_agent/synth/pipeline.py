"""The synthesis run: stages over candidates in rounds until enough tasks are accepted.

compose -> eager (cheap filters) -> labels -> dedup -> decontam -> compile (slow, survivors only)
-> export. Every stage appends one journal line per candidate; a rerun skips what is done. The
harness only orchestrates and compares: every program runs in an isolated child.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import torch

from cuda_agent.errors import UserError
from cuda_agent.synth.catalog import load_catalog
from cuda_agent.synth.config import SynthConfig, kernelbench_path
from cuda_agent.synth.decontam import Reference, build_reference, cache_file
from cuda_agent.synth.dedup import Deduper
from cuda_agent.synth.executor import LocalPool, RayPool
from cuda_agent.synth.export import task_rows, write_dataset
from cuda_agent.synth.filters import FilterConfig
from cuda_agent.synth.jobs import (
    CheckJob,
    ComposeJob,
    compile_job,
    compose_job,
    eager_job,
    reference_job,
)
from cuda_agent.synth.journal import Journal, open_journals
from cuda_agent.synth.report import summarize, write_report
from cuda_agent.task import load_tasks

_EAGER_FIELDS = ("eager_ms", "input_shapes", "output_shapes")
_LABEL_FIELDS = ("ops", "signature", "aten", "label_counts")


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
    seconds: dict[str, float] = field(default_factory=dict)  # wall time per stage
    notes: list[str] = field(default_factory=list)


class Pipeline:
    def __init__(self, cfg: SynthConfig, progress: Progress | None = None):
        self.cfg = cfg
        self.progress = progress or NoProgress()
        self.out = Path(cfg.out)
        self.seconds: dict[str, float] = {}
        self.notes: list[str] = []
        self._check_run_file()
        catalog = load_catalog(cfg.cache_dir)
        if not catalog.entries:
            raise UserError("the seed catalog is empty; check the torch installation")
        self.notes += list(catalog.notes)
        self.catalog_path = self.out / "catalog.json"
        self.catalog_path.write_text(catalog.model_dump_json())
        self.reference = self._reference()
        self.journals = open_journals(self.out)
        self.filters = self._filter_config()
        if cfg.ray:
            share = 1.0 / cfg.workers if cfg.device.startswith("cuda") else 0.0
            self.pool: LocalPool | RayPool = RayPool(cfg.ray, cfg.workers, share)
        else:
            self.pool = LocalPool(cfg.workers)

    # ---- the run ----

    def run(self, candidates: int | None = None) -> RunResult:
        """Until `cfg.n` tasks are accepted (or the cap is hit); exactly `candidates` if given."""
        try:
            done = sorted(self.journals["compose"].records)
            ids = done if candidates is None else list(range(candidates))
            target = None if candidates is not None else self.cfg.n
            self._process(ids, target)
            while candidates is None and len(self._accepted(ids)) < self.cfg.n:
                new = self._next_round(ids)
                if not new:
                    self.notes.append(
                        f"stopped at the candidate cap ({self.cfg.candidate_cap}) with "
                        f"{len(self._accepted(ids))} of {self.cfg.n} tasks"
                    )
                    break
                ids += new
                self._process(ids, target)
        finally:
            self.pool.close()
        accepted = self._accepted(ids)
        exported = accepted[: self.cfg.n] if candidates is None else accepted
        start = time.monotonic()
        rows = task_rows(self.journals, exported, self.cfg.seed, self.cfg.device)
        write_dataset(rows, self.out)
        self.seconds["export"] = time.monotonic() - start
        summary = summarize(self.journals, ids, rows, self.reference)
        write_report(self.out, summary, self.seconds, self.notes)
        return RunResult(self.out, ids, accepted, exported, summary, dict(self.seconds),
                         self.notes)  # fmt: skip

    def _next_round(self, ids: list[int]) -> list[int]:
        start = max(ids) + 1 if ids else 0
        accepted = len(self._accepted(ids))
        rate = accepted / len(ids) if len(ids) >= 20 and accepted else 0.5
        size = math.ceil((self.cfg.n - accepted) / max(rate, 0.05) * 1.15)
        size = min(max(size, 8), self.cfg.candidate_cap - start)
        return list(range(start, start + size)) if size > 0 else []

    def _process(self, ids: list[int], target: int | None) -> None:
        stages = (("compose", self._compose), ("eager", self._eager), ("dedup", self._dedup),
                  ("decontam", self._decontam),
                  ("compile", lambda ids: self._compile(ids, target)))  # fmt: skip
        for name, stage in stages:
            start = time.monotonic()
            stage(ids)
            self.seconds[name] = self.seconds.get(name, 0.0) + time.monotonic() - start

    def _accepted(self, ids: Iterable[int]) -> list[int]:
        ok = self.journals["compile"]
        return sorted(i for i in ids if (r := ok.get(i)) is not None and r.get("ok"))

    # ---- stages ----

    def _compose(self, ids: list[int]) -> None:
        journal = self.journals["compose"]
        todo = [i for i in ids if i not in journal]
        self.progress.stage("compose", len(ids), len(ids) - len(todo))
        llm_ids = [i for i in todo if self._uses_llm(i)]
        template = [i for i in todo if i not in set(llm_ids)]
        size = self.cfg.compose_batch
        jobs = [ComposeJob(str(self.catalog_path), self.cfg.seed, tuple(template[k : k + size]),
                           self.cfg.device) for k in range(0, len(template), size)]  # fmt: skip
        for _, records in self.pool.map(compose_job, jobs):
            for rec in records:
                journal.append({**rec, "composer": "template"})
                self.progress.advance("compose")
        if llm_ids:
            self._compose_llm(llm_ids, journal)

    def _compose_llm(self, ids: list[int], journal: Journal) -> None:
        from cuda_agent.synth.catalog.model import Catalog
        from cuda_agent.synth.llm import OpenAIChat, llm_compose

        chat = OpenAIChat(base_url=self.cfg.llm_base_url, model=self.cfg.llm_model)
        catalog = Catalog.model_validate_json(self.catalog_path.read_text())
        with ThreadPoolExecutor(self.cfg.workers) as pool:
            for rec in pool.map(
                lambda i: llm_compose(chat, catalog, self.cfg.seed, i, self.cfg.device), ids
            ):
                journal.append({**rec, "composer": "llm"})
                self.progress.advance("compose")

    def _uses_llm(self, cid: int) -> bool:
        import random

        if not self.cfg.llm_base_url or self.cfg.llm_fraction <= 0:
            return False
        return random.Random(f"{self.cfg.seed}:{cid}:composer").random() < self.cfg.llm_fraction

    def _eager(self, ids: list[int]) -> None:
        compose, eager, labels = (self.journals[s] for s in ("compose", "eager", "labels"))
        ready = [i for i in ids if (r := compose.get(i)) is not None and r["ok"]]
        for i in ready:  # an eager record whose labels line a killed run did not write
            if i in eager and eager.get(i)["ok"] and i not in labels:
                labels.append(_labels_record(eager.get(i)["child"]))
        todo = [i for i in ready if i not in eager]
        self.progress.stage("eager", len(ready), len(ready) - len(todo))
        jobs = [CheckJob(i, compose.get(i)["code"], self.filters, self.cfg.eager_timeout_s)
                for i in todo]  # fmt: skip
        for _, rec in self.pool.map(eager_job, jobs):
            passed = rec.get("stage") == "labels"
            eager.append({"id": rec["id"], "ok": passed,
                          "reason": None if passed else rec.get("reason"),
                          "detail": None if passed else rec.get("detail"),
                          **{k: rec[k] for k in _EAGER_FIELDS if k in rec},
                          "child": rec if passed else None})  # fmt: skip
            if passed:
                labels.append(_labels_record(rec))
            self.progress.advance("eager")

    def _dedup(self, ids: list[int]) -> None:
        labels, dedup = self.journals["labels"], self.journals["dedup"]
        deduper = Deduper()
        for i in dedup.ok_ids():
            deduper.remember(dedup.get(i))
        ready = [i for i in ids if (r := labels.get(i)) is not None and r["ok"]]
        todo = [i for i in ready if i not in dedup]
        self.progress.stage("dedup", len(ready), len(ready) - len(todo))
        code = self.journals["compose"]
        for i in todo:  # in id order: the first of a group is kept, whoever finished first
            dedup.append(deduper.check(i, code.get(i)["code"], labels.get(i)["signature"]))
            self.progress.advance("dedup")

    def _decontam(self, ids: list[int]) -> None:
        dedup, decontam = self.journals["dedup"], self.journals["decontam"]
        ready = [i for i in ids if (r := dedup.get(i)) is not None and r["ok"]]
        todo = [i for i in ready if i not in decontam]
        self.progress.stage("decontam", len(ready), len(ready) - len(todo))
        for i in todo:
            aten = self.journals["labels"].get(i)["aten"]
            code = self.journals["compose"].get(i)["code"]
            decontam.append({"id": i, **self.reference.check(aten, code, self.cfg.ast_threshold)})
            self.progress.advance("decontam")

    def _compile(self, ids: list[int], target: int | None) -> None:
        """The slow stage, in id order and in waves: a run stops compiling at `target` tasks."""
        decontam, compiled = self.journals["decontam"], self.journals["compile"]
        ready = [i for i in ids if (r := decontam.get(i)) is not None and r["ok"]]
        todo = [i for i in ready if i not in compiled]
        self.progress.stage("compile", len(ready), len(ready) - len(todo))
        compose = self.journals["compose"]
        while todo:
            if target is None:
                wave = todo
            else:
                missing = target - len(self._accepted(ids))
                if missing <= 0:
                    break
                done = [compiled.get(i) for i in ready if i in compiled]
                rate = sum(bool(r["ok"]) for r in done) / len(done) if done else 0.9
                wave = todo[: max(self.cfg.workers, math.ceil(missing / max(rate, 0.1)))]
            todo = todo[len(wave) :]
            jobs = [CheckJob(i, compose.get(i)["code"], self.filters, self.cfg.compile_timeout_s,
                             share_cache=compose.get(i).get("composer") == "template")
                    for i in wave]  # fmt: skip
            for _, rec in self.pool.map(compile_job, jobs):
                compiled.append(rec)
                self.progress.advance("compile")

    # ---- setup ----

    def _check_run_file(self) -> None:
        self.out.mkdir(parents=True, exist_ok=True)
        path = self.out / "run.json"
        identity = self.cfg.identity()
        if path.is_file():
            before = json.loads(path.read_text())
            changed = [k for k in identity if before.get(k) != identity[k]]
            if changed:
                was = ", ".join(f"{k}={before.get(k)!r}" for k in changed)
                raise UserError(
                    f"{self.out} holds a run with {was}; resume it with the same options "
                    "or choose another --out"
                )
        else:
            path.write_text(json.dumps(identity, indent=2) + "\n")

    def _reference(self) -> Reference:
        tasks = load_tasks(kernelbench_path(self.cfg.kernelbench))
        cache = cache_file(self.cfg.cache_dir)
        pool = LocalPool(min(self.cfg.workers, os.cpu_count() or 1))
        reference = build_reference(
            tasks, cache, lambda chunks: (recs for _, recs in pool.map(reference_job, chunks))
        )
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
            threads=None if cuda else max(1, (os.cpu_count() or 1) // workers),
            memory_fraction=min(0.9, 0.95 / workers) if cuda and workers > 1 else None,
            compile_threads=1 if workers > 1 else None,
            compile_backend=cfg.compile_backend,
            seed=cfg.seed,
        )


def _labels_record(rec: dict) -> dict:
    fields = {k: rec[k] for k in _LABEL_FIELDS if k in rec}
    return {"id": rec["id"], "ok": bool(rec.get("ok")), "reason": rec.get("reason"),
            "detail": rec.get("detail"), **fields}  # fmt: skip
