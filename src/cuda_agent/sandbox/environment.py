"""The kernel development environment: static guard, build, verify, profile, verdict, reward.

One Environment per process and GPU. The harness process is the trusted side: it holds the
reference model, draws every input from a secret seed, computes reference outputs, times the
baselines and compares (trusted.py). Candidate code runs only in a confined child forked from a
warm server (process/). Each stage ends the evaluation with an outcome (outcome.py) or hands on
to the next; retry.py says when an evaluation is tried again.
"""

from __future__ import annotations

import re
import threading
import time
import uuid

import torch

from cuda_agent.sandbox.admission import (
    available_bytes,
    evaluation_bytes,
    must_wait,
    waited_note,
)
from cuda_agent.sandbox.build.bindings import unregistered_calls
from cuda_agent.sandbox.build.extension import BuildResult, build_extension
from cuda_agent.sandbox.build.pch import ensure_pch
from cuda_agent.sandbox.build.toolchain import Toolchain, find_toolchain
from cuda_agent.sandbox.check.audit import AuditRecord
from cuda_agent.sandbox.check.inputs import nbytes
from cuda_agent.sandbox.check.task_probe import task_program_error
from cuda_agent.sandbox.check.verify import check_outputs
from cuda_agent.sandbox.config import EnvConfig
from cuda_agent.sandbox.guard.findings import judge
from cuda_agent.sandbox.guard.runtime import kernel_names
from cuda_agent.sandbox.guard.static import static_findings
from cuda_agent.sandbox.module_mode import resolve_module_mode
from cuda_agent.sandbox.outcome import Compiled, Correct, Facts, Failure, Head, Outcome, to_verdict
from cuda_agent.sandbox.process.candidate import CandidateFailure, CandidateProcess, discard
from cuda_agent.sandbox.process.messages import Load, LoadSingleFile
from cuda_agent.sandbox.process.spare import SpareCandidate
from cuda_agent.sandbox.process.watch import forkserver_context
from cuda_agent.sandbox.retry import (
    blame_out_of_memory,
    evaluate_again_alone,
    evaluate_alone,
    harness_out_of_memory,
)
from cuda_agent.sandbox.single_file import early as early_build
from cuda_agent.sandbox.single_file.build import ensure_binding_pch
from cuda_agent.sandbox.single_file.evaluate import evaluate_single_file
from cuda_agent.sandbox.single_file.extensions import ExtensionBuilder
from cuda_agent.sandbox.single_file.submission import SingleFileSolution
from cuda_agent.sandbox.timing.baselines import BaselineRecord
from cuda_agent.sandbox.timing.cross_check import contested_note
from cuda_agent.sandbox.timing.gpu_work import start_recording_once
from cuda_agent.sandbox.timing.profile import CandidateRun, TimingJob, profile_candidate
from cuda_agent.sandbox.trusted import TrustedSide
from cuda_agent.sandbox.verdict import Stage, Status, Verdict
from cuda_agent.sandbox.workspace import ENTRY, Solution
from cuda_agent.task import Task

_NOT_RUN = (
    "{} (compile-only: no GPU on this machine); every binding model_new.py calls is registered "
    "and the task's inputs and Model build; correctness and timing need a CUDA GPU"
)
_GPU_ONLY_HEADERS = re.compile(r"(cublas\w*|cudnn\w*|cusparse\w*|cusolver\w*)\.h: No such file")


class Environment:
    """evaluate(task, solution, stage) -> Verdict; one caller at a time (calls are serialized)."""

    def __init__(self, config: EnvConfig | None = None):
        self.config = config or EnvConfig()
        self.has_gpu = torch.cuda.is_available()
        self._lock = threading.Lock()
        self._toolchain: Toolchain | None = None
        self._ctx = forkserver_context() if self.has_gpu else None
        self._device = torch.device("cuda", self.config.device_index) if self.has_gpu else None
        self.gpu_name = torch.cuda.get_device_name(self._device) if self.has_gpu else None
        self._trusted = TrustedSide(self.config, self._device, self.gpu_name)
        self._task_errors: dict[str, str] = {}  # task hash -> its program's error ("" = none)
        self._spare = (
            SpareCandidate(self._new_candidate, self.config.spare_processes)
            if self.has_gpu
            else None
        )
        if self.has_gpu:  # the baselines' GPU trace (0.05 s; the context is needed anyway)
            start_recording_once(self._device)

    def __enter__(self) -> Environment:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self._spare is not None:
            self._spare.close()
        self._trusted.clear()

    @property
    def toolchain(self) -> Toolchain:
        if self._toolchain is None:
            self._toolchain = find_toolchain(self.config.arch)
            # the next `cuda-agent eval` of a single file starts its build from this
            early_build.record(self.config.cache_dir, self.config.arch, self._toolchain)
        return self._toolchain

    def warm_up(self) -> threading.Thread:
        """Build the precompiled torch headers (a workspace's bindings', a single file's
        module's), start the fork server and one candidate process, in the background."""

        def work():
            ensure_pch(self.toolchain, self.config.cache_dir)
            ensure_binding_pch(self.toolchain, self.config.cache_dir)
            if self._ctx is not None:
                from multiprocessing import forkserver

                forkserver.ensure_running()

        if self._spare is not None:
            self._spare.prepare(1)  # a worker that only times baselines never needs more
        thread = threading.Thread(target=work, name="cuda-agent-warm-up", daemon=True)
        thread.start()
        return thread

    # ---- the trusted side's cached records ----

    def audit(self, task: Task, module_mode: str = "train") -> AuditRecord:
        """The null-kernel battery's result for `task` in `module_mode` (cached on disk)."""
        return self._trusted.audit(task, module_mode)

    def baselines(self, task: Task, module_mode: str = "train") -> BaselineRecord:
        """Eager and torch.compile timings of `task` on this GPU (cached on disk)."""
        return self._trusted.baselines(task, module_mode)

    def prepare_baselines(self, task: Task, module_mode: str = "train") -> float | None:
        """The audit and torch.compile's first call, not the timing (see TrustedSide)."""
        return self._trusted.prepare_baselines(task, module_mode)

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
        """The verdict of one evaluation, tried again alone where retry.py says so, or run
        alone from the start where its GPU memory is not free beside the others (admission.py)."""
        with self._lock:

            def attempt(alone: bool) -> Verdict:
                return self._attempt(task, solution, Stage(stage), prebuilt, alone)

            need, available = self._memory_need(task, solution, Stage(stage))
            if not must_wait(need, available):
                return evaluate_again_alone(attempt, self._device)
            verdict, waited = evaluate_alone(attempt, self._device)
            seconds = {**verdict.seconds, "gpu_memory_wait": waited}
            notes = [*verdict.notes, waited_note(need, available, waited)]
            return verdict.model_copy(update={"seconds": seconds, "notes": notes})

    def _memory_need(self, task, solution, stage: Stage) -> tuple[int | None, int]:
        """(the evaluation's GPU memory, what is free for it now); (None, 0) where it runs
        nothing on the GPU or its task has no estimate."""
        if not self.has_gpu or stage == Stage.COMPILE:
            return None, 0
        mode = resolve_module_mode(self.config.module_mode, solution.format)
        try:
            audit = self._trusted.audit(task, mode)
        except torch.cuda.OutOfMemoryError:
            return None, 0  # the attempt meets it again, as the harness's, and is tried alone
        return evaluation_bytes(audit), available_bytes(self._device)

    def _attempt(self, task, solution, stage, prebuilt, alone: bool) -> Verdict:
        try:
            return self._evaluate(task, solution, stage, prebuilt, alone)
        finally:
            self._trusted.release_gpu_memory()

    def _evaluate(self, task, solution, stage, prebuilt, alone: bool) -> Verdict:
        mode = resolve_module_mode(self.config.module_mode, solution.format)
        head = Head(task.name, task.hash, stage, self.gpu_name, mode, rules=self.config.rules)
        if isinstance(solution, SingleFileSolution):
            if self._spare is not None and stage != Stage.COMPILE:
                self._spare.prepare()  # the candidate process starts while the guard reads
            return evaluate_single_file(
                task, solution, stage, head, self.config, lambda: self.toolchain, self.has_gpu,
                lambda builder: self._run(task, solution, None, stage, head, alone, builder),
            )  # fmt: skip
        seconds = head.seconds
        start = time.perf_counter()
        judged = judge(static_findings(solution), self.config.rules)
        head.list_ops(judged.torch_ops)
        seconds["guard"] = time.perf_counter() - start
        if judged.violations:
            message = "the static guard rejected the solution (see violations)"
            return to_verdict(head, Failure(Status.VIOLATION, message, judged.violations), False)
        if self._spare is not None and stage != Stage.COMPILE:
            self._spare.prepare()  # the candidate process starts while the extension builds
        start = time.perf_counter()
        build = prebuilt or self.build(task, solution)
        # a build made beforehand (bench builds on a pool of its own) reports its own time
        seconds["build"] = (
            build.seconds.get("total", 0.0) if prebuilt else (time.perf_counter() - start)
        )
        if not build.ok and not self.has_gpu and _GPU_ONLY_HEADERS.search(build.log):
            message = (
                "compile-only check incomplete: the bindings include cuBLAS/cuDNN "
                "headers, which this machine without a GPU toolkit lacks; correctness and timing "
                f"need a CUDA GPU\n{build.log}"
            )
            return to_verdict(head, Failure(Status.NO_GPU, message), False)
        if not build.ok:
            return to_verdict(head, Failure(Status.COMPILE_ERROR, build.log), False)
        built = (
            f"compiled {len(build.compiled)} file(s), reused {len(build.reused)} from cache "
            f"in {seconds['build']:.1f} s"
        )
        if not self.has_gpu:
            found = self._without_gpu(task, solution, built, head)
            if found is not None or stage != Stage.COMPILE:
                return found or to_verdict(
                    head, Failure(Status.NO_GPU, _NOT_RUN.format(built)), True
                )
        if stage == Stage.COMPILE:
            return to_verdict(head, Compiled(f"{built}; verify checks correctness"), True)
        if not build.linked or build.so_path is None:
            message = (
                "the extension was compiled but not linked: torch's CUDA libraries were not found"
            )
            return to_verdict(head, Failure(Status.COMPILE_ERROR, message), False)
        return self._run(task, solution, build, stage, head, alone)

    def _without_gpu(self, task, solution, built: str, head: Head) -> Verdict | None:
        """What can be known without running the candidate: every binding model_new.py calls
        is registered, and the task's own functions run. None when nothing was found."""
        missing = unregistered_calls(solution)
        if missing:
            message = (
                f"{built}, but model_new.py calls bindings no kernel registers: "
                f"{'; '.join(missing)}; register each with REGISTER_BINDING in a "
                "kernels/*_binding.cpp, or call one that is registered"
            )
            return to_verdict(head, Failure(Status.RUNTIME_ERROR, message), True)
        if task.hash not in self._task_errors:
            start = time.perf_counter()
            self._task_errors[task.hash] = task_program_error(task) or ""
            head.seconds["task_check"] = time.perf_counter() - start
        if self._task_errors[task.hash]:
            message = (
                f"{built}, but the task's own program fails, not the solution: "
                f"{self._task_errors[task.hash]}; fix the task's model.py"
            )
            return to_verdict(head, Failure(Status.INVALID, message), True)
        return None

    def _run(
        self, task, solution, build, stage, head: Head, alone: bool,
        builder: ExtensionBuilder | None = None,
    ) -> Verdict:  # fmt: skip
        """Load, verify and (at stage profile) time the candidate in a process of its own: a
        workspace's built extension, or a single file whose extensions `builder` builds when
        its process asks."""
        seconds, trusted, config = head.seconds, self._trusted, self.config
        start = time.perf_counter()
        try:  # the audit runs the reference on the task's inputs beside other evaluations
            ref = trusted.reference(task, head.module_mode)
            audit = trusted.audit(task, head.module_mode)
        except torch.cuda.OutOfMemoryError as err:
            return to_verdict(head, harness_out_of_memory(err), True)
        seconds["reference"] = time.perf_counter() - start
        facts = Facts(audit.degenerate, audit.distribution)
        cand = None
        try:
            start = time.perf_counter()
            cand = self._spare.take()
            workdir = cand.workdir
            (workdir / ENTRY).write_text(solution.files[ENTRY])
            layers = [k for k, on in cand.layers.items() if on]
            facts = Facts(audit.degenerate, audit.distribution, ("static", "dispatch", *layers))
            seconds["child_start"] = time.perf_counter() - start  # the wait for a spare
            seconds.update({f"process_{k}": v for k, v in cand.startup_s.items()})  # its start
            with trusted.gpu_shared():  # the candidate's GPU work never overlaps a timing
                state_dict = trusted.shared(ref.state_for_candidate)
                eval_mode = head.module_mode == "eval"
                if builder is None:
                    entry = str(workdir / ENTRY)
                    loaded = cand.request(
                        Load(str(build.so_path), entry, ref.init_inputs, state_dict, eval_mode,
                             ref.seed)
                    )  # fmt: skip
                    own = kernel_names(solution.files)
                else:  # the kernels of every extension built so far, lazily built ones too
                    cand.on_extension, own = builder, builder.kernels
                    entry_point = solution.entry_point
                    entry = str(workdir / ENTRY)
                    loaded = cand.request(
                        LoadSingleFile(entry, entry_point, ref.init_inputs, state_dict, eval_mode,
                                       ref.seed)
                    )  # fmt: skip
                head.notes.extend(loaded.notes)
                seconds["child_load"] = time.perf_counter() - start - seconds["child_start"]
                first = trusted.draw(ref, audit)
                first_ref = ref(*first)
                poison = 2 * nbytes(first_ref)
                keep = config.warmup_calls if nbytes(first) + nbytes(first_ref) < 2**30 else 1

                def verify_pairs():
                    yield first, first_ref
                    for _ in range(config.verify_sets - 1):
                        inputs = trusted.draw(ref, audit)
                        yield inputs, ref(*inputs)
                        del inputs  # not held while the next set is drawn

                mark = time.perf_counter()
                failure, kept = check_outputs(
                    cand, verify_pairs(), config.verify_sets, poison, own, config, "input set",
                    head, keep,
                )  # fmt: skip
            vsets, refs = [p[0] for p in kept], [p[1] for p in kept]
            seconds["verify_calls"] = time.perf_counter() - mark
            seconds["verify"] = time.perf_counter() - start
            if failure is not None:
                return to_verdict(head, failure, True, facts)
            if stage == Stage.VERIFY:
                message = (
                    f"correct on {config.verify_sets} input sets "
                    f"({audit.distribution} inputs); profile times it"
                )
                return to_verdict(head, Correct(message), True, facts)
            start = time.perf_counter()
            job = TimingJob(
                ref,
                lambda: trusted.draw(ref, audit),
                config,
                self._device,
                cached=trusted.compile_baseline(ref),
                candidate=CandidateRun(cand, vsets, refs, poison, own),
            )
            result = profile_candidate(job)
            seconds["timing_lock_wait"] = result.lock_wait_s
            with trusted.gpu_shared():
                post = trusted.draw(ref, audit)
                failure, _ = check_outputs(
                    cand, [(post, ref(*post))], 1, poison, own, config, "input set after timing",
                    head,
                )  # fmt: skip
            seconds["profile"] = time.perf_counter() - start
            if failure is None and result.failure is not None:
                failure = result.failure
            if failure is not None:
                return to_verdict(head, failure, True, facts)
            trusted.store_baseline(ref, audit, result)
            if result.contested:
                head.notes.append(contested_note(result.device_wait_ms))
            return to_verdict(head, _timed(result, audit.distribution), True, facts)
        except torch.cuda.OutOfMemoryError as err:
            return to_verdict(head, harness_out_of_memory(err), True, facts)
        except CandidateFailure as err:
            outcome: Outcome = blame_out_of_memory(err.failure, err.out_of_memory, alone)
            return to_verdict(head, outcome, err.compiled, facts)
        finally:
            if cand is not None:
                discard(cand)
            self._spare.prepare()  # the next round's process warms up while the caller thinks

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


def _timed(r, distribution: str) -> Correct:
    """The profile stage's outcome of a correct candidate timed as `r` says."""
    return Correct(
        f"correct on every checked input set; timed {r.timed_calls} calls on "
        f"a fresh input set each ({distribution} inputs"
        + (
            f"; {r.distinct_sets} set(s) in GPU memory, refilled between calls"
            if r.distinct_sets < r.timed_calls
            else ""
        )
        + ")",
        timing=r,
    )
