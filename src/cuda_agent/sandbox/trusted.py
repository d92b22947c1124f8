"""The trusted side's state in one process: reference models, null-kernel audits, baseline
timings, and the GPU memory that holds the candidate's inputs.

References stay in memory (the last few tasks); audits and baselines are cached on disk, keyed by
task, module mode, GPU and torch version, so that a sweep's workers time each baseline once.
Training mode's files keep the names they had before the mode was part of the key.
"""

from __future__ import annotations

from collections import OrderedDict
from contextlib import nullcontext
from pathlib import Path

import torch

from cuda_agent.errors import UserError
from cuda_agent.sandbox.check.audit import AuditRecord, load_audit, run_battery
from cuda_agent.sandbox.check.inputs import draw_inputs, secret_seed
from cuda_agent.sandbox.check.reference import Reference
from cuda_agent.sandbox.config import EnvConfig
from cuda_agent.sandbox.retry import again_alone_if_out_of_memory
from cuda_agent.sandbox.timing.baselines import (
    TIMING_METHOD,
    BaselineRecord,
    CompileCost,
    baseline_path,
    load_baseline,
    save_json,
)
from cuda_agent.sandbox.timing.gpu_lock import gpu_lock
from cuda_agent.sandbox.timing.profile import ProfileResult, TimingJob, profile_candidate
from cuda_agent.task import Task

_REFERENCES_KEPT = 4


class TrustedSide:
    """What the harness process holds for evaluations on one GPU (`device` None: no GPU)."""

    def __init__(self, config: EnvConfig, device: torch.device | None, gpu_name: str | None):
        self.config = config
        self.device = device
        self.gpu_name = gpu_name
        self._references: OrderedDict[tuple[str, str], Reference] = OrderedDict()
        self._audits: dict[Path, AuditRecord] = {}  # read once: every evaluation asks twice
        self._mem_pool = None  # see _pool

    def clear(self) -> None:
        self._references.clear()

    def reference(self, task: Task, module_mode: str = "train") -> Reference:
        key = (task.hash, module_mode)
        ref = self._references.pop(key, None)
        if ref is None:
            with self.gpu_shared():  # copies weights to the GPU: never beside a timing
                ref = Reference(task, self.device, module_mode)
        self._references[key] = ref
        while len(self._references) > _REFERENCES_KEPT:
            self._references.popitem(last=False)
        return ref

    def audit(self, task: Task, module_mode: str = "train") -> AuditRecord:
        """The null-kernel battery's result for `task` in `module_mode` (cached on disk)."""
        self.need_gpu("the null-kernel audit")
        cfg = self.config
        name = f"{task.hash}-{torch.__version__}-{cfg.atol}-{cfg.rtol}{_suffix(module_mode)}"
        path = cfg.cache_dir / "audit" / f"{name}.json"
        record = self._audits.get(path) or load_audit(path)
        if record is None:
            with self.gpu_shared():
                ref = self.reference(task, module_mode)
                record = run_battery(ref, self.device, cfg.atol, cfg.rtol)
                torch.cuda.empty_cache()  # its sets and outputs: not held while others need room
            save_json(path, record)
        self._audits[path] = record
        return record

    def baselines(self, task: Task, module_mode: str = "train") -> BaselineRecord:
        """Eager and torch.compile timings of `task` on this GPU (cached on disk)."""
        self.need_gpu("timing baselines")
        ref, audit = self.reference(task, module_mode), self.audit(task, module_mode)
        cached = self.compile_baseline(ref)
        if cached is not None:
            return cached
        job = TimingJob(
            ref, lambda: self.draw(ref, audit), self.config, self.device,
            release=self.release_gpu_memory,
        )  # fmt: skip
        try:
            timed = again_alone_if_out_of_memory(
                lambda: profile_candidate(job), self.device, self.release_gpu_memory
            )
            return self.store_baseline(ref, audit, timed)
        finally:
            self.release_gpu_memory()

    def prepare_baselines(self, task: Task, module_mode: str = "train") -> float | None:
        """All of `baselines` but the timing: the null-kernel audit and torch.compile's first
        call; its seconds, or None when the baseline is cached already.

        A sweep runs this over every task first, many workers side by side, and times after:
        the first call (8-22 s for a level-3 model) holds the GPU's lock shared, so a timer waits
        for every first call in flight, and the other workers for the timer. Once compiled, a
        later compile of the same graph in any process is a cache hit (inductor's graphs,
        triton's kernels and their tuned configurations), seconds at most; the cold cost is
        kept on disk for the baseline record."""
        self.need_gpu("timing baselines")
        ref = self.reference(task, module_mode)
        if self.compile_baseline(ref) is not None:
            return None
        audit = self.audit(task, module_mode)

        def first_call():
            with self.gpu_shared():
                try:
                    return ref.ensure_compiled(self.draw(ref, audit))
                finally:
                    self.release_gpu_memory()  # inside the section: see retry.py

        seconds = again_alone_if_out_of_memory(first_call, self.device, self.release_gpu_memory)
        path = self._compile_cost_path(ref)
        if not path.exists():
            save_json(path, CompileCost(seconds=seconds))
        return seconds

    def compile_baseline(self, ref: Reference) -> BaselineRecord | None:
        record = load_baseline(self._baseline_path(ref))
        return record.for_method(self.config.timing) if record is not None else None

    def store_baseline(self, ref, audit, r: ProfileResult) -> BaselineRecord:
        path = self._baseline_path(ref)
        record = load_baseline(path)
        if record is None:
            record = BaselineRecord(
                task=ref.task.name,
                task_hash=ref.task.hash,
                gpu=self.gpu_name,
                torch_version=torch.__version__,
                distribution=audit.distribution,
                eager_ms=r.eager_ms,
                eager_spread=r.eager_spread,
                compile_ms=r.compile_ms,
                compile_spread=r.compile_spread,
                compile_first_call_s=self._first_call_s(ref, r),
                timed_calls=r.timed_calls,
                date=BaselineRecord.now(),
                host_preemptions=r.host_preemptions,
                timing_method=TIMING_METHOD,
                module_mode=ref.module_mode,
                device_wait_ms=r.device_wait_ms,
                timing=r.method,
                eager_by_method={m: t.eager_ms for m, t in r.by_method.items()},
                compile_by_method={m: t.compile_ms for m, t in r.by_method.items()},
                eager_launch_ms=r.eager_launch_ms,
                launch_bound=r.launch_bound,
            )
            if not r.contested:  # a pass slowed by another process's work would stay cached
                save_json(path, record)
        return record.for_method(self.config.timing)

    def _compile_cost_path(self, ref: Reference) -> Path:
        path = self._baseline_path(ref)
        return path.parent / "first_call" / path.name

    def _baseline_path(self, ref: Reference) -> Path:
        key = f"{ref.task.hash}{_suffix(ref.module_mode)}"
        return baseline_path(self.config.cache_dir, key, self.gpu_name, torch.__version__)

    def _first_call_s(self, ref: Reference, r: ProfileResult) -> float:
        """torch.compile's first call as it costs without caches: as `prepare_baselines`
        measured it where it ran first, else as the timing's own compile took it."""
        try:
            return CompileCost.model_validate_json(self._compile_cost_path(ref).read_text()).seconds
        except (OSError, ValueError):
            return r.compile_first_call_s

    def draw(self, ref: Reference, audit: AuditRecord) -> list:
        with self._pool():
            return draw_inputs(ref.program, audit.distribution, secret_seed(), self.device)

    def shared(self, make):
        with self._pool():
            return make()

    def _pool(self):
        """Tensors the candidate receives live in their own memory pool, so the CUDA IPC
        mapping it gets cannot reach reference outputs stored in the same allocator segment."""
        if not hasattr(torch.cuda, "MemPool"):
            return nullcontext()
        if self._mem_pool is None:
            self._mem_pool = torch.cuda.MemPool()
        return torch.cuda.use_mem_pool(self._mem_pool)

    def release_gpu_memory(self) -> None:
        """Hand back what this evaluation's inputs, outputs and temporaries held.

        Without it the allocator keeps the peak of the largest task reserved (KernelBench's
        biggest level-1 problems peak at tens of GB) and the next task, or a second worker on the
        same GPU, runs out. Blocks shared with a candidate that was killed before it let go of
        them stay allocated until this process exits (CUDA IPC's documented behaviour)."""
        if self.device is None:
            return
        self._mem_pool = None  # a fresh pool next time: a private pool is freed only once unused
        with self.gpu_shared():  # freeing remaps device memory: never beside a timing
            torch.cuda.ipc_collect()
            torch.cuda.empty_cache()

    def gpu_shared(self):
        """GPU work other processes' timings must not overlap (see gpu_lock)."""
        return gpu_lock(self.device, exclusive=False)

    def need_gpu(self, what: str) -> None:
        if self.device is None:
            raise UserError(f"{what} needs a CUDA GPU; none is visible on this machine")


def _suffix(module_mode: str) -> str:
    """What a cached record's name adds for its module mode (training mode: nothing)."""
    return "" if module_mode == "train" else f"-{module_mode}"
