"""The parent's answers to a single-file submission's extension builds, one evaluation's worth.

Each ExtensionCall from the candidate's process is checked (types, the C++ guard, the flags),
built by the harness (build.py) and answered with the module's path. A refusal or a compile
error raises ExtensionRefused, which ends the evaluation with that verdict: the submission's
process is never told, so it cannot catch the refusal and fall back to something else.
"""

from __future__ import annotations

from pathlib import Path

from cuda_agent.sandbox.build.toolchain import Toolchain
from cuda_agent.sandbox.guard.runtime import kernel_names
from cuda_agent.sandbox.outcome import Failure
from cuda_agent.sandbox.process.candidate import CandidateFailure
from cuda_agent.sandbox.process.messages import ExtensionBuilt, ExtensionCall
from cuda_agent.sandbox.single_file.build import build_call, lay_out
from cuda_agent.sandbox.single_file.flags import read_flags
from cuda_agent.sandbox.single_file.guard import check_call
from cuda_agent.sandbox.verdict import Status

MAX_CALLS = 16  # distinct extensions one submission may ask for


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
    flags replaced), the build's seconds and the calls seen."""

    def __init__(self, toolchain: Toolchain, cache_dir: Path, timeout_s: float, notes: list[str]):
        self.toolchain = toolchain
        self.cache_dir = Path(cache_dir)
        self.timeout_s = timeout_s
        self.kernels: set[str] = set()
        self.notes = notes  # the verdict's: appended to as calls come
        self.calls: list[str] = []
        self.compiled: list[str] = []
        self.reused: list[str] = []
        self.narrowed: list[str] = []
        self.seconds = 0.0

    def __call__(self, call: ExtensionCall) -> ExtensionBuilt:
        _check_types(call)
        if len(self.calls) >= MAX_CALLS:
            raise ExtensionRefused(
                Failure(Status.INVALID, f"asks for more than {MAX_CALLS} distinct extensions")
            )
        label = f"{call.api}({call.name!r})"
        self.calls.append(label)
        tc = self.toolchain
        flags = read_flags(
            call.extra_cflags, call.extra_cuda_cflags, call.extra_ldflags,
            call.extra_include_paths, tc.arch,
        )  # fmt: skip
        violations = check_call(call) + [
            f"{label} passes {f}, which the harness does not allow (it could run or link code "
            "the guard never read); use optimisation flags and -D macros only"
            for f in flags.refused
        ]
        if violations:
            message = "the static guard rejected an extension's sources (see violations)"
            raise ExtensionRefused(Failure(Status.VIOLATION, message, tuple(violations)))
        try:
            sources = lay_out(call)
        except KeyError as err:
            raise ExtensionRefused(
                Failure(Status.INVALID, f"{label}: source {err} was not written")
            ) from None
        self.notes += [f"{label}: {n}" for n in flags.notes if n not in self.notes]
        result = build_call(sources, flags, tc, self.cache_dir, self.timeout_s)
        self.seconds += result.seconds
        self.compiled += [f"{call.name}/{n}" for n in result.compiled]
        self.reused += [f"{call.name}/{n}" for n in result.reused]
        self.narrowed += [f"{call.name}/{n}" for n in result.narrowed]
        if not result.ok:
            raise ExtensionRefused(Failure(Status.COMPILE_ERROR, f"{label}: {result.log}"))
        self.kernels |= kernel_names({**sources.headers, **sources.cuda})
        path = str(result.so_path) if result.so_path is not None else None
        return ExtensionBuilt(so_path=path, module_name=result.module_name)

    def summary(self) -> str:
        narrowed = ", ".join(self.narrowed)
        narrowed = f"; against the narrow torch prelude: {narrowed}" if narrowed else ""
        return (
            f"built {len(self.calls)} extension(s) ({', '.join(self.calls) or 'none'}): compiled "
            f"{len(self.compiled)} file(s), reused {len(self.reused)} from cache "
            f"in {self.seconds:.1f} s{narrowed}"
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
