"""The kernel development environment: workspace, build, verify, profile, guard, reward.

One evaluation, `Environment.evaluate(task, solution, stage) -> Verdict`, runs the stages in
order: the static guard, the build, then (on a GPU) the candidate's process is loaded, checked on
fresh input sets under the runtime guard, and timed against eager and torch.compile.

    environment.py          the stage pipeline: static guard, build, check, time
    trusted.py              the trusted side's state: references, audits, baselines, GPU memory
    outcome.py              Failure and Correct, and the one place they become a Verdict
    retry.py                when an evaluation or a timing is tried again, each case named
    verdict.py              Verdict, Status, Stage
    violation.py            Violation: the rule broken and the check that found it, typed
    config.py               EnvConfig and the default cache folder
    module_mode.py          train or eval: the models' mode, set or by the submission's format
    workspace.py            the workspace layout and the Solution read back from one
    reward.py               the milestone reward
    guard/static.py         the static guard's entry: each file to its reader
    guard/static_py.py      Python sources, by AST
    guard/static_cpp.py     C++/CUDA sources, by tokens
    guard/rules.py          the static rules, as data
    guard/cpp_lexer.py      C++/CUDA source with comments (and strings) blanked, as tokens
    guard/includes.py       the include rule: the #include directives of a source, read once
    guard/runtime.py        the dispatcher and profiler trace of a forward, judged
    guard/profile.py        the rules profiles (cuda-agent, kernelbench) and the rules' families
    guard/findings.py       a guard finding, typed; findings split by a profile
    build/extension.py      a Solution into one extension module, cached per translation unit
    build/pch.py            the precompiled torch header
    build/link.py           objects linked into one extension module (workspaces, single files)
    build/bindings.py       the bindings model_new.py calls against those the kernels register
    build/compiler.py       running a compiler under a deadline; file locks
    build/toolchain.py      nvcc, the host compiler, torch's headers and libraries, flags
    build/compiler_output.py  compiler errors trimmed to the workspace's paths
    check/inputs.py         input sets drawn from a secret seed
    check/reference.py      the reference model on the trusted side
    check/compare.py        outputs against reference outputs, a piece at a time (synthesis too)
    check/audit.py          the null-kernel battery: can the check tell trivial outputs apart
    check/task_probe.py     whether a task's own functions run, without a GPU (meta, else CPU)
    check/verify.py         the candidate's outputs on fresh sets, under the runtime guard
    timing/call.py          the one way to time a call (events, host clock, L2 flush)
    timing/method.py        the timing methods (events, kernels, span); launch-bound tasks
    timing/gpu_work.py      the GPU's own span and busy time of a call's work (CUPTI, kineto)
    timing/profile.py       the timing of baselines and candidate: parameters, result
    timing/interleave.py    the sides timed turn by turn on the same fresh sets
    timing/cross_check.py   the candidate's reported times against independent clocks
    timing/gpu_lock.py      timed sections never share their GPU, across processes
    timing/run_queue.py     how long a thread waited for a CPU (Linux schedstat)
    timing/baselines.py     eager and torch.compile timings cached on disk
    process/fork_server.py  the warm fork server of candidate processes (imports no torch)
    process/watch.py        starting, watching (time, memory) and killing child processes
    process/messages.py     the typed requests and answers between parent and candidate
    process/candidate.py    the parent's handle on one candidate process
    process/spare.py        candidate processes started ahead of need
    process/child.py        the candidate process itself
    process/confinement.py  scrubbed environment, rlimits, Landlock, seccomp
    process/isolated_call.py  any function in a confined child (synthesis uses it)
    single_file/            KernelBench's single-file submissions, built through the candidate
                            (single_file/early.py: their literal builds, started before torch)
    export/kernelbench.py   a solution as a KernelBench single-file submission (load_inline)
    export/cuda_agent.py    a solution as a CUDA Agent workdir (their binding convention)
    export/sources.py       translation units merged, REGISTER_BINDING calls read

The names below load on first use, so that importing one piece (the fork server, before torch)
does not import the rest.
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "AuditRecord": "check.audit",
    "BaselineRecord": "timing.baselines",
    "tensor_pieces": "check.compare",
    "TIMING_METHOD": "timing.baselines",
    "BuildResult": "build.extension",
    "EnvConfig": "config",
    "default_cache_dir": "config",
    "Environment": "environment",
    "gpu_lock": "timing.gpu_lock",
    "lock_files": "timing.gpu_lock",
    "rw_lock": "timing.gpu_lock",
    "IsolatedResult": "process.isolated_call",
    "run_isolated": "process.isolated_call",
    "apply_confinement": "process.confinement",
    "confine_preexec": "process.confinement",
    "scrubbed_env": "process.confinement",
    "start_early": "process.fork_server",
    "start_early_build": "single_file.early",
    "milestone_reward": "reward",
    "SingleFileSolution": "single_file.submission",
    "read_submission": "single_file.submission",
    "single_file_solution": "single_file.submission",
    "EXPORT_FORMATS": "export",
    "export_cuda_agent": "export",
    "export_kernelbench": "export",
    "FORMAT_MODES": "module_mode",
    "MODULE_MODES": "module_mode",
    "resolve_module_mode": "module_mode",
    "Stage": "verdict",
    "Status": "verdict",
    "Verdict": "verdict",
    "MethodTimes": "verdict",
    "TorchOp": "verdict",
    "Check": "violation",
    "Rule": "violation",
    "Violation": "violation",
    "DEFAULT_RULES": "guard.profile",
    "RulesProfile": "guard.profile",
    "rules_profile": "guard.profile",
    "DEFAULT_TIMING": "timing.method",
    "TimingMethod": "timing.method",
    "timing_method": "timing.method",
    "ENTRY": "workspace",
    "INFRA_FILES": "workspace",
    "KERNELS": "workspace",
    "REFERENCE": "workspace",
    "Solution": "workspace",
    "SolutionError": "workspace",
    "create_workspace": "workspace",
    "read_solution": "workspace",
    "solution_from_files": "workspace",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return __all__
