"""`cuda-agent eval --task TASK --solution DIR|FILE.py`: one evaluation, as a summary or JSON."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from cuda_agent.cli.options import EntryPointOpt, ModuleModeOpt, RulesOpt, TimingOpt
from cuda_agent.errors import UserError
from cuda_agent.sandbox import (
    Stage,
    default_cache_dir,
    rules_profile,
    start_early_build,
    timing_method,
)


def eval_solution(
    task: Annotated[str, typer.Option("--task", help="A task .py file or a built-in task name.")],
    solution: Annotated[
        Path,
        typer.Option(
            "--solution",
            help="A workspace folder (model_new.py, kernels/) or a single-file submission "
            "(KernelBench's format: FILE.py building its CUDA with load_inline).",
        ),
    ],
    stage: Annotated[str, typer.Option(help="compile, verify or profile.")] = "profile",
    as_json: Annotated[bool, typer.Option("--json", help="Print the verdict as JSON.")] = False,
    arch: Annotated[str | None, typer.Option(help="GPU arch for nvcc, e.g. sm_90.")] = None,
    entry_point: EntryPointOpt = None,
    module_mode: ModuleModeOpt = "auto",
    timing: TimingOpt = "events",
    rules: RulesOpt = "cuda-agent",
) -> None:
    """Evaluate a solution: static guard, build, and (on a GPU) verify and profile.

    Exit status 0 whenever an evaluation ran, whatever its verdict; 2 for usage errors. Without a
    GPU: the static guard, a compile-only build, and the checks that need no run (every binding
    model_new.py calls is registered, the task's own functions run); then `no_gpu` at stages
    verify and profile.
    """
    try:
        chosen = Stage(stage)
    except ValueError:
        raise UserError(f"--stage {stage!r}: choose compile, verify or profile") from None
    method = timing_method(timing)
    profile = rules_profile(rules)
    # a single file's literal extension builds start now, before the imports below bring torch
    early = start_early_build(solution, default_cache_dir(), arch)
    try:
        from cuda_agent.sandbox import EnvConfig, Environment, read_submission
        from cuda_agent.task import load_task

        found = load_task(task)
        submission = read_submission(solution, entry_point)
        config = EnvConfig(arch=arch, module_mode=module_mode, timing=method, rules=profile)
        with Environment(config) as env:
            verdict = env.evaluate(found, submission, chosen)
    finally:
        if early is not None:
            early.stop()  # a build the evaluation never asked for is not left running
    if early is not None:
        verdict = verdict.model_copy(update={"notes": [*verdict.notes, early.note()]})
    typer.echo(verdict.model_dump_json(indent=1) if as_json else verdict.summary())
