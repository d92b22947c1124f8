"""Stage jobs: the unit a worker (a local thread or a Ray task) runs. Each one hands the code to
an isolated child (`run_isolated`) and turns whatever happened there into a journal record."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from cuda_agent.sandbox import run_isolated
from cuda_agent.synth.compose import compose_batch
from cuda_agent.synth.decontam import trace_reference
from cuda_agent.synth.filters import FilterConfig, compile_check, eager_check


@dataclass(frozen=True)
class ComposeJob:
    catalog_path: str
    seed: int
    ids: tuple[int, ...]
    device: str
    timeout_s: float = 600.0


@dataclass(frozen=True)
class CheckJob:
    id: int
    code: str
    cfg: FilterConfig
    timeout_s: float
    share_cache: bool = True  # compile: reuse one inductor cache (our own programs only)


def node_dir() -> Path:
    """A folder local to the machine the job runs on: the GPU lock, the shared compile cache."""
    path = Path(tempfile.gettempdir()) / f"cuda-agent-synth-{os.getuid()}"
    path.mkdir(parents=True, exist_ok=True)
    return path


def memory_mb(device: str) -> int:
    return 16384 if device.startswith("cuda") else 6144


def compose_job(job: ComposeJob) -> list[dict]:
    res = run_isolated(
        compose_batch, (job.catalog_path, job.seed, list(job.ids), job.device),
        timeout_s=job.timeout_s, memory_mb=memory_mb("cpu"),
    )  # fmt: skip
    if res.ok:
        return res.value
    if len(job.ids) > 1:  # one candidate took the batch down: retry one by one
        return [r for i in job.ids for r in compose_job(replace(job, ids=(i,)))]
    return [{"id": job.ids[0], "ok": False, "reason": "compose crashed", "detail": _short(res)}]


def reference_job(items: tuple[tuple[str, str], ...]) -> list[dict]:
    """aten signatures of KernelBench programs (hash, code), traced in one child."""
    res = run_isolated(trace_reference, (list(items),), timeout_s=1200, memory_mb=16384)
    if res.ok:
        return res.value
    return [{"hash": h, "aten": None, "device": None, "error": _short(res)} for h, _ in items]


def eager_job(job: CheckJob) -> dict:
    return _check(job, eager_check, "eager", cwd=None)


def compile_job(job: CheckJob) -> dict:
    cwd = None
    if job.share_cache:
        cwd = node_dir() / "compile-cache"
        cwd.mkdir(exist_ok=True)
    return _check(job, compile_check, "compile", cwd=cwd)


def _check(job: CheckJob, fn, stage: str, cwd: Path | None) -> dict:
    cfg = job.cfg
    if cfg.device.startswith("cuda"):
        lock = node_dir() / "gpu.lock"
        lock.touch(exist_ok=True)
        cfg = replace(cfg, gpu_lock=str(lock))
    res = run_isolated(fn, (job.code, cfg), timeout_s=job.timeout_s,
                       memory_mb=memory_mb(cfg.device), cwd=cwd)  # fmt: skip
    if res.ok:
        return {"id": job.id, **res.value}
    reason = "timeout" if res.timed_out else "crashed"
    return {"id": job.id, "ok": False, "stage": stage, "reason": reason, "detail": _short(res)}


def _short(res) -> str:
    return (res.error or "").strip().splitlines()[0][:300] if res.error else "no answer"
