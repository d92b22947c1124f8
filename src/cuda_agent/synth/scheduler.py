"""The run's scheduler: every worker busy with whatever work is ready, candidates streaming through
the stages instead of waiting for a whole stage to end.

Work, by priority: torch.compile for candidates that passed every cheaper stage (it finishes
them), then the front stage (compose and the eager filters, in batches) for new candidates in id
order. Dedup and decontamination run here in the parent, in id order over the prefix of
candidates whose eager verdict is known (the first of a group is kept, whoever finished first).
Past the admission time no candidate is started; past the deadline nothing is, and the jobs in
flight are cut there (their candidates are left without a verdict, and a rerun takes them up).
"""

from __future__ import annotations

import bisect
import math
import random
import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace

from cuda_agent.synth.batch import COMPILE, FRONT, BatchJob, BatchResult, Item, run_batch
from cuda_agent.synth.config import SynthConfig
from cuda_agent.synth.decontam import Reference
from cuda_agent.synth.dedup import Deduper
from cuda_agent.synth.filters import FilterConfig
from cuda_agent.synth.journal import Journal

FRONT_BATCH = 6  # candidates per front child, at most
COMPILE_BATCH = 5  # the first torch.compile in a process pays most of its set-up
_EAGER_FIELDS = ("eager_ms", "input_shapes", "output_shapes", "seconds")
_LABEL_FIELDS = ("ops", "signature", "aten", "label_counts")


@dataclass(frozen=True)
class Limits:
    """Candidate ids below `candidates`; `target` accepted tasks (None: every candidate through
    every stage); monotonic times after which no candidate starts, and nothing at all."""

    candidates: int
    target: int | None = None
    admit_until: float | None = None
    deadline: float | None = None


class Scheduler:
    def __init__(self, cfg: SynthConfig, journals: dict[str, Journal], reference: Reference,
                 filters: FilterConfig, catalog_path: str, pool, progress) -> None:  # fmt: skip
        self.cfg, self.journals, self.reference = cfg, journals, reference
        self.filters, self.catalog_path, self.pool, self.progress = (filters, catalog_path,
                                                                     pool, progress)  # fmt: skip
        self.deduper = Deduper()
        for i in journals["dedup"].ok_ids():
            self.deduper.remember(journals["dedup"].get(i))
        self.front: deque[Item] = deque()
        self.compile_ready: list[int] = []
        self.in_flight: dict = {}
        self.llm: dict[Future, int] = {}
        self._llm_pool: ThreadPoolExecutor | None = None
        self.admitted = 0  # ids below it have been taken up
        self.settled = 0  # ids below it went through dedup and decontam (or were rejected before)
        self.resolved = 0  # ids below it have a final verdict
        self.resolved_accepted = 0
        self.final: set[int] = set()  # ids with a final verdict (rejected somewhere, or compiled)
        self.accepted_ids: list[int] = []  # sorted
        self.parent_seconds = 0.0
        self._shown = 0.0

    # ---- the loop ----

    def run(self, limits: Limits) -> None:
        self.limits = limits
        self._admit_journaled()
        try:
            while True:
                self._settle()
                stop = self._enough() or self._past(limits.deadline)
                if not stop:
                    self._fill()
                self._show()
                if not self.in_flight and not self.llm:
                    if stop or not self._admit(force=True):  # idle: take up more regardless
                        break
                    continue
                self._collect()
        finally:
            if self._llm_pool is not None:
                self._llm_pool.shutdown(wait=True)
            self._show(force=True)

    def accepted(self) -> list[int]:
        return list(self.accepted_ids)

    def unfinished_ids(self) -> list[int]:
        """Taken up, without a final verdict (cut by the deadline, or not needed any more)."""
        return [i for i in range(self.admitted) if i not in self.final]

    def _enough(self) -> bool:
        if self.limits.target is None:
            return self.resolved >= self.limits.candidates
        return self.resolved_accepted >= self.limits.target

    def _past(self, moment: float | None) -> bool:
        return moment is not None and time.monotonic() >= moment

    def _fill(self) -> None:
        """Compile batches first (full ones while front work is there), then front batches."""
        while len(self.in_flight) < self.pool.workers:
            job = self._compile_job(full=True) or self._front_job() or self._compile_job(False)
            if job is None:
                return
            self.in_flight[self.pool.submit(run_batch, job)] = job

    def _collect(self) -> None:
        if self.in_flight:
            waited = self.pool.wait(list(self.in_flight), timeout=0.2 if self.llm else None)
            for handle, result in waited:
                self._absorb(self.in_flight.pop(handle), result)
        else:
            time.sleep(0.05)
        for future in [f for f in self.llm if f.done()]:
            rec = future.result()
            self.llm.pop(future)
            self.journals["compose"].append({**rec, "composer": "llm"})
            self._note(rec["id"])
            if rec["ok"]:
                self.front.append(Item(rec["id"], rec["code"], alone=True))

    # ---- jobs ----

    def _compile_job(self, full: bool) -> BatchJob | None:
        """The next compile batch, lowest ids first. With a target, only candidates that could
        still be among the first `target` accepted ones are compiled."""
        target = self.limits.target
        below = self.accepted_ids
        ready = [i for i in self.compile_ready
                 if target is None or bisect.bisect_left(below, i) < target]  # fmt: skip
        if not ready or (full and len(ready) < COMPILE_BATCH):
            return None
        items: list[Item] = []
        for cid in ready[:COMPILE_BATCH]:
            item = Item(cid, self.journals["compose"].get(cid)["code"], alone=self._alone(cid))
            if item.alone and items:
                break
            items.append(item)
            if item.alone:
                break
        for item in items:
            self.compile_ready.remove(item.id)
        return self._job(COMPILE, items, self.cfg.compile_timeout_s)

    def _front_job(self) -> BatchJob | None:
        if not self.front:
            self._admit(force=False)
        if not self.front:
            return None
        size = self._front_size()
        items = [self.front.popleft()]
        while not items[0].alone and self.front and not self.front[0].alone and len(items) < size:
            items.append(self.front.popleft())
        return self._job(FRONT, items, self.cfg.eager_timeout_s)

    def _job(self, stage: str, items: list[Item], cap_s: float) -> BatchJob:
        per_item = cap_s + (self.cfg.compose_timeout_s if stage == FRONT else 0.0)
        budget, cut = len(items) * per_item + 60.0, False
        if self.limits.deadline is not None:
            left = self.limits.deadline - time.monotonic()
            if left < budget:
                budget, cut = max(1.0, left), True
        return BatchJob(stage=stage, items=tuple(items), filters=self.filters, cap_s=cap_s,
                        compose_cap_s=self.cfg.compose_timeout_s, timeout_s=budget,
                        deadline_cut=cut, catalog_path=self.catalog_path, seed=self.cfg.seed,
                        shared_cache=stage == COMPILE and not items[0].alone)  # fmt: skip

    def _front_size(self) -> int:
        if self.limits.target is None:
            remaining = self.limits.candidates - self.admitted + len(self.front)
        else:
            remaining = self._room() + len(self.front)
        return max(1, min(FRONT_BATCH, math.ceil(remaining / (2 * self.pool.workers))))

    # ---- admission ----

    def _admit_journaled(self) -> None:
        """Take up the candidates an earlier run composed (the unbroken run of ids from 0)."""
        compose = self.journals["compose"]
        while self.admitted < self.limits.candidates and self.admitted in compose:
            self._take(self.admitted)

    def _admit(self, force: bool) -> bool:
        """Take up the next candidates (as many as one front child checks); False if none."""
        if self._past(self.limits.admit_until) or self._past(self.limits.deadline):
            return False
        room = self._room()
        if self.admitted >= self.limits.candidates or (room <= 0 and not force):
            return False
        for _ in range(min(self._front_size(), max(room, 1))):
            if self.admitted >= self.limits.candidates:
                break
            self._take(self.admitted)
        return True

    def _room(self) -> int:
        """How many more candidates to take up now: all of them without a target; with one,
        enough open candidates to give the missing tasks at the yield so far (15 % margin, 8 at
        least)."""
        if self.limits.target is None:
            return self.limits.candidates - self.admitted
        missing = self.limits.target - len(self.accepted_ids)
        if missing <= 0:
            return 0
        want = max(8, math.ceil(missing / max(self._rate(), 0.05) * 1.15))
        return want - (self.admitted - len(self.final))

    def _take(self, cid: int) -> None:
        self.admitted = cid + 1
        rec = self.journals["compose"].get(cid)
        if rec is not None:  # composed by an earlier run
            self._note(cid)
            if rec["ok"] and cid not in self.journals["eager"]:
                self.front.append(Item(cid, rec["code"], alone=self._alone(cid)))
        elif self._uses_llm(cid):
            self.llm[self._llm().submit(self._llm_compose, cid)] = cid
        else:
            self.front.append(Item(cid))

    def _rate(self) -> float:
        """Accepted tasks per candidate with a verdict, so far (0.5 until there are 20)."""
        if len(self.final) >= 20 and self.accepted_ids:
            return len(self.accepted_ids) / len(self.final)
        return 0.5

    def _alone(self, cid: int) -> bool:
        rec = self.journals["compose"].get(cid)
        return rec is not None and rec.get("composer") == "llm"

    def _uses_llm(self, cid: int) -> bool:
        if not self.cfg.llm_base_url or self.cfg.llm_fraction <= 0:
            return False
        return random.Random(f"{self.cfg.seed}:{cid}:composer").random() < self.cfg.llm_fraction

    def _llm(self) -> ThreadPoolExecutor:
        if self._llm_pool is None:
            from cuda_agent.synth.catalog.model import Catalog
            from cuda_agent.synth.llm import OpenAIChat

            self._chat = OpenAIChat(base_url=self.cfg.llm_base_url, model=self.cfg.llm_model)
            with open(self.catalog_path) as fh:
                self._catalog = Catalog.model_validate_json(fh.read())
            self._llm_pool = ThreadPoolExecutor(self.pool.workers)
        return self._llm_pool

    def _llm_compose(self, cid: int) -> dict:
        from cuda_agent.synth.llm import llm_compose

        return llm_compose(self._chat, self._catalog, self.cfg.seed, cid, self.cfg.device)

    # ---- results ----

    def _absorb(self, job: BatchJob, result: BatchResult) -> None:
        start = time.monotonic()
        j = self.journals
        for stage, rec in result.records:
            if stage == "compose":
                j["compose"].append({**rec, "composer": "template"})
            elif stage == "eager":
                passed = rec.get("stage") == "labels"
                j["eager"].append({"id": rec["id"], "ok": passed,
                                   "reason": None if passed else rec.get("reason"),
                                   "detail": None if passed else rec.get("detail"),
                                   **{k: rec[k] for k in _EAGER_FIELDS if k in rec},
                                   "child": rec if passed else None})  # fmt: skip
                if passed:
                    j["labels"].append(labels_record(rec))
            else:
                j["compile"].append(rec)
            self._note(rec["id"])
        if job.stage == FRONT:
            self.front.extendleft(reversed(result.left))
        else:
            self.compile_ready[:0] = [item.id for item in result.left]
        self.parent_seconds += time.monotonic() - start

    def _settle(self) -> None:
        """Dedup and decontam in id order, as far as the eager verdicts are known; then move the
        resolved prefix on."""
        start = time.monotonic()
        j = self.journals
        while self.settled < self.admitted:
            i = self.settled
            compose, eager = j["compose"].get(i), j["eager"].get(i)
            if compose is None or (compose["ok"] and eager is None):
                break
            if compose["ok"] and eager["ok"]:
                if i not in j["labels"]:  # a killed run wrote the eager line, not the labels
                    j["labels"].append(labels_record(eager["child"]))
                if j["labels"].get(i)["ok"]:
                    self._dedup_decontam(i)
            self.settled += 1
        for i in range(self.resolved, self.settled):
            self._note(i)
        while self.resolved < self.settled and self.resolved in self.final:
            rec = j["compile"].get(self.resolved)
            self.resolved_accepted += bool(rec is not None and rec.get("ok"))
            self.resolved += 1
        self.parent_seconds += time.monotonic() - start

    def _dedup_decontam(self, i: int) -> None:
        j = self.journals
        if i not in j["dedup"]:
            code = j["compose"].get(i)["code"]
            j["dedup"].append(self.deduper.check(i, code, j["labels"].get(i)["signature"]))
        if j["dedup"].get(i)["ok"] and i not in j["decontam"]:
            aten, code = j["labels"].get(i)["aten"], j["compose"].get(i)["code"]
            check = self.reference.check(aten, code, self.cfg.ast_threshold)
            j["decontam"].append({"id": i, **check})
        self._note(i)
        if i not in self.final and i not in j["compile"]:
            self.compile_ready.append(i)

    def _note(self, i: int) -> None:
        """Record a final verdict of `i`, if it has one now."""
        if i in self.final:
            return
        j = self.journals
        compiled = j["compile"].get(i)
        if compiled is None and not any((r := j[s].get(i)) is not None and not r["ok"]
                                        for s in ("compose", "eager", "labels", "dedup",
                                                  "decontam")):  # fmt: skip
            return
        self.final.add(i)
        if compiled is not None and compiled.get("ok"):
            bisect.insort(self.accepted_ids, i)

    def _show(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._shown < 0.5:
            return
        self._shown = now
        j = self.journals
        upstream = {"compose": None, "eager": "compose", "dedup": "labels",
                    "decontam": "dedup", "compile": "decontam"}  # fmt: skip
        for stage, before in upstream.items():
            if before is None:
                total = self.admitted
            else:
                total = sum(1 for r in j[before].records.values() if r.get("ok"))
            self.progress.stage(stage, total, len(j[stage].records))


def labels_record(rec: dict) -> dict:
    fields = {k: rec[k] for k in _LABEL_FIELDS if k in rec}
    return {"id": rec["id"], "ok": bool(rec.get("ok")), "reason": rec.get("reason"),
            "detail": rec.get("detail"), **fields}  # fmt: skip


def limits_for(cfg: SynthConfig, candidates: int | None, deadline: float | None,
               drain_s: float) -> Limits:  # fmt: skip
    """Exactly `candidates` (all of them through every stage), else until `cfg.n` tasks."""
    admit_until = None if deadline is None else deadline - drain_s
    if candidates is not None:
        return Limits(candidates, None, admit_until, deadline)
    return replace(Limits(cfg.candidate_cap, cfg.n), admit_until=admit_until, deadline=deadline)
