"""`cuda-agent bench | baselines | audit | report`: argument parsing and progress output only."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from cuda_agent.bench import (
    EvaluationService,
    RunMeta,
    RunStore,
    ServiceConfig,
    StoredSolutions,
    check_ray_address,
    check_solutions,
    pending_samples,
    pending_tasks,
    run_agent,
    run_audit,
    run_baselines,
    run_lock,
    run_stored,
    verdict_line,
    write_report,
)
from cuda_agent.cli.options import (
    EntryPointOpt,
    KernelBenchOpt,
    ModuleModeOpt,
    RulesOpt,
    TimingOpt,
    check_at_least,
    parse_int_set,
)
from cuda_agent.cli.writable import check_cache, check_writable_folder
from cuda_agent.errors import Interrupted, UserError
from cuda_agent.sandbox import EnvConfig, Stage
from cuda_agent.task import load_tasks

TasksOpt = Annotated[
    str,
    typer.Option(
        "--tasks",
        help="Task set: builtin, kernelbench (see --kernelbench), a .py file, folder, KernelBench "
        "checkout, .jsonl or .parquet.",
    ),
]
LevelsOpt = Annotated[str | None, typer.Option(help="KernelBench levels, e.g. 1,2.")]
IdsOpt = Annotated[str | None, typer.Option(help="KernelBench problem ids, e.g. 1,5-9.")]
GpusOpt = Annotated[
    str | None,
    typer.Option(help="GPU ids, one evaluation worker each (0,0 puts two on GPU 0); default all."),
]
CompileOpt = Annotated[
    int | None, typer.Option(help="CPU build workers; default the CPUs left over.")
]
RayOpt = Annotated[
    str | None,
    typer.Option(
        "--ray", help="Workers as Ray actors: auto (a running cluster), ADDRESS, or local (new)."
    ),
]
InProcessOpt = Annotated[
    bool, typer.Option("--in-process", help="One Environment in this process (no workers).")
]


def bench(
    out: Annotated[Path, typer.Option("--out", help="Run folder (a rerun resumes it).")],
    tasks: TasksOpt = "builtin",
    levels: LevelsOpt = None,
    ids: IdsOpt = None,
    kernelbench: KernelBenchOpt = None,
    solutions: Annotated[
        Path | None, typer.Option(help="Stored solutions: one folder per task, named by task.")
    ] = None,
    entry_point: EntryPointOpt = None,
    model: Annotated[str | None, typer.Option(help="Model name at --base-url.")] = None,
    base_url: Annotated[str | None, typer.Option(help="OpenAI-compatible endpoint.")] = None,
    api_key_env: Annotated[
        str | None, typer.Option(help="Variable holding the endpoint's API key.")
    ] = None,
    text_tools: Annotated[
        bool, typer.Option(help="Tool calls as text blocks (endpoints without tool calling).")
    ] = False,
    max_turns: Annotated[int | None, typer.Option(help="Turns per episode.")] = None,
    workers: Annotated[int, typer.Option(help="Agent episodes run at once.")] = 4,
    timeout: Annotated[
        float | None, typer.Option(help="Seconds per model request (default 300).")
    ] = None,
    stage: Annotated[Stage, typer.Option(help="How far each solution is evaluated.")] = (
        Stage.PROFILE
    ),
    gpus: GpusOpt = None,
    compile_workers: CompileOpt = None,
    ray: RayOpt = None,
    in_process: InProcessOpt = False,
    module_mode: ModuleModeOpt = "auto",
    timing: TimingOpt = "events",
    rules: RulesOpt = "cuda-agent",
    report: Annotated[
        bool, typer.Option(help="Write report.md and report.html at the end.")
    ] = True,
) -> None:
    """Evaluate stored solutions (--solutions) or an agent (--model, --base-url) on a task set."""
    if (solutions is None) == (model is None):
        raise UserError("give either --solutions DIR or --model NAME --base-url URL")
    if model is not None and base_url is None:
        raise UserError("--model needs --base-url (an OpenAI-compatible endpoint)")
    if entry_point is not None and solutions is None:
        raise UserError("--entry-point names the class of stored single files; give --solutions")
    if entry_point is not None and not entry_point.isidentifier():
        raise UserError(f"--entry-point {entry_point!r}: not a Python class name")
    check_at_least(workers, 1, "--workers")
    check_at_least(max_turns, 1, "--max-turns")
    check_at_least(timeout, 1, "--timeout")
    found = load_tasks(
        tasks, parse_int_set(levels, "--levels"), parse_int_set(ids, "--ids"), kernelbench
    )
    config = _service(gpus, compile_workers, ray, in_process, module_mode, timing, rules)
    policy = None
    if solutions is not None:
        check_solutions(found, StoredSolutions(solutions, entry_point))
    else:
        policy = _policy(model, base_url, api_key_env, text_tools, max_turns, workers, timeout)
    check_writable_folder(out, "--out")
    check_cache(config.env.cache_dir)
    meta = RunMeta(
        kind="solutions" if solutions is not None else "agent",
        tasks=tasks,
        stage=stage,
        solutions=str(solutions.resolve()) if solutions is not None else None,
        model=model,
        base_url=base_url,
        timing=config.env.timing,
        rules=config.env.rules,
        entry_point=entry_point,
    )
    store = RunStore(out)
    with run_lock(store.root):
        store.start(meta)
        source = StoredSolutions(solutions, entry_point) if solutions is not None else None
        todo = _todo(found, store, source)
        waiting = {task.name for task in todo}
        console = Console(stderr=True)
        console.print(f"{len(found)} tasks, {len(found) - len(waiting)} already finished in {out}")
        if todo:
            try:
                _bench(found, store, config, stage, console, source, policy, len(todo))
            except KeyboardInterrupt:
                raise Interrupted(
                    f"the finished tasks are kept in {out}; rerun the same command to resume"
                ) from None
        if report:
            files = write_report(out)
            console.print(f"report: {files.markdown} and {files.html}")


def _todo(found, store, source) -> list:
    """The tasks to evaluate: one entry per pending stored sample, or per pending episode."""
    if source is None:
        return pending_tasks(found, store)
    return [task for task, _, _ in pending_samples(found, source, store)]


def _bench(found, store, config, stage, console, source, policy, evaluations: int) -> None:
    with EvaluationService(config) as service, _progress(console) as progress:
        bar = progress.add_task("bench", total=evaluations)

        def on_result(result) -> None:
            progress.console.print(verdict_line(result), markup=False)
            progress.advance(bar)

        if source is not None:
            run_stored(found, source, store, service, stage, on_result)
        else:
            run_agent(found, policy, store, service, stage, on_result)


def baselines(
    out: Annotated[Path, typer.Option("--out", help="JSONL data file (a rerun adds to it).")],
    tasks: TasksOpt = "builtin",
    levels: LevelsOpt = None,
    ids: IdsOpt = None,
    kernelbench: KernelBenchOpt = None,
    gpus: GpusOpt = None,
    ray: RayOpt = None,
    in_process: InProcessOpt = False,
) -> None:
    """Time eager and torch.compile once per (task, GPU, torch version) into the cache."""
    found = load_tasks(
        tasks, parse_int_set(levels, "--levels"), parse_int_set(ids, "--ids"), kernelbench
    )
    _sweep(run_baselines, found, out, _service(gpus, 0, ray, in_process), "baselines", True)


def audit(
    out: Annotated[Path, typer.Option("--out", help="JSONL data file; a .md table beside it.")],
    tasks: TasksOpt = "builtin",
    levels: LevelsOpt = None,
    ids: IdsOpt = None,
    kernelbench: KernelBenchOpt = None,
    gpus: GpusOpt = None,
    ray: RayOpt = None,
    in_process: InProcessOpt = False,
) -> None:
    """Run the null-kernel battery over a task set: where a trivial output passes, and the fix."""
    found = load_tasks(
        tasks, parse_int_set(levels, "--levels"), parse_int_set(ids, "--ids"), kernelbench
    )
    _sweep(run_audit, found, out, _service(gpus, 0, ray, in_process), "audit")
    typer.echo(f"table: {out.with_suffix('.md')}")


def report(
    run: Annotated[Path, typer.Argument(help="A run folder of `cuda-agent bench`.")],
) -> None:
    """Write RUN/report.md and RUN/report.html (figures in RUN/report_files/)."""
    RunStore(run).meta()  # a run folder at all
    check_writable_folder(run, "report", "copy the run folder somewhere writable and report that")
    files = write_report(run)
    typer.echo(f"{files.markdown}\n{files.html}")


COMMANDS = (bench, baselines, audit, report)


def _sweep(fn, found, out: Path, config: ServiceConfig, what: str, prepared=False) -> None:
    """`prepared`: `fn` first runs every task's untimed GPU work, shown as its own bar."""
    if out.is_dir():
        raise UserError(f"--out {out}: a folder; give the JSONL file to write")
    check_writable_folder(out.parent, "--out", "choose a writable place for the file")
    check_cache(config.env.cache_dir)
    console = Console(stderr=True)
    with EvaluationService(config) as service:
        if service.identity()["gpu"] is None:  # every task would fail alike, so say it once
            raise UserError(f"`cuda-agent {what}` needs a CUDA GPU; none is visible here")
        _sweep_items(fn, found, out, service, console, what, prepared)


def _sweep_items(fn, found, out, service, console, what: str, prepared: bool) -> None:
    failed = 0
    with _progress(console) as progress:
        extra = {}
        if prepared:
            prep = progress.add_task("audit and torch.compile", total=None)
            extra["on_prepared"] = lambda task: progress.advance(prep)
        bar = progress.add_task(what, total=None)

        def on_item(item) -> None:
            nonlocal failed
            if item.error is not None:
                failed += 1
                progress.console.print(f"{item.task.name}: failed: {item.error}", markup=False)
            progress.advance(bar)

        items = fn(found, service, out, on_item, **extra)
    if items and failed == len(items):
        first = next(i for i in items if i.error)
        raise UserError(f"{what} failed for every task; the first: {first.error}")
    console.print(f"{len(items) - failed} written to {out}, {failed} failed (a rerun retries them)")


def _service(
    gpus, compile_workers, ray, in_process, module_mode="auto", timing="events",
    rules="cuda-agent",
) -> ServiceConfig:  # fmt: skip
    if in_process and ray:
        raise UserError("--in-process and --ray exclude each other; choose one")
    check_at_least(compile_workers, 0, "--compile-workers")
    devices = None
    if gpus is not None:
        devices = tuple(d.strip() for d in gpus.split(",") if d.strip())
        if not devices or not all(d.isdigit() for d in devices):
            raise UserError(f"--gpus {gpus!r}: expected GPU ids like 0,1 (repeat one for more)")
    env = EnvConfig(module_mode=module_mode, timing=timing, rules=rules)
    if ray:
        address = None if ray == "local" else ray
        if address is not None:
            check_ray_address(address)
        return ServiceConfig(
            mode="ray", gpus=devices, compile_workers=compile_workers, ray_address=address, env=env
        )
    mode = "inprocess" if in_process else "local"
    return ServiceConfig(mode=mode, gpus=devices, compile_workers=compile_workers, env=env)


def _policy(model, base_url, api_key_env, text_tools, max_turns, workers, timeout):
    """The agent policy, once its endpoint has answered one request as the episodes will."""
    from cuda_agent.agent import AgentConfig, ModelConfig, check_endpoint
    from cuda_agent.bench import AgentPolicy  # the agent's client only for agent runs

    agent = AgentConfig(max_turns=max_turns) if max_turns is not None else AgentConfig()
    extra = {"timeout_s": timeout} if timeout is not None else {}
    config = ModelConfig(
        model=model, base_url=base_url, api_key_env=api_key_env, text_tools=text_tools, **extra
    )
    check_endpoint(config)
    return AgentPolicy(model=config, agent=agent, workers=workers)


def _progress(console: Console) -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
    )
