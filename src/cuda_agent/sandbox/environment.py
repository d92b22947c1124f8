"""The kernel development environment: static guard, build, verify, profile, verdict, reward.

One Environment per process and GPU. The harness process is the trusted side: it holds the
reference model, draws every input from a secret seed, computes reference outputs, times the
baselines and compares. Candidate code runs only in a confined child forked from a warm server.
"""

from __future__ import annotations

import re
import threading
import time
import uuid
from collections import OrderedDict
from contextlib import nullcontext
from functools import partial
from pathlib import Path

import torch

from cuda_agent.errors import UserError
from cuda_agent.sandbox.build.extension import BuildResult, build_extension, ensure_pch
from cuda_agent.sandbox.build.toolchain import Toolchain, find_toolchain
from cuda_agent.sandbox.check.audit import AuditRecord, load_audit, run_battery
from cuda_agent.sandbox.check.compare import compare
from cuda_agent.sandbox.check.inputs import draw_inputs, nbytes, secret_seed
from cuda_agent.sandbox.check.reference import Reference
from cuda_agent.sandbox.config import EnvConfig
from cuda_agent.sandbox.guard.runtime import judge_trace, kernel_names
from cuda_agent.sandbox.guard.static import check_static
from cuda_agent.sandbox.process.candidate import (
    CandidateFailure,
    CandidateProcess,
    SpareCandidate,
    discard,
)
from cuda_agent.sandbox.process.messages import Load, Verify
from cuda_agent.sandbox.process.watch import forkserver_context
from cuda_agent.sandbox.reward import milestone_reward
from cuda_agent.sandbox.timing.baselines import (
    TIMING_METHOD,
    BaselineRecord,
    CompileCost,
    baseline_path,
    load_baseline,
    save_json,
)
from cuda_agent.sandbox.timing.gpu_lock import gpu_lock
from cuda_agent.sandbox.timing.gpu_work import start_recording_once
from cuda_agent.sandbox.timing.profile import ProfileResult, profile_candidate
from cuda_agent.sandbox.verdict import Stage, Status, Verdict
from cuda_agent.sandbox.workspace import ENTRY, Solution
from cuda_agent.task import Task

_REFERENCES_KEPT = 4
_GPU_ONLY_HEADERS = re.compile(r"(cublas\w*|cudnn\w*|cusparse\w*|cusolver\w*)\.h: No such file")


class Environment:
    """evaluate(task, solution, stage) -> Verdict; one caller at a time (calls are serialized)."""

    def __init__(self, config: EnvConfig | None = None):
        self.config = config or EnvConfig()
        self.has_gpu = torch.cuda.is_available()
        self._lock = threading.Lock()
        self._alone = False  # evaluating again holding the GPU's lock exclusively (see evaluate)
        self._toolchain: Toolchain | None = None
        self._references: OrderedDict[str, Reference] = OrderedDict()
        self._ctx = forkserver_context() if self.has_gpu else None
        self._device = torch.device("cuda", self.config.device_index) if self.has_gpu else None
        self.gpu_name = torch.cuda.get_device_name(self._device) if self.has_gpu else None
        self._spare = (
            SpareCandidate(self._new_candidate, self.config.spare_processes)
            if self.has_gpu
            else None
        )
        self._mem_pool = None  # see _pool
        if self.has_gpu:  # the baselines' GPU trace (0.05 s; the context is needed anyway)
            start_recording_once(self._device)

    def __enter__(self) -> Environment:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self._spare is not None:
            self._spare.close()
        self._references.clear()

    @property
    def toolchain(self) -> Toolchain:
        if self._toolchain is None:
            self._toolchain = find_toolchain(self.config.arch)
        return self._toolchain

    def warm_up(self) -> threading.Thread:
        """Build the precompiled torch header, start the fork server and one candidate process,
        in the background."""

        def work():
            ensure_pch(self.toolchain, self.config.cache_dir)
            if self._ctx is not None:
                from multiprocessing import forkserver

                forkserver.ensure_running()

        if self._spare is not None:
            self._spare.prepare(1)  # a worker that only times baselines never needs more
        thread = threading.Thread(target=work, name="cuda-agent-warm-up", daemon=True)
        thread.start()
        return thread

    # ---- the stages ----

    def build(self, task: Task, solution: Solution) -> BuildResult:
        """Compile (and link where torch's CUDA libraries exist); cached per source content."""
        return build_extension(
            solution,
            self.toolchain,
            self.config.cache_dir,
            link=True,
            jobs=self.config.build_jobs,
            timeout_s=self.config.build_timeout_s,
        )

    def evaluate(
        self,
        task: Task,
        solution: Solution,
        stage: Stage = Stage.PROFILE,
        prebuilt: BuildResult | None = None,
    ) -> Verdict:
        """The verdict of one evaluation. When the harness itself runs out of GPU memory (other
        evaluations on the GPU hold theirs), or the candidate's code does while others share
        the GPU, it tries once more holding the GPU's lock exclusively: no other process then
        holds a set of timing inputs or starts GPU work. Only on that try is the candidate's
        own out-of-memory its runtime error (on the H200, a KernelBench softmax with 6 GB
        outputs ran out beside two other evaluations and was scored -1)."""
        with self._lock:
            verdict = self._attempt(task, solution, Stage(stage), prebuilt)
            if verdict.status == Status.HARNESS_ERROR:
                with gpu_lock(self._device, exclusive=True):
                    self._alone = True
                    try:
                        verdict = self._attempt(task, solution, Stage(stage), prebuilt)
                    finally:
                        self._alone = False
            return verdict

    def _attempt(self, task, solution, stage, prebuilt) -> Verdict:
        try:
            return self._evaluate(task, solution, stage, prebuilt)
        finally:
            self._release_gpu_memory()

    def _evaluate(self, task, solution, stage, prebuilt) -> Verdict:
        seconds: dict[str, float] = {}
        base = {
            "task": task.name,
            "task_hash": task.hash,
            "stage": stage,
            "gpu": self.gpu_name,
            "seconds": seconds,
        }
        start = time.perf_counter()
        violations = check_static(solution)
        seconds["guard"] = time.perf_counter() - start
        if violations:
            return Verdict(
                **base,
                status=Status.VIOLATION,
                compiled=False,
                correct=False,
                violations=violations,
                message="the static guard rejected the solution (see violations)",
            )
        if self._spare is not None and stage != Stage.COMPILE:
            self._spare.prepare()  # the candidate process starts while the extension builds
        start = time.perf_counter()
        build = prebuilt or self.build(task, solution)
        seconds["build"] = time.perf_counter() - start
        if not build.ok and not self.has_gpu and _GPU_ONLY_HEADERS.search(build.log):
            return Verdict(
                **base,
                status=Status.NO_GPU,
                compiled=False,
                correct=False,
                message="compile-only check incomplete: the bindings include cuBLAS/cuDNN "
                "headers, which this machine without a GPU toolkit lacks; correctness and timing "
                f"need a CUDA GPU\n{build.log}",
            )
        if not build.ok:
            return Verdict(
                **base,
                status=Status.COMPILE_ERROR,
                compiled=False,
                correct=False,
                message=build.log,
            )
        built = (
            f"compiled {len(build.compiled)} file(s), reused {len(build.reused)} from cache "
            f"in {seconds['build']:.1f} s"
        )
        if stage == Stage.COMPILE:
            return Verdict(
                **base,
                status=Status.OK,
                compiled=True,
                correct=False,
                message=f"{built}; verify checks correctness",
            )
        if not self.has_gpu:
            return Verdict(
                **base,
                status=Status.NO_GPU,
                compiled=True,
                correct=False,
                message=f"{built} (compile-only: no GPU on this machine); correctness "
                "and timing need a CUDA GPU",
            )
        if not build.linked or build.so_path is None:
            return Verdict(
                **base,
                status=Status.COMPILE_ERROR,
                compiled=False,
                correct=False,
                message="the extension was compiled but not linked: torch's CUDA "
                "libraries were not found",
            )
        return self._run(task, solution, build, stage, base)

    def _run(self, task, solution, build, stage, base) -> Verdict:
        seconds = base["seconds"]
        start = time.perf_counter()
        ref = self._reference(task)
        audit = self.audit(task)
        seconds["reference"] = time.perf_counter() - start
        facts = {"degenerate": audit.degenerate, "input_distribution": audit.distribution}
        cand = None
        try:
            start = time.perf_counter()
            cand = self._spare.take()
            workdir = cand.workdir
            (workdir / ENTRY).write_text(solution.files[ENTRY])
            facts["checks"] = ["static", "dispatch"] + [k for k, on in cand.layers.items() if on]
            seconds["child_start"] = time.perf_counter() - start  # the wait for a spare
            seconds.update({f"process_{k}": v for k, v in cand.startup_s.items()})  # its start
            with self._gpu_shared():  # the candidate's GPU work never overlaps a timing
                cand.request(
                    Load(
                        so_path=str(build.so_path),
                        entry_path=str(workdir / ENTRY),
                        init_inputs=ref.init_inputs,
                        state_dict=self._shared(ref.state_for_candidate),
                    )
                )
                seconds["child_load"] = time.perf_counter() - start - seconds["child_start"]
                own = kernel_names(solution.files)
                first = self._draw(ref, audit)
                first_ref = ref(*first)
                poison = 2 * nbytes(first_ref)
                keep = self.config.warmup_calls if nbytes(first) + nbytes(first_ref) < 2**30 else 1

                def verify_pairs():
                    yield first, first_ref
                    for _ in range(self.config.verify_sets - 1):
                        inputs = self._draw(ref, audit)
                        yield inputs, ref(*inputs)

                mark = time.perf_counter()
                failure, kept = check_outputs(
                    cand,
                    verify_pairs(),
                    self.config.verify_sets,
                    poison,
                    own,
                    self.config,
                    "input set",
                    keep,
                )
            vsets, refs = [p[0] for p in kept], [p[1] for p in kept]
            seconds["verify_calls"] = time.perf_counter() - mark
            seconds["verify"] = time.perf_counter() - start
            if failure is not None:
                return Verdict(**base, **facts, compiled=True, correct=False, **failure)
            if stage == Stage.VERIFY:
                return Verdict(
                    **base,
                    **facts,
                    status=Status.OK,
                    compiled=True,
                    correct=True,
                    reward=milestone_reward(True, None, None),
                    message=f"correct on {self.config.verify_sets} input sets "
                    f"({audit.distribution} inputs); profile times it",
                )
            start = time.perf_counter()
            result = profile_candidate(
                cand,
                ref,
                lambda: self._draw(ref, audit),
                vsets,
                refs,
                poison,
                self.config,
                self._compile_baseline(ref),
                self._device,
                own_kernels=own,
            )
            seconds["timing_lock_wait"] = result.lock_wait_s
            with self._gpu_shared():
                post = self._draw(ref, audit)
                failure, _ = check_outputs(
                    cand,
                    [(post, ref(*post))],
                    1,
                    poison,
                    own,
                    self.config,
                    "input set after timing",
                )
            seconds["profile"] = time.perf_counter() - start
            if failure is None and result.failure is not None:
                failure = result.failure
            if failure is not None:
                return Verdict(**base, **facts, compiled=True, correct=False, **failure)
            self._store_baseline(ref, audit, result)
            return self._timed_verdict(base, facts, result)
        except torch.cuda.OutOfMemoryError as err:
            return Verdict(
                **base,
                **facts,
                status=Status.HARNESS_ERROR,
                compiled=True,
                correct=False,
                message=f"the harness ran out of GPU memory holding this task's inputs and "
                f"reference outputs (not a verdict on the candidate; evaluate it again with "
                f"fewer evaluations sharing the GPU): {str(err).splitlines()[0]}",
            )
        except CandidateFailure as err:
            return self._candidate_failure(base, facts, err)
        finally:
            if cand is not None:
                discard(cand)
            self._spare.prepare()  # the next round's process warms up while the caller thinks

    def _candidate_failure(self, base: dict, facts: dict, err: CandidateFailure) -> Verdict:
        status, message = err.status, err.message
        if err.out_of_memory and status == Status.RUNTIME_ERROR:
            if self._alone:
                message = f"ran out of GPU memory with no other evaluation running: {message}"
            else:
                status = Status.HARNESS_ERROR
                message = (
                    "the candidate ran out of GPU memory while other evaluations shared the GPU "
                    f"(not yet a verdict: it is tried again holding the GPU alone): {message}"
                )
        violations = [message.splitlines()[0]] if status == Status.VIOLATION else []
        return Verdict(
            **base,
            **facts,
            status=status,
            compiled=True,
            correct=False,
            violations=violations,
            message=message,
        )

    def _new_candidate(self) -> CandidateProcess:
        workdir = self.config.cache_dir / "runs" / uuid.uuid4().hex
        workdir.mkdir(parents=True)
        return CandidateProcess(
            self._ctx,
            workdir,
            self.config.device_index,
            self.config.child_timeout_s,
            self.config.child_memory_mb,
        )

    def _timed_verdict(self, base, facts, r: ProfileResult) -> Verdict:
        vs_eager = r.eager_ms / r.candidate_ms
        vs_compile = r.compile_ms / r.candidate_ms
        reward = milestone_reward(True, vs_eager, vs_compile)
        return Verdict(
            **base,
            **facts,
            status=Status.OK,
            compiled=True,
            correct=True,
            eager_ms=r.eager_ms,
            compile_ms=r.compile_ms,
            candidate_ms=r.candidate_ms,
            candidate_spread=r.candidate_spread,
            speedup_vs_eager=vs_eager,
            speedup_vs_compile=vs_compile,
            reward=reward,
            max_abs_error=r.max_abs_error,
            timing_checks=r.timing_checks or {},
            message=f"correct on every checked input set; timed {r.timed_calls} calls on "
            f"a fresh input set each ({facts['input_distribution']} inputs"
            + (
                f"; {r.distinct_sets} set(s) in GPU memory, refilled between calls"
                if r.distinct_sets < r.timed_calls
                else ""
            )
            + ")",
        )

    # ---- trusted state: references, audits, baselines ----

    def _reference(self, task: Task) -> Reference:
        ref = self._references.pop(task.hash, None)
        if ref is None:
            with self._gpu_shared():  # copies weights to the GPU: never beside a timing
                ref = Reference(task, self._device)
        self._references[task.hash] = ref
        while len(self._references) > _REFERENCES_KEPT:
            self._references.popitem(last=False)
        return ref

    def audit(self, task: Task) -> AuditRecord:
        """The null-kernel battery's result for `task` (cached on disk)."""
        self._need_gpu("the null-kernel audit")
        cfg = self.config
        path = (
            cfg.cache_dir / "audit" / f"{task.hash}-{torch.__version__}-{cfg.atol}-{cfg.rtol}.json"
        )
        record = load_audit(path)
        if record is None:
            with self._gpu_shared():
                record = run_battery(self._reference(task), self._device, cfg.atol, cfg.rtol)
                torch.cuda.empty_cache()  # its sets and outputs: not held while others need room
            save_json(path, record)
        return record

    def baselines(self, task: Task) -> BaselineRecord:
        """Eager and torch.compile timings of `task` on this GPU (cached on disk)."""
        self._need_gpu("timing baselines")
        ref, audit = self._reference(task), self.audit(task)
        cached = self._compile_baseline(ref)
        if cached is not None:
            return cached
        draw = lambda: self._draw(ref, audit)  # noqa: E731
        time_it = partial(
            profile_candidate, None, ref, draw, [], [], 0, self.config, None, self._device,
            release=self._release_gpu_memory,
        )  # fmt: skip
        try:
            return self._store_baseline(ref, audit, self._alone_if_short(time_it))
        finally:
            self._release_gpu_memory()

    def prepare_baselines(self, task: Task) -> float | None:
        """All of `baselines` but the timing: the null-kernel audit and torch.compile's first
        call; its seconds, or None when the baseline is cached already.

        A sweep runs this over every task first, many workers side by side, and times after:
        the first call (8–22 s for a level-3 model) holds the GPU's lock shared, so a timer waits
        for every first call in flight, and the other workers for the timer. Once compiled, a
        later compile of the same graph in any process is a cache hit (inductor's graphs,
        triton's kernels and their tuned configurations), seconds at most; the cold cost is
        kept on disk for the baseline record."""
        self._need_gpu("timing baselines")
        ref = self._reference(task)
        if self._compile_baseline(ref) is not None:
            return None
        audit = self.audit(task)

        def first_call():
            with self._gpu_shared():
                try:
                    return ref.ensure_compiled(self._draw(ref, audit))
                finally:
                    self._release_gpu_memory()  # inside the section: see _alone_if_short

        seconds = self._alone_if_short(first_call)
        path = self._compile_cost_path(ref)
        if not path.exists():
            save_json(path, CompileCost(seconds=seconds))
        return seconds

    def _alone_if_short(self, work):
        """`work()`; when it runs out of GPU memory, again holding the GPU's lock exclusively.

        Workers sharing a GPU each free what a section cached before leaving it, so a process
        holding the lock exclusively has the GPU's memory to itself but for weights and compiled
        graphs. On the H200, eight workers compiling KernelBench's level-1 problems side by side
        (inputs up to 8 GB, inductor's copies of them beside) ran out 42 times in 77."""
        try:
            return work()
        except torch.cuda.OutOfMemoryError:
            self._release_gpu_memory()
            with gpu_lock(self._device, exclusive=True):
                try:
                    return work()
                finally:
                    self._release_gpu_memory()

    def _compile_cost_path(self, ref: Reference) -> Path:
        path = self._baseline_path(ref)
        return path.parent / "first_call" / path.name

    def _baseline_path(self, ref: Reference) -> Path:
        return baseline_path(self.config.cache_dir, ref.task.hash, self.gpu_name, torch.__version__)

    def _compile_baseline(self, ref: Reference) -> BaselineRecord | None:
        return load_baseline(self._baseline_path(ref))

    def _store_baseline(self, ref, audit, r: ProfileResult) -> BaselineRecord:
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
            )
            save_json(path, record)
        return record

    def _first_call_s(self, ref: Reference, r: ProfileResult) -> float:
        """torch.compile's first call as it costs without caches: as `prepare_baselines`
        measured it where it ran first, else as the timing's own compile took it."""
        try:
            return CompileCost.model_validate_json(self._compile_cost_path(ref).read_text()).seconds
        except (OSError, ValueError):
            return r.compile_first_call_s

    def _draw(self, ref: Reference, audit: AuditRecord) -> list:
        with self._pool():
            return draw_inputs(ref.program, audit.distribution, secret_seed(), self._device)

    def _shared(self, make):
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

    def _release_gpu_memory(self) -> None:
        """Hand back what this evaluation's inputs, outputs and temporaries held.

        Without it the allocator keeps the peak of the largest task reserved (KernelBench's
        biggest level-1 problems peak at tens of GB) and the next task, or a second worker on the
        same GPU, runs out. Blocks shared with a candidate that was killed before it let go of
        them stay allocated until this process exits (CUDA IPC's documented behaviour)."""
        if not self.has_gpu:
            return
        self._mem_pool = None  # a fresh pool next time: a private pool is freed only once unused
        with self._gpu_shared():  # freeing remaps device memory: never beside a timing
            torch.cuda.ipc_collect()
            torch.cuda.empty_cache()

    def _gpu_shared(self):
        """GPU work other processes' timings must not overlap (see gpu_lock)."""
        return gpu_lock(self._device, exclusive=False)

    def _need_gpu(self, what: str) -> None:
        if not self.has_gpu:
            raise UserError(f"{what} needs a CUDA GPU; none is visible on this machine")


def check_outputs(cand, pairs, count, poison, own_kernels, config, label, keep=1):
    """Run the candidate on each (inputs, reference output) pair under the runtime guard, one set
    at a time so that large tasks hold one set's outputs at once; (failure fields or None, the
    first `keep` pairs)."""
    kept = []
    for i, (inputs, expected) in enumerate(pairs):
        reply = cand.request(Verify([inputs], poison_bytes=poison, profile_at=0 if i == 0 else -1))
        violations = sorted({v for t in reply.traces for v in judge_trace(t, own_kernels)})
        if violations:
            return {
                "status": Status.VIOLATION,
                "violations": violations,
                "message": "the runtime guard caught PyTorch doing the work (see violations)",
            }, kept
        result = compare(expected, reply.outputs[0], config.atol, config.rtol)
        del reply
        if not result.ok:
            return {
                "status": Status.MISMATCH,
                "max_abs_error": result.max_abs_error,
                "message": f"{label} {i + 1} of {count}: {result.reason}",
            }, kept
        if len(kept) < keep:
            kept.append((inputs, expected))
    return None, kept
