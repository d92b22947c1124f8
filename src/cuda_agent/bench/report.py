"""The report of a run: RUN/report.md and RUN/report.html, figures in RUN/report_files/."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import jinja2

from cuda_agent.bench import metrics as m
from cuda_agent.bench import paper, plots
from cuda_agent.bench.partial import partial_table, rules_line
from cuda_agent.bench.report_template import HTML_TEMPLATE
from cuda_agent.bench.store import MODEL_ERROR, RunMeta, RunStore, TaskResult, first_samples
from cuda_agent.bench.table import Table, pct
from cuda_agent.sandbox import Status, Verdict

FIGURES = "report_files"
MAX_SHOWN_CHARS = 100_000  # per kernel file or trajectory, so one huge output cannot swamp the page


def _times(x: float | None) -> str:
    return "—" if x is None else f"{x:.2f}x"


def _num(x: float | None) -> str:
    return "—" if x is None else f"{x:.2f}"


def _ms(x: float | None) -> str:
    return "—" if x is None else f"{x:.3f}"


# (Metrics field, column header, formatter): the columns of every per-level table
COLUMNS: tuple[tuple[str, str, Callable[[float | None], str]], ...] = (
    ("pass_rate", "pass rate", pct),
    ("faster_than_eager", "faster than eager", pct),
    ("faster_than_eager_5pct", "> 5 % faster than eager", pct),
    ("faster_than_compile", "faster than torch.compile", pct),
    ("faster_than_compile_5pct", "> 5 % faster than torch.compile", pct),
    ("geomean_vs_eager_correct", "geomean vs eager, correct only", _times),
    ("geomean_vs_eager_all", "geomean vs eager, all (failure = 1x)", _times),
    ("geomean_vs_compile_correct", "geomean vs torch.compile, correct only", _times),
    ("geomean_vs_compile_all", "geomean vs torch.compile, all (failure = 1x)", _times),
    ("mean_reward", "mean reward", _num),
)


@dataclass(frozen=True)
class TaskView:
    name: str
    level: str
    status: str
    verdict: Verdict
    cells: list[str]
    files: dict[str, str]
    trajectory: list[str]
    trajectory_path: str | None


@dataclass(frozen=True)
class ReportFiles:
    markdown: Path
    html: Path
    figures: tuple[Path, ...]


TASK_HEADER = [
    "task",
    "level",
    "status",
    "compiled",
    "reward",
    "eager ms",
    "compile ms",
    "candidate ms",
    "vs eager",
    "vs compile",
    "inputs",
    "launch-bound",
]


def write_report(run_dir: str | Path) -> ReportFiles:
    """Render the run's results as markdown and one static HTML page with PNG figures."""
    store = RunStore(run_dir)
    meta = store.meta()
    results = sorted(store.results(), key=_task_order)
    # A task's headline result is its lowest sample's, as one-sample runs are scored; a task the
    # endpoint broke off has no verdict on the model: it is listed, not scored.
    firsts = first_samples(results)
    scored = [r for r in firsts if r.status != MODEL_ERROR]
    scores = m.by_level((r.level, r.verdict) for r in scored)
    figures_dir = store.root / FIGURES
    figures_dir.mkdir(exist_ok=True)
    groups: dict[str, list[Verdict]] = {}
    for r in scored:
        groups.setdefault(m.level_key(r.level), []).append(r.verdict)
    if len(groups) > 1:
        groups[m.OVERALL] = [r.verdict for r in scored]
    figures = (
        plots.speedup_distribution([r.verdict for r in scored], figures_dir / plots.SPEEDUP_PNG),
        plots.fast_p(groups, figures_dir / plots.FAST_P_PNG),
    )
    context = {
        "meta": meta,
        "results": results,
        "level_tables": [_level_table(key, s, set(scores)) for key, s in scores.items()],
        # after the level tables, those with rows (the methods and samples tables may have none)
        "tables": [
            t
            for t in (
                _fast_p_table(scores),
                _reward_table(scores),
                partial_table(scored),
                _status_table(results),
                _method_table(meta, scored),
                _samples_table([r for r in results if r.status != MODEL_ERROR]),
            )
            if t.rows
        ],
        "launch_bound": [r for r in firsts if r.verdict.launch_bound],
        "launch_bound_note": LAUNCH_BOUND_NOTE,
        "redrawn": [r for r in firsts if _redrawn(r.verdict)],
        "degenerate": [r for r in firsts if r.verdict.degenerate],
        "tasks": [_task_view(store, r) for r in results],
        "task_header": TASK_HEADER,
        "figures": [f"{FIGURES}/{p.name}" for p in figures],
        "paper": paper,
        "summary": _summary(meta, firsts, len(results)),
    }
    md_path = store.root / "report.md"
    md_path.write_text(_markdown(context))
    html_path = store.root / "report.html"
    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
    html_path.write_text(env.from_string(HTML_TEMPLATE).render(**context))
    return ReportFiles(md_path, html_path, figures)


def _task_order(r: TaskResult) -> tuple:
    return (r.level is None, r.level or 0, r.task.get("problem_id") or 0, r.name)


def _redrawn(v: Verdict) -> bool:
    """Scored on inputs re-drawn by the audit rather than the task's own get_inputs()."""
    return v.input_distribution not in (None, "", "task")


def _level_table(key: str, scores: m.Metrics, groups: set[str]) -> Table:
    """The run's scores for one group; beside them the paper's for the same KernelBench level, and
    its overall figures only where the run's overall is over levels 1-3 too."""
    title = "Overall (levels weighted by task count)" if key == m.OVERALL else f"Level {key}"
    header = ["system", "tasks"] + [h for _, h, _ in COLUMNS]
    rows = [["this run", str(scores.tasks)] + [f(getattr(scores, k)) for k, _, f in COLUMNS]]
    comparable = key != m.OVERALL or groups == {"L1", "L2", "L3", m.OVERALL}
    for row in paper.rows_for(key) if comparable else ():
        rows.append([row.system, "—"] + [f(row.values.get(k)) for k, _, f in COLUMNS])
    return Table(title, header, rows)


def _fast_p_table(scores: dict[str, m.Metrics]) -> Table:
    grid = list(next(iter(scores.values())).fast_p_eager)
    header = ["group", "baseline"] + [f"fast_{p:g}" for p in grid]
    rows = []
    for key, s in scores.items():
        rows.append([key, "eager"] + [pct(s.fast_p_eager[p]) for p in grid])
        rows.append([key, "torch.compile"] + [pct(s.fast_p_compile[p]) for p in grid])
    return Table("fast_p (correct and speed-up > p, over all tasks)", header, rows)


def _reward_table(scores: dict[str, m.Metrics]) -> Table:
    rewards = sorted({r for s in scores.values() for r in s.reward_counts} | {-1, 1, 2, 3})
    header = ["group"] + [f"reward {r}" for r in rewards] + ["mean"]
    rows = [
        [key] + [str(s.reward_counts.get(r, 0)) for r in rewards] + [_num(s.mean_reward)]
        for key, s in scores.items()
    ]
    return Table("Reward distribution (tasks per milestone reward)", header, rows)


def _method_table(meta: RunMeta, results: list[TaskResult]) -> Table:
    """The correct tasks' geometric-mean speed-ups by each timing method the verdicts carry:
    the run's own method first, the others as the same calls measured them."""
    timed = [r.verdict for r in results if r.verdict.correct and r.verdict.timings]
    methods = sorted({k for v in timed for k in v.timings}, key=lambda k: (k != meta.timing, k))
    header = ["timing method", "tasks", "geomean vs eager", "geomean vs torch.compile"]
    rows = []
    for method in methods:
        figures = [v.timings[method] for v in timed if method in v.timings]
        label = f"{method} (this run's)" if method == meta.timing else method
        rows.append(
            [
                label,
                str(len(figures)),
                _times(m.geomean([f.speedup_vs_eager for f in figures if f.speedup_vs_eager])),
                _times(m.geomean([f.speedup_vs_compile for f in figures if f.speedup_vs_compile])),
            ]
        )
    return Table("Speed-ups by timing method (correct tasks)", header, rows, "methods")


def _status_table(results: list[TaskResult]) -> Table:
    counts = Counter(r.status for r in results)
    rows = [[status, str(n)] for status, n in counts.most_common()]
    return Table("Outcomes", ["status", "results"], rows)


SAMPLE_COLUMNS = (
    ("pass_rate", "pass rate"),
    ("faster_than_compile", "faster than torch.compile"),
    ("geomean_vs_eager_correct", "geomean vs eager, correct only"),
    ("geomean_vs_compile_correct", "geomean vs torch.compile, correct only"),
)


def _samples_table(results: list[TaskResult]) -> Table:
    """Where tasks have several samples: the figures over each task's lowest sample (the
    headline's), over its best (pass@k, best-of-k), and pass@1 as the mean share of correct
    samples. No rows where every task has one."""
    by_task: dict[str, list[TaskResult]] = {}
    for r in results:
        by_task.setdefault(r.name, []).append(r)
    header = ["over", "tasks", "samples"] + [h for _, h in SAMPLE_COLUMNS]
    if all(len(group) == 1 for group in by_task.values()):
        return Table("Samples", header, [], "samples")
    samples = str(len(results))
    firsts = m.compute([r.verdict for r in first_samples(results)])
    best = m.compute([max((r.verdict for r in g), key=_merit) for g in by_task.values()])
    pass_at_1 = sum(sum(r.verdict.correct for r in g) / len(g) for g in by_task.values())
    rows = [
        ["each task's lowest sample (the figures above)", str(firsts.tasks), samples]
        + [_fmt_metric(firsts, k) for k, _ in SAMPLE_COLUMNS],
        ["each task's best sample (pass@k, best-of-k)", str(best.tasks), samples]
        + [_fmt_metric(best, k) for k, _ in SAMPLE_COLUMNS],
        ["pass@1 (the mean share of correct samples)", str(len(by_task)), samples,
         pct(pass_at_1 / len(by_task)), "—", "—", "—"],
    ]  # fmt: skip
    return Table("Samples", header, rows, "samples")


def _merit(v: Verdict) -> tuple:
    """What makes a sample a task's best: correct, then reward, then speed-up."""
    return (v.correct, v.reward, v.speedup_vs_compile or 0.0, v.speedup_vs_eager or 0.0)


def _fmt_metric(scores: m.Metrics, key: str) -> str:
    value = getattr(scores, key)
    return pct(value) if key in ("pass_rate", "faster_than_compile") else _times(value)


def _task_view(store: RunStore, r: TaskResult) -> TaskView:
    v = r.verdict
    cells = [
        r.key,
        m.level_key(r.level),
        r.status,
        "yes" if v.compiled else "no",
        str(v.reward),
        _ms(v.eager_ms),
        _ms(v.compile_ms),
        _ms(v.candidate_ms),
        _times(v.speedup_vs_eager),
        _times(v.speedup_vs_compile),
        v.input_distribution or "task's own",
        "yes" if v.launch_bound else "no",
    ]
    files = {p: _clip(t) for p, t in store.solution_files(r.key).items()}
    return TaskView(
        name=r.key,
        level=m.level_key(r.level),
        status=r.status,
        verdict=v,
        cells=cells,
        files=files,
        trajectory=_trajectory(store.root, r.trajectory),
        trajectory_path=r.trajectory,
    )


def _trajectory(root: Path, rel: str | None) -> list[str]:
    """The episode's steps as readable text blocks (role, then content or the JSON)."""
    if not rel or not (root / rel).is_file():
        return []
    steps, size = [], 0
    for line in (root / rel).read_text(errors="replace").splitlines():
        if not line.strip():
            continue
        try:
            step = json.loads(line)
        except json.JSONDecodeError:
            step = line
        text = _step_text(step)
        size += len(text)
        if size > MAX_SHOWN_CHARS:
            steps.append("… (trajectory truncated; the full file is in the run folder)")
            break
        steps.append(text)
    return steps


def _step_text(step) -> str:
    """One trajectory record (the agent's episode / turn / end lines) as readable text."""
    if not isinstance(step, dict):
        return str(step)
    kind = step.get("type")
    if kind == "episode":
        messages = step.get("messages") or []
        shown = "\n\n".join(f"[{m.get('role')}]\n{m.get('content')}" for m in messages)
        return f"episode with model {step.get('model')}\n\n{shown}"
    if kind == "turn":
        assistant = step.get("assistant") or {}
        parts = [f"turn {step.get('index')}"]
        if assistant.get("content"):
            parts.append(f"[assistant]\n{assistant['content']}")
        parts += [
            f"[call {c.get('name')}] {c.get('arguments')}"
            for c in assistant.get("tool_calls") or []
        ]
        parts += [
            f"[{o.get('name')}: {'ok' if o.get('ok') else 'failed'}]\n{o.get('content')}"
            for o in step.get("observations") or []
        ]
        verdict = step.get("verdict")
        if verdict:
            parts.append(f"[verdict] {verdict.get('status')}, reward {verdict.get('reward')}")
        return "\n\n".join(parts)
    if kind == "end":
        why = f": {step['message']}" if step.get("message") else ""
        return (
            f"end ({step.get('reason')}{why}) after {step.get('turns')} turns, "
            f"reward {step.get('reward')}"
        )
    return json.dumps(step, indent=1)


def _clip(text: str) -> str:
    if len(text) <= MAX_SHOWN_CHARS:
        return text
    return text[:MAX_SHOWN_CHARS] + "\n… (truncated; the full file is in the run folder)"


LAUNCH_BOUND_NOTE = (
    "The reference's host takes well over twice its GPU busy time to issue a call: these "
    "tasks' speed-ups measure launch overhead more than kernels, and the timing methods "
    "disagree on them."
)


def _summary(meta: RunMeta, results: list[TaskResult], evaluated: int) -> list[str]:
    """`results`: one per task; `evaluated`: the results of every sample."""
    gpus = sorted({r.verdict.gpu for r in results if r.verdict.gpu})
    not_verified = sum(1 for r in results if r.status == Status.NO_GPU)
    samples = f" ({evaluated} samples; see Samples)" if evaluated > len(results) else ""
    lines = [
        f"Run of {meta.describe()}, started {meta.created}.",
        f"{len(results)} tasks finished{samples}; GPU: {', '.join(gpus) or 'none recorded'}.",
        f"Times, speed-ups and rewards are by the {meta.timing} timing method.",
        *rules_line(meta.rules, results),
    ]
    bound = sum(1 for r in results if r.verdict.launch_bound)
    if bound:
        lines.append(f"{bound} tasks are launch-bound (listed below).")
    if not_verified:
        lines.append(
            f"{not_verified} tasks were not verified (no GPU): they count as failures here."
        )
    broken_off = [r.name for r in results if r.status == MODEL_ERROR]
    if broken_off:
        lines.append(
            f"{len(broken_off)} tasks are not scored: the model endpoint failed during their "
            f"episodes (model_error: {', '.join(broken_off[:10])}"
            f"{', ...' if len(broken_off) > 10 else ''}); rerunning the same `cuda-agent bench` "
            "command redoes them."
        )
    return lines


def _markdown(ctx: dict) -> str:
    out = ["# Benchmark report", ""]
    out += [*ctx["summary"], ""]
    for table in ctx["level_tables"]:
        out += [f"## {table.title}", "", table.markdown(), ""]
    out += [f'Paper rows (marked "(paper)"): {paper.SOURCE}.', ""]
    out += [line for note in paper.NOTES for line in (note, "")]
    for table in ctx["tables"]:
        out += [f"## {table.title}", "", table.markdown(), ""]
    if ctx["launch_bound"]:
        out += ["## Launch-bound tasks", "", LAUNCH_BOUND_NOTE, ""]
        out += [f"- {r.name}" for r in ctx["launch_bound"]] + [""]
    out += ["## Inputs", ""]
    if ctx["redrawn"]:
        out.append("Scored on re-drawn inputs (a trivial output passes the task's own inputs):")
        out += [f"- {r.name}: {r.verdict.input_distribution}" for r in ctx["redrawn"]]
    else:
        out.append("Every task was scored on its own inputs.")
    if ctx["degenerate"]:
        out.append("")
        out.append("Degenerate (no input distribution tells the reference from a trivial output):")
        out += [f"- {r.name}" for r in ctx["degenerate"]]
    out += ["", *(f"![{Path(f).stem}]({f})" for f in ctx["figures"]), ""]
    tasks = Table("Tasks", TASK_HEADER, [t.cells for t in ctx["tasks"]])
    out += ["## Tasks", "", tasks.markdown(), ""]
    out.append("Kernel sources and trajectories: report.html, solutions/ and trajectories/.")
    return "\n".join(out) + "\n"
