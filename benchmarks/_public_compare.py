"""Our verdicts on the files of the public corpora beside the verdicts their sources gave them:
per file, whether the problem text is the one the source scored, whether the two agree on
correctness and on compiling, both speed-ups, and for a disagreement its named reasons.

Our verdicts are read from the `cuda-agent bench` run folders (RunStore), and `compare_run` of
`cuda-agent compare` sets each sample beside the source's; its reasons travel with each row.
The named reasons, in order: `hack` (our guard refused what the source passed: a violation of an
integrity rule), `changed_problem` (the source scored another text of the problem), `precision`
(the failing side's largest error is within PRECISION_FACTOR times our absolute tolerance),
`different_gpu` (the failing side's error is one of its GPU: memory, architecture, resources),
`time_limit`, else `unexplained`. Where the GPUs differ, each row says so.
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from dataclasses import replace
from pathlib import Path

from _public_corpora import Corpus, Submission

from cuda_agent.bench import RunStore, TaskResult, compare_run
from cuda_agent.errors import UserError
from cuda_agent.sandbox import EnvConfig
from cuda_agent.task import Task, content_hash

PRECISION_FACTOR = 10
TARGET = 0.95
LABELS = {"hack": "a hack we catch", "changed_problem": "a changed problem",
          "precision": "a precision difference", "different_gpu": "a different GPU",
          "time_limit": "a time limit", "unexplained": "unexplained"}  # fmt: skip
_NO_VERDICT = ("no_gpu", "harness_error", "missing")
_REFUSED = ("violation", "compile_error", "invalid")
_GPU_ERROR = re.compile(
    r"out of memory|no kernel image|too many resources requested|invalid device function|"
    r"shared memory|unsupported gpu architecture|not supported on this gpu",
    re.IGNORECASE,
)
_TIMED_OUT = re.compile(r"timed? ?out|timeout", re.IGNORECASE)


def normalized(text: str) -> str:
    """A problem's text without what cannot change its meaning: line endings, trailing spaces,
    blank lines at either end."""
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    return "\n".join(lines).strip("\n")


def problem_status(corpus: Corpus, theirs: str | None, ours: Task | None) -> tuple[str, str]:
    """same | differs | unknown | absent (no such problem in our set), and why."""
    if ours is None:
        return "absent", "no problem of this level and id in --kernelbench"
    if theirs is None:
        return "unknown", "the corpus carries no copy of the problem"
    same = normalized(theirs) == normalized(ours.code)
    if corpus.problems_scored == "hub":
        copy = "the same as ours" if same else "not ours"
        return (
            "unknown",
            f"the source read the Hugging Face dataset; the repository's copy is {copy}",
        )
    if same:
        return "same", ""
    return "differs", _first_difference(theirs, ours.code)


def _first_difference(theirs: str, ours: str) -> str:
    a, b = normalized(theirs).split("\n"), normalized(ours).split("\n")
    for n, (x, y) in enumerate(zip(a, b, strict=False), 1):
        if x != y:
            return f"line {n}: theirs {x.strip()[:60]!r}, ours {y.strip()[:60]!r}"
    return f"theirs {len(a)} lines, ours {len(b)}"


def with_problem_hash(sub: Submission, status: str, theirs: str | None, ours: Task | None):
    """The source's verdict carrying the hash of the text it scored, where it is known, for
    compare_run's version check (whitespace alone does not make a text another)."""
    if status == "same" and ours is not None:
        return replace(sub.theirs, problem_hash=ours.hash)
    if status == "differs" and theirs is not None:
        return replace(sub.theirs, problem_hash=content_hash(theirs))
    return sub.theirs


def our_results(run: Path) -> dict[tuple[int, int, int], TaskResult]:
    """(level, problem id, sample) -> our latest result in a bench run folder (none yet: {})."""
    if not (run / RunStore.META).is_file():
        return {}
    out = {}
    for r in RunStore(run).results():
        if r.level is not None and r.task.get("problem_id") is not None:
            out[(r.level, r.task["problem_id"], r.sample or 0)] = r
    return out


def compare_rows(run: Path, theirs: list, level: int) -> dict[tuple[int, int, int], object]:
    """compare_run's row for each (level, problem id, sample) of `theirs` our run has scored."""
    rows = {}
    for sample in sorted({t.sample_id for t in theirs}):
        mine = [t for t in theirs if t.sample_id == sample]
        try:
            comparison = compare_run(run, mine, "the source", level=level, sample=sample,
                                     rules="kernelbench")  # fmt: skip
        except UserError:
            continue  # that sample has no result in the run yet
        for row in comparison.rows:
            if row.ours is not None and row.theirs is not None:
                rows[(row.level, row.problem_id, sample)] = row
    return rows


def judge(sub: Submission, problem: tuple[str, str], ours: TaskResult | None, row=None,
          config: EnvConfig | None = None) -> dict:  # fmt: skip
    """One file's line: both verdicts, agreement and, for a disagreement, its reasons."""
    t = sub.theirs
    line = {"corpus": sub.corpus, "source": sub.source, "model": sub.model, "file": sub.path,
            "level": sub.level, "problem_id": sub.problem_id, "sample": sub.sample,
            "source_sample": sub.source_sample, "problem_text": problem[0],
            "problem_text_detail": problem[1],
            "theirs": {"outcome": t.outcome, "compiled": t.compiled, "correct": t.correct,
                       "speedup": t.speedup, "runtime_ms": t.runtime, "gpu": t.hardware,
                       "max_difference": t.max_difference, "error": t.error},
            "ours": None, "verdict": "not_run", "agree_correct": None, "agree_compile": None,
            "reason": None, "reasons": [], "compare": [], "gpu_differs": None}  # fmt: skip
    if ours is None:
        return line
    v = ours.verdict
    status = str(ours.status)
    line["ours"] = {"status": status, "compiled": v.compiled, "correct": _correct(ours),
                    "speedup_vs_eager": v.speedup_vs_eager, "candidate_ms": v.candidate_ms,
                    "eager_ms": v.eager_ms, "gpu": v.gpu, "max_abs_error": v.max_abs_error,
                    "violations": [x.message for x in v.violations[:3]],
                    "message": _line(v.message)}  # fmt: skip
    if row is not None:
        line["compare"] = [f"{x.kind}: {x.detail}" for x in row.reasons]
    if v.gpu and t.hardware:
        line["gpu_differs"] = v.gpu.strip().lower() != t.hardware.strip().lower()
    if status in _NO_VERDICT:
        line["verdict"] = "no_verdict"
        return line
    line["agree_correct"] = _correct(ours) == t.correct
    line["agree_compile"] = None if status == "violation" else v.compiled == t.compiled
    line["verdict"] = "agree" if line["agree_correct"] else "disagree"
    if not line["agree_correct"]:
        line["reasons"] = _reasons(sub, problem, ours, row, config or EnvConfig())
        line["reason"] = line["reasons"][0]["kind"]
    return line


def _correct(r: TaskResult) -> bool:
    return str(r.status) == "ok" and r.verdict.correct


def _reasons(sub: Submission, problem, ours: TaskResult, row, config: EnvConfig) -> list[dict]:
    t, v, status = sub.theirs, ours.verdict, str(ours.status)
    found = []
    if status == "violation":
        guard = next((x.detail for x in (row.reasons if row else ()) if x.kind == "guard"), None)
        first = v.violations[0].message if v.violations else v.message
        found.append(("hack", guard or _line(first)))
    if problem[0] == "differs":
        found.append(("changed_problem", problem[1]))
    bound = PRECISION_FACTOR * config.atol
    if status == "mismatch" and t.correct and v.max_abs_error is not None and (
            v.max_abs_error <= bound):  # fmt: skip
        found.append(("precision", f"our largest error {v.max_abs_error:.3g} is within "
                                   f"{PRECISION_FACTOR}x our atol {config.atol:g}"))  # fmt: skip
    if _correct(ours) and t.outcome == "mismatch" and t.max_difference is not None and (
            t.max_difference <= bound):  # fmt: skip
        found.append(("precision", f"their largest difference {t.max_difference:.3g} is within "
                                   f"{PRECISION_FACTOR}x our atol {config.atol:g}"))  # fmt: skip
    failed = (t.error or "") if t.correct is False else (v.message or "")
    if _GPU_ERROR.search(failed):
        side = "theirs" if not t.correct else "ours"
        found.append(("different_gpu", f"{side} failed on its GPU ({_line(failed)}); theirs "
                                       f"{t.hardware or '?'}, ours {v.gpu or '?'}"))  # fmt: skip
    if status == "timeout" or t.timeout or _TIMED_OUT.search(t.error or ""):
        found.append(("time_limit", "ours ran out of time" if status == "timeout" else
                      "theirs ran out of time"))  # fmt: skip
    if not found:
        said = "; ".join(f"{x.kind}: {x.detail}" for x in (row.reasons if row else ()))
        found.append(("unexplained", said or f"ours {status}, theirs {t.outcome}"))
    return [{"kind": kind, "detail": detail} for kind, detail in found]


def _line(text: str | None) -> str:
    lines = (text or "").strip().splitlines()
    return lines[0][:200] if lines else ""


def summarize(lines: list[dict]) -> dict:
    """Counts per corpus and overall, the agreement where the problem text is the one the source
    scored, every disagreement with its reasons, and the files the source passed that we refuse."""
    corpora = list(dict.fromkeys(line["corpus"] for line in lines))
    summary = {"by_corpus": {c: _counts([x for x in lines if x["corpus"] == c]) for c in corpora},
               "overall": _counts(lines)}  # fmt: skip
    summary["disagreements"] = [_brief(x) for x in lines if x["verdict"] == "disagree"]
    summary["refused_passed_by_source"] = [
        _brief(x) for x in lines
        if x["verdict"] == "disagree" and x["theirs"]["correct"] and x["ours"]["status"] in _REFUSED
    ]  # fmt: skip
    overall = summary["overall"]
    rate = overall["agreement_where_text_same"]
    summary["goal"] = {
        "agreement_where_text_same": rate, "target": TARGET,
        "met": rate is not None and rate >= TARGET,
        "refused_unexplained": sum(x["reason"] == "unexplained"
                                   for x in summary["refused_passed_by_source"]),
    }  # fmt: skip
    return summary


def _counts(lines: list[dict]) -> dict:
    compared = [x for x in lines if x["verdict"] in ("agree", "disagree")]
    texts = {}
    for kind in ("same", "differs", "unknown", "absent"):
        mine = [x for x in compared if x["problem_text"] == kind]
        texts[kind] = {
            "files": sum(x["problem_text"] == kind for x in lines),
            "compared": len(mine),
            "agree": sum(x["verdict"] == "agree" for x in mine),
        }
    same = texts["same"]
    compiled = [x for x in compared if x["agree_compile"] is not None]
    pairs = [x["ours"]["speedup_vs_eager"] / x["theirs"]["speedup"] for x in compared
             if x["ours"]["correct"] and x["theirs"]["correct"] and x["theirs"]["speedup"]
             and x["ours"]["speedup_vs_eager"]]  # fmt: skip
    return {
        "files": len(lines),
        "not_run": sum(x["verdict"] == "not_run" for x in lines),
        "no_verdict": sum(x["verdict"] == "no_verdict" for x in lines),
        "compared": len(compared),
        "agree": sum(x["verdict"] == "agree" for x in compared),
        "agreement": _rate(sum(x["verdict"] == "agree" for x in compared), len(compared)),
        "agreement_where_text_same": _rate(same["agree"], same["compared"]),
        "problem_text": texts,
        "compile_compared": len(compiled),
        "compile_agree": sum(bool(x["agree_compile"]) for x in compiled),
        "reasons": dict(Counter(x["reason"] for x in compared if x["reason"]).most_common()),
        "speedup_pairs": len(pairs),
        "median_speedup_ratio_ours_over_theirs": _median(pairs),
        "gpu_differs": sum(bool(x["gpu_differs"]) for x in lines),
    }  # fmt: skip


def _median(values: list[float]) -> float | None:
    return round(statistics.median(values), 3) if values else None


def _rate(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def _brief(x: dict) -> dict:
    return {"corpus": x["corpus"], "file": x["file"], "level": x["level"],
            "problem_id": x["problem_id"], "sample": x["sample"], "problem_text": x["problem_text"],
            "ours": x["ours"]["status"], "theirs": x["theirs"]["outcome"], "reason": x["reason"],
            "detail": x["reasons"][0]["detail"] if x["reasons"] else ""}  # fmt: skip


def summary_markdown(summary: dict, facts: dict) -> str:
    """The summary as markdown: a table per corpus, the goal, the disagreements."""
    out = ["# Public submissions: our verdicts beside their sources'", "",
           f"GPU {facts.get('gpu') or '?'}, commit {facts.get('commit', '?')}, "
           f"{facts.get('date', '?')}; rules kernelbench.", "",
           "| corpus | files | compared | agree | agreement | text same: agree/compared | "
           "compile agree | no verdict | not run | reasons |",
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]  # fmt: skip
    for name, c in [*summary["by_corpus"].items(), ("all", summary["overall"])]:
        same = c["problem_text"]["same"]
        reasons = ", ".join(f"{LABELS.get(k, k)} {n}" for k, n in c["reasons"].items()) or "—"
        out.append(f"| {name} | {c['files']} | {c['compared']} | {c['agree']} | "
                   f"{_pct(c['agreement'])} | {same['agree']}/{same['compared']} | "
                   f"{c['compile_agree']}/{c['compile_compared']} | {c['no_verdict']} | "
                   f"{c['not_run']} | {reasons} |")  # fmt: skip
    goal = summary["goal"]
    met = ("no file compared yet" if goal["agreement_where_text_same"] is None
           else "met" if goal["met"] else "not met")  # fmt: skip
    out += ["", f"Agreement where the problem text is the one the source scored: "
                f"{_pct(goal['agreement_where_text_same'])} (goal {_pct(goal['target'])}: {met}); "
                f"files the source passed that we refuse without an explanation: "
                f"{goal['refused_unexplained']}.", ""]  # fmt: skip
    for title, rows in (("Disagreements", summary["disagreements"]),
                        ("Files the source passed that we refuse",
                         summary["refused_passed_by_source"])):  # fmt: skip
        out += [f"## {title} ({len(rows)})", ""]
        if rows:
            out += ["| corpus | file | L/N/K | text | ours | theirs | reason | detail |",
                    "| --- | --- | --- | --- | --- | --- | --- | --- |"]  # fmt: skip
            out += [f"| {r['corpus']} | {r['file']} | {r['level']}/{r['problem_id']}/{r['sample']} "
                    f"| {r['problem_text']} | {r['ours']} | {r['theirs']} | "
                    f"{LABELS.get(r['reason'], r['reason'])} | {r['detail'].replace('|', '/')} |"
                    for r in rows]  # fmt: skip
        out.append("")
    return "\n".join(out)


def _pct(rate: float | None) -> str:
    return "—" if rate is None else f"{100 * rate:.1f} %"
