"""Our verdicts beside another harness's, problem by problem: the same, or why not.

A difference is a problem where one harness passed the solution and the other did not. Each is
given its named reasons, the most telling first: the problem's text differs (its content hash);
our guard caught a shortcut (the check and the rule it broke); a time limit; a build that failed
on one side; the module's train/eval mode; the inputs a check drew; the tolerance. What none of
these explains is said to be unexplained, with the problem's version unknown when their file
does not identify it. Where both failed for different reasons, the row says so.

Our verdicts are compared under a rules profile: the run's own, or the cuda-agent rules over a
run judged by the kernelbench rules, where a partial kernel (correct, with PyTorch computing
part of it) is then a violation for the reason `rules`. A run judged by the cuda-agent rules
refused PyTorch compute before its solutions ran, so it cannot be re-scored by the kernelbench
rules.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from cuda_agent.bench.jsonl import JsonlLog
from cuda_agent.bench.kernelbench_baseline import (
    TheirBaseline,
    read_their_baseline,
    with_their_speedups,
)
from cuda_agent.bench.kernelbench_results import TheirResult, read_their_results
from cuda_agent.bench.partial import is_partial
from cuda_agent.bench.store import RunStore, TaskResult
from cuda_agent.errors import UserError
from cuda_agent.sandbox import Check, EnvConfig, RulesProfile, Violation, rules_profile
from cuda_agent.task import load_tasks

REPORT_MD, REPORT_JSON = "compare.md", "compare.json"
_CHECKS = {Check.STATIC_GUARD: "our static guard", Check.RUNTIME_GUARD: "our runtime guard",
           Check.TIMING_CHECKS: "our timing checks"}  # fmt: skip
_OURS = {"ok": "correct", "compile_error": "compile_error", "invalid": "compile_error",
         "timeout": "timeout", "mismatch": "mismatch", "runtime_error": "runtime_error",
         "violation": "violation", "no_gpu": "not_verified", "harness_error": "no_verdict",
         "missing": "missing"}  # fmt: skip


@dataclass(frozen=True)
class Reason:
    kind: str  # version, guard, rules, timeout, compile_error, runtime_error, module_mode,
    # inputs, tolerance, not_verified, no_verdict, both_fail, only_ours, only_theirs, unexplained
    detail: str
    certain: bool = True  # False: the likeliest cause, where neither file records the cause


@dataclass(frozen=True)
class Row:
    level: int
    problem_id: int
    task: str | None
    ours: str | None  # our outcome (correct, mismatch, violation, ...); None: not in our run
    theirs: str | None
    ours_speedup: float | None = None  # vs eager, as our report gives it
    theirs_speedup: float | None = None  # vs their reference
    same: bool | None = None  # None: only one side has the problem
    reasons: tuple[Reason, ...] = field(default=())


@dataclass(frozen=True)
class Comparison:
    run: str
    theirs: str
    rows: tuple[Row, ...]
    notes: tuple[str, ...] = ()
    rules: str = RulesProfile.CUDA_AGENT  # the rules profile our verdicts are compared under

    def summary(self) -> dict:
        both = [r for r in self.rows if r.same is not None]
        kinds = Counter(x.kind for r in both if not r.same for x in r.reasons)
        return {
            "compared": len(both),
            "same": sum(r.same for r in both),
            "different": sum(not r.same for r in both),
            "only_ours": sum(r.theirs is None for r in self.rows),
            "only_theirs": sum(r.ours is None for r in self.rows),
            "reasons": dict(kinds.most_common()),
        }


def compare_with_file(
    run: str | Path,
    results_file: str | Path,
    level: int | None = None,
    sample: int = 0,
    their_problems: str | Path | None = None,
    their_baseline: str | Path | None = None,
    rules: str | None = None,
) -> Comparison:
    """The run beside the verdicts in `results_file` (sample `sample` of each problem).

    `level` is needed for KernelBench's eval_results.json, which names none; by default it is
    the run's level when the run has a single one. `their_problems` is the KernelBench copy the
    other run used, to compare problem versions where their file does not identify them.
    `their_baseline` is KernelBench's baseline timing file, which gives their speed-ups where
    their results record only the kernels' runtimes. `rules` is the profile our verdicts are
    compared under (default: the run's own)."""
    ours = _kernelbench_results(run, sample)
    if level is None:
        levels = {key[0] for key in ours}
        level = levels.pop() if len(levels) == 1 else None
    theirs = read_their_results(results_file, level, sample)
    notes = []
    if their_baseline is not None:
        baseline = read_their_baseline(their_baseline)
        theirs = with_their_speedups(theirs, baseline)
        notes.append(_baseline_note(baseline, theirs))
    versions = {}
    if their_problems is not None:
        tasks = load_tasks(their_problems)
        versions = {(t.level, t.source.problem_id): t.hash for t in tasks if t.level is not None}
    comparison = compare_run(
        run, theirs, str(results_file), versions, level=level, sample=sample, rules=rules
    )
    return replace(comparison, notes=(*comparison.notes, *notes))


def _baseline_note(baseline: TheirBaseline, theirs: list[TheirResult]) -> str:
    note = f"Their speed-ups: the reference's mean time in {baseline.source} over their runtime."
    kernels = {t.hardware for t in theirs if t.hardware}
    if baseline.hardware and kernels and set(baseline.hardware) != kernels:
        note += (
            f" The baseline was timed on {', '.join(baseline.hardware)}, their kernels on "
            f"{', '.join(sorted(kernels))}: those speed-ups compare two machines."
        )
    return note


def compare_run(
    run: str | Path,
    theirs: list[TheirResult],
    their_label: str = "their results",
    their_versions: dict[tuple[int, int], str] | None = None,
    config: EnvConfig | None = None,
    level: int | None = None,
    sample: int = 0,
    rules: str | None = None,
) -> Comparison:
    """Each KernelBench problem of the run (of `level`, if given) or of `theirs`, matched by
    (level, problem id); where the run scored several samples of a problem, its sample `sample`.

    `their_versions` maps (level, problem id) to the content hash of the problem text their run
    used, where their file does not carry it; `config` gives our tolerance (the defaults when the
    run's is not known); `rules` the profile our verdicts are compared under (the run's own by
    default)."""
    mine, modes = _kernelbench_results(run, sample), _modes(RunStore(run))
    own = RunStore(run).meta().rules
    profile = _profile(run, own, rules)
    if level is not None:
        mine = {k: r for k, r in mine.items() if k[0] == level}
        if not mine:
            raise UserError(f"{run}: holds no results of KernelBench level {level}")
    tolerance = config or EnvConfig()
    by_key = {(t.level, t.problem_id): t for t in theirs}
    versions = their_versions or {}
    rows = []
    for key in sorted(set(mine) | set(by_key)):
        r, t = mine.get(key), by_key.get(key)
        if t is not None and t.problem_hash is None and key in versions:
            t = _with_hash(t, versions[key])
        refused = r is not None and profile != own and is_partial(r.verdict)
        rows.append(_row(key, r, t, modes.get(r.name) if r else None, tolerance, refused))
    notes = [] if profile == own else [_rescored_note(profile, own)]
    if theirs and all(t.problem_hash is None for t in theirs) and not versions:
        notes.append(
            "Their results do not identify the problem texts they scored (no hash or code): "
            "problem versions are unknown; --their-problems names the KernelBench copy they used."
        )
    hardware = sorted({t.hardware for t in theirs if t.hardware})
    if hardware:
        notes.append(f"Their GPU: {', '.join(hardware)}.")
    return Comparison(str(run), their_label, tuple(rows), tuple(notes), profile)


def _profile(run: str | Path, own: str, rules: str | None) -> RulesProfile:
    """The profile to compare under: `rules`, or the run's own (`own`); the kernelbench rules
    over a cuda-agent run are refused (its solutions were refused before they ran)."""
    chosen = rules_profile(rules if rules is not None else own)
    if chosen == RulesProfile.KERNELBENCH and own == RulesProfile.CUDA_AGENT:
        raise UserError(
            f"--rules kernelbench: {run} was judged by the cuda-agent rules, which refuse "
            "PyTorch compute before a solution runs, so its verdicts cannot be re-scored; run "
            "`cuda-agent bench --rules kernelbench` into another --out and compare that"
        )
    return chosen


def _rescored_note(profile: RulesProfile, own: str) -> str:
    return (
        f"Ours re-scored by the {profile} rules (the run was judged by the {own} rules): a "
        "partial kernel, correct with PyTorch computing part of it, counts as a violation."
    )


def _kernelbench_results(run: str | Path, sample: int = 0) -> dict[tuple[int, int], TaskResult]:
    """The run's latest result per KernelBench problem, by (level, problem id): its sample
    `sample`, where the run scored several."""
    store = RunStore(run)
    store.meta()  # a clear error when RUN is not a bench run folder
    mine = {
        (r.level, r.task["problem_id"]): r
        for r in store.results()
        if r.level is not None
        and r.task.get("problem_id") is not None
        and r.sample in (None, sample)
    }
    if not mine:
        raise UserError(f"{run}: holds no KernelBench results (no task has a level and id)")
    return mine


def _modes(store: RunStore) -> dict[str, str]:
    """The module mode (train/eval) each verdict records, by task, where it records one."""
    modes = {}
    for record in JsonlLog(store.root / RunStore.RESULTS).read():
        mode = (record.get("verdict") or {}).get("module_mode")
        name = (record.get("task") or {}).get("name")
        if mode and name:
            modes[name] = mode
    return modes


def _with_hash(t: TheirResult, problem_hash: str) -> TheirResult:
    return TheirResult(**{**asdict(t), "problem_hash": problem_hash})


def _row(key, r: TaskResult | None, t: TheirResult | None, mode: str | None,
         config: EnvConfig, refused: bool = False) -> Row:  # fmt: skip
    """One problem's row; `refused`: ours is a partial kernel the compared rules refuse."""
    level, problem_id = key
    ours = _OURS.get(r.status, r.status) if r is not None else None
    if r is not None and ours == "correct" and not r.verdict.correct:
        ours = "not_verified"  # a stage that stops before checking outputs
    if refused:
        ours = "violation"
    base = dict(level=level, problem_id=problem_id, task=r.name if r else None, ours=ours,
                theirs=t.outcome if t else None,
                ours_speedup=r.verdict.speedup_vs_eager if r else None,
                theirs_speedup=t.speedup if t else None)  # fmt: skip
    if r is None:
        return Row(**base, reasons=(Reason("only_theirs", "not in our run"),))
    if t is None:
        return Row(**base, reasons=(Reason("only_ours", "not in their results"),))
    if ours in ("not_verified", "no_verdict"):
        what = "not verified (no GPU, or a stage before verify)" if ours == "not_verified" else (
            "no verdict (harness_error: evaluate it again)")  # fmt: skip
        return Row(**base, same=False, reasons=(Reason(ours, f"ours: {what}"),))
    if (ours == "correct") == t.correct:
        notes = [x for x in (_version(r, t), _partial(r.verdict, refused)) if x is not None]
        if ours != t.outcome:
            notes.append(Reason("both_fail", f"ours {ours}, theirs {t.outcome}"))
        return Row(**base, same=True, reasons=tuple(notes))
    return Row(**base, same=False, reasons=tuple(_reasons(r, t, ours, mode, config, refused)))


def _reasons(r: TaskResult, t: TheirResult, ours: str, mode: str | None, config: EnvConfig,
             refused: bool = False):  # fmt: skip
    """Why one harness passed what the other did not, the most telling first."""
    v = r.verdict
    found = [x for x in (_version(r, t), _partial(v, refused)) if x is not None]
    if ours == "violation" and not refused:
        found.append(Reason("guard", _guard(v.violations, v.message)))
    if "timeout" in (ours, t.outcome):
        side = "ours" if ours == "timeout" else "theirs"
        found.append(Reason("timeout", f"{side} ran out of time"))
    if ours == "compile_error":
        found.append(Reason("compile_error", f"ours failed to build: {_line(v.message)}"))
    if t.outcome == "compile_error":
        found.append(Reason("compile_error", f"theirs failed to build: {t.error or 'no message'}"))
    if ours == "runtime_error":
        found.append(Reason("runtime_error", f"ours raised: {_line(v.message)}"))
    if t.outcome == "runtime_error":
        found.append(Reason("runtime_error", f"theirs raised: {t.error or 'no message'}"))
    if mode and t.mode and mode != t.mode:
        found.append(Reason("module_mode", f"module mode: ours {mode}, theirs {t.mode}"))
    if ours == "mismatch" and t.correct:
        found.append(_ours_stricter(v, t, config))
    if ours == "correct" and t.outcome == "mismatch":
        found.append(_theirs_stricter(v, t, config))
    if not t.problem_hash and all(not x.certain for x in found):
        found.append(Reason("version", "problem version unknown: their results do not say which "
                                       "problem text they scored", certain=False))  # fmt: skip
    return found or [Reason("unexplained", f"ours {ours}, theirs {t.outcome}", certain=False)]


def _partial(v, refused: bool) -> Reason | None:
    """A partial kernel the compared rules refuse: what PyTorch computes in it."""
    if not refused:
        return None
    ops = ", ".join(f"{o.op} ({o.where()})" for o in v.torch_ops[:3])
    more = f" (+{len(v.torch_ops) - 3} more)" if len(v.torch_ops) > 3 else ""
    return Reason(
        "rules", f"a partial kernel, refused by these rules: PyTorch computes {ops}{more}"
    )


def _version(r: TaskResult, t: TheirResult) -> Reason | None:
    ours = r.task.get("hash")
    if t.problem_hash and ours and t.problem_hash != ours:
        return Reason("version", f"problem text differs: content hash ours {ours}, "
                                 f"theirs {t.problem_hash}")  # fmt: skip
    return None


def _ours_stricter(v, t: TheirResult, config: EnvConfig) -> Reason:
    err = f" (our largest error {v.max_abs_error:.3g})" if v.max_abs_error is not None else ""
    if v.input_distribution not in (None, "", "task"):
        return Reason("inputs", f"ours checked re-drawn inputs ({v.input_distribution}), on which "
                                f"a trivial output no longer passes{err}")  # fmt: skip
    if t.atol is not None and t.atol > config.atol:
        return Reason("tolerance", f"theirs is looser: atol {t.atol:g} against our "
                                   f"{config.atol:g}{err}")  # fmt: skip
    return Reason("inputs", f"ours mismatched on its input sets{err}; theirs passed its trials",
                  certain=False)  # fmt: skip


def _theirs_stricter(v, t: TheirResult, config: EnvConfig) -> Reason:
    if t.max_difference is not None and t.max_difference <= config.atol:
        return Reason("tolerance", f"their largest difference {t.max_difference:.3g} is within "
                                   f"ours (atol {config.atol:g}, rtol {config.rtol:g}), not "
                                   f"theirs{_their_atol(t)}")  # fmt: skip
    diff = f" (their largest difference {t.max_difference:.3g})" if t.max_difference else ""
    return Reason("inputs", f"theirs mismatched on its trials{diff}; ours passed its input sets",
                  certain=False)  # fmt: skip


def _their_atol(t: TheirResult) -> str:
    return f" (atol {t.atol:g})" if t.atol is not None else ""


def _guard(violations: list[Violation], message: str) -> str:
    """Which of our checks caught it, and the line of its first finding."""
    if not violations:  # a refusal that names no rule (a malformed request from the process)
        return f"our guard: {_line(message)[:240]}"
    first = violations[0]
    more = f" (+{len(violations) - 1} more)" if len(violations) > 1 else ""
    return f"{_CHECKS.get(first.check, 'our guard')}: {first.message[:240]}{more}"


def _line(text: str) -> str:
    lines = (text or "").strip().splitlines()
    return lines[0][:200] if lines else "no message"


def write_comparison(c: Comparison, out_dir: str | Path) -> tuple[Path, Path]:
    """OUT/compare.md (a table, the counts, the notes) and OUT/compare.json (every row)."""
    out = Path(out_dir)
    summary = c.summary()
    data = {"run": c.run, "theirs": c.theirs, "rules": c.rules, "summary": summary,
            "notes": list(c.notes), "rows": [asdict(r) for r in c.rows]}  # fmt: skip
    (out / REPORT_JSON).write_text(json.dumps(data, indent=1) + "\n")
    lines = ["# Our verdicts beside theirs", "",
             f"Ours: {c.run}, by the {c.rules} rules. Theirs: {c.theirs}.", ""]  # fmt: skip
    lines.append(
        f"{summary['compared']} problems in both: {summary['same']} the same, "
        f"{summary['different']} different; {summary['only_ours']} only in ours, "
        f"{summary['only_theirs']} only in theirs."
    )
    if summary["reasons"]:
        lines += ["", "Reasons of the differences: " + ", ".join(
            f"{k} {n}" for k, n in summary["reasons"].items()) + "."]  # fmt: skip
    lines += ["", *(line for note in c.notes for line in (note, ""))] if c.notes else [""]
    lines += ["| problem | task | ours | theirs | ours vs eager | theirs speed-up | verdict |",
              "| --- | --- | --- | --- | --- | --- | --- |"]  # fmt: skip
    for r in c.rows:
        cells = [f"L{r.level} #{r.problem_id}", r.task or "—", r.ours or "—", r.theirs or "—",
                 _x(r.ours_speedup), _x(r.theirs_speedup), verdict_text(r)]  # fmt: skip
        lines.append("| " + " | ".join(cell.replace("|", "/") for cell in cells) + " |")
    (out / REPORT_MD).write_text("\n".join(lines) + "\n")
    return out / REPORT_MD, out / REPORT_JSON


def verdict_text(r: Row) -> str:
    """ "same", or the reasons, as one cell."""
    head = "same" if r.same else "different" if r.same is False else "one side only"
    if not r.reasons:
        return head
    return f"{head}: " + "; ".join(
        f"{x.kind}{'' if x.certain else ' (likely)'}: {x.detail}" for x in r.reasons
    )


def _x(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}x"
