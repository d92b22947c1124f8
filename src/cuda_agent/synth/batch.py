"""A batch of candidates through one stage in one isolated child, each candidate under a hard cap.

A child per candidate would pay the child's start (a CUDA context, cuBLAS and cuDNN set-up, the
first import of transformers, torch.compile's own start) for every program; a batch pays it once.
The child appends a line to a results file in its workdir as each candidate starts and finishes,
so whatever happens to the child, the parent knows which candidates got a verdict, which one was
in flight, and which never started (they go back to the queue). Each candidate's stage runs under
a watchdog (`faulthandler`, a C thread that needs no GIL) that ends the child when the cap is
exceeded: a slow program is rejected as a timeout and cannot stall its worker.

Candidates from the template composer share a batch; a program a language model wrote gets a
child of its own (`Item.alone`), so it cannot touch another candidate's process.
"""

from __future__ import annotations

import contextlib
import faulthandler
import gc
import json
import os
import shutil
import tempfile
import time
import uuid
import warnings
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path

from cuda_agent.sandbox import IsolatedResult, lock_files, run_isolated
from cuda_agent.synth.filters import FilterConfig

PRELOAD = ("cuda_agent.synth.preload",)  # see synth/preload.py

FRONT = "front"  # compose where there is no code yet, then the eager filters and the labels
COMPILE = "compile"


@dataclass(frozen=True)
class Item:
    id: int
    code: str | None = None  # None: the template composer writes it in the child
    alone: bool = False  # a child of its own (a program a language model wrote)


@dataclass(frozen=True)
class BatchJob:
    stage: str  # FRONT or COMPILE
    items: tuple[Item, ...]
    filters: FilterConfig
    cap_s: float  # one candidate's eager or compile check, at most
    compose_cap_s: float
    timeout_s: float  # the whole batch
    deadline_cut: bool = False  # timeout_s is the run's deadline: what it stops has no verdict
    catalog_path: str = ""
    seed: int = 0
    shared_cache: bool = False  # compile in the node's inductor/triton cache (our programs only)


@dataclass(frozen=True)
class BatchResult:
    records: tuple[tuple[str, dict], ...]  # (stage, record) as the child wrote them
    left: tuple[Item, ...]  # never started (the child stopped early): to queue again
    unfinished: tuple[Item, ...]  # stopped by the run's deadline: no verdict
    seconds: float = 0.0


def node_dir() -> Path:
    """A folder local to the machine the job runs on: the GPU lock, the shared compile cache."""
    path = Path(tempfile.gettempdir()) / f"cuda-agent-synth-{os.getuid()}"
    path.mkdir(parents=True, exist_ok=True)
    return path


def memory_mb(device: str) -> int:
    return 16384 if device.startswith("cuda") else 6144


def run_batch(job: BatchJob) -> BatchResult:
    """Run `job` in an isolated child; every candidate ends with a record, in `left` or in
    `unfinished`."""
    if job.shared_cache:
        workdir, own = node_dir() / "compile-cache", False
        workdir.mkdir(exist_ok=True)
    else:
        workdir, own = Path(tempfile.mkdtemp(prefix="cuda-agent-synth-")), True
    tag = uuid.uuid4().hex[:12]
    results, watchdog = workdir / f"batch-{tag}.jsonl", workdir / f"batch-{tag}.watchdog"
    filters = job.filters
    if filters.device.startswith("cuda"):
        lock, _ = lock_files(node_dir() / "gpu.lock")  # the confined child cannot create them
        filters = replace(filters, gpu_lock=str(lock))
    start = time.monotonic()
    try:
        try:
            res = run_isolated(work_batch, (replace(job, filters=filters), str(results),
                                            str(watchdog)), timeout_s=job.timeout_s,
                               memory_mb=memory_mb(filters.device), cwd=workdir,
                           preload=PRELOAD)  # fmt: skip
        except OSError as err:  # the child could not be started (no memory, no processes left)
            res = IsolatedResult(False, error=f"{type(err).__name__}: {err}")
        lines = _read_lines(results)
        fired = watchdog.is_file() and "Timeout" in watchdog.read_text(errors="replace")
    finally:
        if own:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            results.unlink(missing_ok=True)
            watchdog.unlink(missing_ok=True)
    return _outcome(job, res, lines, fired, time.monotonic() - start)


def _outcome(job: BatchJob, res, lines: list[dict], fired: bool, seconds: float) -> BatchResult:
    final = "eager" if job.stage == FRONT else COMPILE
    records: list[tuple[str, dict]] = []
    finished: set[int] = set()
    composed: dict[int, str] = {}
    in_flight: tuple[str, int] | None = None
    for line in lines:
        if line["kind"] == "start":
            in_flight = (line["stage"], line["id"])
            continue
        stage, rec = line["stage"], line["record"]
        records.append((stage, rec))
        in_flight = None
        if stage == final or not rec.get("ok"):
            finished.add(rec["id"])
        elif stage == "compose":
            composed[rec["id"]] = rec["code"]
    pending = [replace(item, code=composed.get(item.id, item.code)) for item in job.items
               if item.id not in finished]  # fmt: skip
    if res.ok or not pending:
        return BatchResult(tuple(records), tuple(pending), (), seconds)
    if in_flight is None:  # the child failed between candidates: blame the next one
        first = pending[0]
        in_flight = ("compose" if first.code is None else final, first.id)
    stage, cid = in_flight
    current = tuple(item for item in pending if item.id == cid)
    rest = tuple(item for item in pending if item.id != cid)
    if res.timed_out and job.deadline_cut and not fired:
        return BatchResult(tuple(records), (), current + rest, seconds)
    if fired or res.timed_out:
        cap = job.compose_cap_s if stage == "compose" else job.cap_s
        why = {"reason": "timeout", "detail": f"{stage} took more than {cap:.0f} s"}
    else:
        why = {"reason": "crashed", "detail": res.error_line()}
    records.append((stage, {"id": cid, "ok": False, "stage": stage, **why}))
    return BatchResult(tuple(records), rest, (), seconds)


def work_batch(job: BatchJob, results: str, watchdog: str) -> int:
    """The child: each candidate through the job's stage, one results line as each starts and
    one as it finishes (flushed, so they survive the child being killed)."""
    from cuda_agent.synth.compose import compose_record, load_composer
    from cuda_agent.synth.filters import compile_check, eager_check

    warnings.filterwarnings("ignore")
    check = eager_check if job.stage == FRONT else compile_check
    stage = "eager" if job.stage == FRONT else COMPILE
    composer = None
    with open(results, "a", buffering=1) as out, open(watchdog, "w") as dog:
        for item in job.items:
            code = item.code
            if code is None:
                composer = composer or load_composer(job.catalog_path, job.filters.device)
                compose = partial(compose_record, composer, job.seed, item.id)
                rec = _capped(out, dog, "compose", item.id, job.compose_cap_s, compose)
                if not rec["ok"]:
                    continue
                code = rec["code"]
            _capped(out, dog, stage, item.id, job.cap_s, partial(check, code, job.filters))
            if not _tidy(job):
                break  # the GPU is in an error state: the rest get a fresh child
    return len(job.items)


def _capped(out, dog, stage: str, cid: int, cap_s: float, fn) -> dict:
    out.write(json.dumps({"kind": "start", "stage": stage, "id": cid}) + "\n")
    start = time.perf_counter()
    faulthandler.dump_traceback_later(cap_s, exit=True, file=dog)
    try:
        rec = fn()
    finally:
        faulthandler.cancel_dump_traceback_later()
    rec = {"id": cid, **rec, "seconds": round(time.perf_counter() - start, 3)}
    out.write(json.dumps({"kind": "record", "stage": stage, "record": rec}) + "\n")
    return rec


def _tidy(job: BatchJob) -> bool:
    """Leave the next candidate the process a fresh child would give it: no compiled graphs,
    no cached GPU memory. False when the GPU context is broken (an illegal address, a device
    assert: sticky errors that would fail every later candidate of this child)."""
    import torch

    if job.stage == COMPILE:
        torch._dynamo.reset()
    gc.collect()
    if not job.filters.device.startswith("cuda"):
        return True
    try:
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        return bool(torch.ones(1, device=job.filters.device).sum().item() == 1.0)
    except RuntimeError:
        return False


def _read_lines(path: Path) -> list[dict]:
    out = []
    if path.is_file():
        for line in path.read_text().splitlines():
            with contextlib.suppress(json.JSONDecodeError):
                out.append(json.loads(line))  # a last line cut short by a kill is dropped
    return out
