"""The parent's answers to a single-file submission's builds, one evaluation's worth.

Each ExtensionCall from the candidate's process is checked (types, the C++ guard, the flags),
built by the harness (build.py) and answered with the module's path; a Triton file's C modules
and ptxas steps (TritonLauncher, TritonCubin) are built by triton_build.py. A refusal or a
compile error raises ExtensionRefused, which ends the evaluation with that verdict: the
submission's process is never told, so it cannot catch the refusal and fall back to something
else.
"""

from __future__ import annotations

import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from cuda_agent.sandbox.build.toolchain import Toolchain
from cuda_agent.sandbox.guard.findings import judge
from cuda_agent.sandbox.guard.profile import DEFAULT_RULES, RulesProfile
from cuda_agent.sandbox.guard.runtime import kernel_names
from cuda_agent.sandbox.outcome import Failure
from cuda_agent.sandbox.process.candidate import CandidateFailure
from cuda_agent.sandbox.process.messages import (
    BuildAnswer,
    BuildRequest,
    ExtensionBuilt,
    ExtensionCall,
    TritonCubin,
    TritonCubinBuilt,
    TritonLauncher,
    TritonLauncherBuilt,
)
from cuda_agent.sandbox.single_file.build import (
    MAX_CALLS,
    ExtensionBuild,
    Sources,
    build_call,
    lay_out,
)
from cuda_agent.sandbox.single_file.flags import Flags, call_flags
from cuda_agent.sandbox.single_file.guard import call_findings
from cuda_agent.sandbox.single_file.triton_build import (
    TritonBuildError,
    build_launcher,
    entry_names,
    run_ptxas,
    triton_tools,
)
from cuda_agent.sandbox.verdict import Status, TorchOp
from cuda_agent.sandbox.violation import Check, Rule, Violation


class ExtensionRefused(CandidateFailure):
    """An extension build refused by the guard or failed by the compiler: the evaluation ends
    with `failure`, the extension not compiled."""

    compiled = False

    def __init__(self, failure: Failure):
        super().__init__(failure.status, failure.message)
        self.failure = failure


class ExtensionBuilder:
    """Callable on each ExtensionCall of one evaluation; what it built is kept for the verdict:
    the kernels the extensions define (the runtime guard looks for them), notes (architecture
    flags replaced), the PyTorch compute the rules profile allowed in their sources, the build's
    seconds and the calls seen. `ahead` starts building calls read from the file's text before
    its process asks (ahead.py); `finish` waits for those."""

    def __init__(
        self,
        toolchain: Toolchain,
        cache_dir: Path,
        timeout_s: float,
        notes: list[str],
        rules: RulesProfile = DEFAULT_RULES,
        torch_ops: list[TorchOp] | None = None,
    ):
        self.toolchain = toolchain
        self.cache_dir = Path(cache_dir)
        self.timeout_s = timeout_s
        self.kernels: set[str] = set()
        self.notes = notes  # the verdict's: appended to as calls come
        self.rules = rules
        self.torch_ops = torch_ops if torch_ops is not None else []  # the verdict's, as notes
        self.calls: list[str] = []
        self.compiled: list[str] = []
        self.reused: list[str] = []
        self.narrowed: list[str] = []
        self.built_ahead: list[str] = []
        self.triton_kernels: list[str] = []  # entry names, in the order ptxas built them
        self.triton_run = 0  # Triton builds run for this evaluation
        self.triton_cached = 0  # and found in the cache
        self.seconds = 0.0
        self._ahead: dict[ExtensionCall, Future] = {}
        self._pool: ThreadPoolExecutor | None = None

    def ahead(self, calls: list[ExtensionCall]) -> None:
        """Start building `calls` in the background (one at a time, each call's units side by
        side); a call the guard refuses is not built."""
        for call in calls[:MAX_CALLS]:
            if call in self._ahead:
                continue
            if self._pool is None:
                self._pool = ThreadPoolExecutor(1, thread_name_prefix="cuda-agent-build-ahead")
            self._ahead[call] = self._pool.submit(self._build_ahead, call)

    def finish(self) -> None:
        """Wait for the builds started ahead (a build never runs on beside the next evaluation's
        timing)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)

    def _build_ahead(self, call: ExtensionCall) -> ExtensionBuild | None:
        try:
            _, flags, sources, _ = self._checked(call)
        except ExtensionRefused:
            return None
        return build_call(sources, flags, self.toolchain, self.cache_dir, self.timeout_s)

    def __call__(self, call: BuildRequest) -> BuildAnswer:
        if isinstance(call, TritonLauncher | TritonCubin):
            return self._triton(call)
        _check_types(call)
        if len(self.calls) >= MAX_CALLS:
            raise ExtensionRefused(
                Failure(Status.INVALID, f"asks for more than {MAX_CALLS} distinct extensions")
            )
        label, flags, sources, listed = self._checked(call)
        self.calls.append(label)
        self.notes += [f"{label}: {n}" for n in flags.notes if n not in self.notes]
        self.torch_ops += [o for o in listed if o not in self.torch_ops]
        future = self._ahead.get(call)
        result = future.result() if future is not None else None
        if result is None:
            result = build_call(sources, flags, self.toolchain, self.cache_dir, self.timeout_s)
        else:
            self.built_ahead.append(label)
        self.seconds += result.seconds
        self.compiled += [f"{call.name}/{n}" for n in result.compiled]
        self.reused += [f"{call.name}/{n}" for n in result.reused]
        self.narrowed += [f"{call.name}/{n}" for n in result.narrowed]
        if not result.ok:
            raise ExtensionRefused(Failure(Status.COMPILE_ERROR, f"{label}: {result.log}"))
        self.kernels |= kernel_names({**sources.headers, **sources.cuda})
        path = str(result.so_path) if result.so_path is not None else None
        return ExtensionBuilt(so_path=path, module_name=result.module_name)

    def _triton(self, call: TritonLauncher | TritonCubin) -> BuildAnswer:
        """A Triton C module or ptxas step, checked and run by the harness (triton_build.py)."""
        _check_triton_types(call)
        tools = triton_tools()
        if tools is None:
            raise ExtensionRefused(
                Failure(
                    Status.HARNESS_ERROR, "Triton asked for a build, but the harness has no Triton"
                )
            )
        start = time.perf_counter()
        try:
            if isinstance(call, TritonLauncher):
                so, ran = build_launcher(call, tools, self.cache_dir, self.timeout_s)
                answer: BuildAnswer = TritonLauncherBuilt(so_path=str(so))
            else:
                cubin, ran = run_ptxas(call, tools, self.cache_dir, self.timeout_s)
                names = entry_names(call.ptx)
                self.kernels |= names
                self.triton_kernels += sorted(n for n in names if n not in self.triton_kernels)
                answer = TritonCubinBuilt(cubin=cubin)
        except TritonBuildError as err:
            raise ExtensionRefused(err.failure) from None
        finally:
            self.seconds += time.perf_counter() - start
        if ran:
            self.triton_run += 1
        else:
            self.triton_cached += 1
        return answer

    def _checked(self, call: ExtensionCall) -> tuple[str, Flags, Sources, tuple[TorchOp, ...]]:
        """(label, flags, sources, the torch ops the rules allowed) of a call the guard
        accepts; raises ExtensionRefused."""
        label = f"{call.api}({call.name!r})"
        flags = call_flags(call, self.toolchain.arch)
        judged = judge(call_findings(call), self.rules)
        violations = list(judged.violations) + [
            Violation(
                rule=Rule.BUILD_FLAG,
                check=Check.STATIC_GUARD,
                message=f"{label} passes {f}, which the harness does not allow (it could run or "
                "link code the guard never read); use optimisation flags and -D macros only",
            )
            for f in flags.refused
        ]
        if violations:
            message = "the static guard rejected an extension's sources (see violations)"
            raise ExtensionRefused(Failure(Status.VIOLATION, message, tuple(violations)))
        try:
            return label, flags, lay_out(call), judged.torch_ops
        except KeyError as err:
            raise ExtensionRefused(
                Failure(Status.INVALID, f"{label}: source {err} was not written")
            ) from None

    def summary(self) -> str:
        narrowed = ", ".join(self.narrowed)
        narrowed = f"; against the narrow torch prelude: {narrowed}" if narrowed else ""
        ahead = (
            f"; {len(self.built_ahead)} read from the file's text and built while its process "
            "started"
            if self.built_ahead
            else ""
        )
        triton = f"; {self.triton_note()}" if self.triton_kernels else ""
        return (
            f"built {len(self.calls)} extension(s) ({', '.join(self.calls) or 'none'}): compiled "
            f"{len(self.compiled)} file(s), reused {len(self.reused)} from cache "
            f"in {self.seconds:.1f} s{narrowed}{ahead}{triton}"
        )

    def triton_note(self) -> str | None:
        """What Triton compiled through the harness, or None where it compiled nothing."""
        if not self.triton_kernels:
            return None
        return (
            f"Triton kernel(s) {', '.join(self.triton_kernels)} (ptxas and Triton's C modules "
            f"by the harness: {self.triton_run} run, {self.triton_cached} from cache)"
        )


def _check_types(call: ExtensionCall) -> None:
    """The message came from the candidate's process: every field must be what it says."""
    strings = (
        call.cpp_sources, call.cuda_sources, call.extra_cflags, call.extra_cuda_cflags,
        call.extra_ldflags, call.extra_include_paths,
    )  # fmt: skip
    pairs = (call.functions, call.files)
    ok = (
        isinstance(call, ExtensionCall)
        and call.api in ("load_inline", "load")
        and isinstance(call.name, str)
        and all(isinstance(t, tuple) and all(isinstance(s, str) for s in t) for t in strings)
        and all(
            isinstance(t, tuple)
            and all(
                isinstance(p, tuple) and len(p) == 2 and all(isinstance(s, str) for s in p)
                for p in t
            )
            for t in pairs
        )  # fmt: skip
        and call.with_cuda in (None, True, False)
    )
    if not ok:
        raise ExtensionRefused(Failure(Status.VIOLATION, "sent a malformed extension call"))
    if any("/" in name or name.startswith(".") for name, _ in call.files):
        raise ExtensionRefused(Failure(Status.INVALID, "an extension source file name has a path"))


def _check_triton_types(call: TritonLauncher | TritonCubin) -> None:
    """As _check_types, for a Triton request from the candidate's process."""
    if isinstance(call, TritonLauncher):
        ok = isinstance(call.name, str) and isinstance(call.source, str)
    else:
        ok = (
            isinstance(call.ptx, str)
            and isinstance(call.flags, tuple)
            and all(isinstance(f, str) for f in call.flags)
            and type(call.arch) is int
        )
    if not ok:
        raise ExtensionRefused(Failure(Status.VIOLATION, "sent a malformed Triton build request"))
