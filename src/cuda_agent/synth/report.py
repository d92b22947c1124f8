"""The run's report: funnel per stage, operator counts, operator frequencies, runtimes, and the
dataset's invariants (duplicates, label mismatches, KernelBench matches) checked on what was
exported. Markdown plus PNG plots, and `summary.json` with every number for scripts."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

from cuda_agent.synth.decontam import Reference
from cuda_agent.synth.dedup import signature_key, source_key
from cuda_agent.synth.journal import STAGES, Journal


def summarize(journals: dict[str, Journal], ids: list[int], rows: list[dict],
              reference: Reference) -> dict:  # fmt: skip
    funnel = []
    for stage in STAGES:
        records = [r for i in ids if (r := journals[stage].get(i)) is not None]
        reasons = Counter(r.get("reason") or "?" for r in records if not r.get("ok"))
        passed = sum(1 for r in records if r.get("ok"))
        funnel.append({"stage": stage, "in": len(records), "passed": passed,
                       "rejected": dict(reasons.most_common())})  # fmt: skip
    funnel.append({"stage": "export", "in": len(rows), "passed": len(rows), "rejected": {}})
    compiled = journals["compile"]
    pending = sum(1 for i in ids if (r := journals["decontam"].get(i)) is not None and r["ok"]
                  and i not in compiled)  # fmt: skip
    counts = Counter(r["num_ops"] for r in rows)
    ops = Counter(op for r in rows for op in json.loads(r["ops"]))
    return {
        "candidates": len(ids),
        "exported": len(rows),
        "funnel": funnel,
        "not_compiled": pending,  # passed the cheap stages; not needed once the target was met
        "dedup": _reasons(funnel, "dedup"),
        "decontam": _reasons(funnel, "decontam"),
        "op_counts": {str(k): counts[k] for k in sorted(counts)},
        "share_3_plus_ops": (sum(v for k, v in counts.items() if k >= 3) / len(rows))
        if rows
        else 0.0,
        "op_frequencies": dict(ops.most_common()),
        "eager_ms": sorted(r["eager_ms"] for r in rows),
        "invariants": invariants(journals, rows, reference),
        "reference_untraced": list(reference.untraced),
    }


def invariants(journals: dict[str, Journal], rows: list[dict], reference: Reference) -> dict:
    """Recomputed on the exported rows, independently of the stages that should ensure them."""
    sources = Counter(source_key(r["code"]) for r in rows)
    sigs = Counter(signature_key(journals["labels"].get(r["candidate"])["signature"]) for r in rows)
    mismatches = 0
    kernelbench = 0
    for r in rows:
        rec = journals["labels"].get(r["candidate"])
        counts = rec.get("label_counts") or {}
        mismatches += sum(1 for op in json.loads(r["ops"]) if counts.get(op, 0) == 0)
        kernelbench += tuple(tuple(a) for a in rec["aten"]) in reference.signatures
    return {
        "duplicate_sources": sum(n - 1 for n in sources.values()),
        "duplicate_signatures": sum(n - 1 for n in sigs.values()),
        "label_mismatches": mismatches,
        "kernelbench_signature_matches": kernelbench,
    }


def _reasons(funnel: list[dict], stage: str) -> dict:
    return next(f["rejected"] for f in funnel if f["stage"] == stage)


def write_report(out: Path, summary: dict, seconds: dict[str, float], notes: list[str]) -> Path:
    plots = out / "plots"
    plots.mkdir(parents=True, exist_ok=True)
    _plots(summary, plots)
    (out / "summary.json").write_text(json.dumps({**summary, "seconds": seconds,
                                                  "notes": notes}, indent=2) + "\n")  # fmt: skip
    lines = ["# Synthesis run", "", f"{summary['candidates']} candidates, "
             f"{summary['exported']} tasks exported.", ""]  # fmt: skip
    lines += ["## Funnel", "", f"Wall time {seconds.get('run', 0.0):.0f} s (setup "
              f"{seconds.get('setup', 0.0):.0f} s); worker-s: the children's time per stage.", "",
              "| stage | in | passed | rejected (why) | worker-s |",
              "| --- | ---: | ---: | --- | ---: |"]  # fmt: skip
    for f in summary["funnel"]:
        why = ", ".join(f"{k}: {v}" for k, v in f["rejected"].items()) or "—"
        secs = seconds.get(f["stage"])
        lines.append(f"| {f['stage']} | {f['in']} | {f['passed']} | {why} | "
                     f"{'' if secs is None else f'{secs:.1f}'} |")  # fmt: skip
    if summary["not_compiled"]:
        lines += ["", f"{summary['not_compiled']} candidates passed decontam but were not "
                  "compiled: the target was met before them."]  # fmt: skip
    inv = summary["invariants"]
    lines += ["", "## Invariants of the exported tasks", "",
              f"- duplicates: {inv['duplicate_sources']} by source, "
              f"{inv['duplicate_signatures']} by operator signature",
              f"- label mismatches: {inv['label_mismatches']}",
              f"- KernelBench signature matches: {inv['kernelbench_signature_matches']}",
              f"- tasks with 3 or more operators: {summary['share_3_plus_ops']:.0%}",
              f"- dropped as duplicates: {_fmt(summary['dedup'])}",
              f"- dropped by decontamination: {_fmt(summary['decontam'])}"]  # fmt: skip
    lines += ["", "## Operators per task", "", "| operators | tasks |", "| ---: | ---: |"]
    lines += [f"| {k} | {v} |" for k, v in summary["op_counts"].items()]
    lines += ["", "## Most frequent operators", "", "| operator | tasks |", "| --- | ---: |"]
    lines += [f"| `{k}` | {v} |" for k, v in list(summary["op_frequencies"].items())[:25]]
    if notes:
        lines += ["", "## Notes", "", *[f"- {n}" for n in notes]]
    lines += ["", "![funnel](plots/funnel.png)", "![operators per task](plots/op_counts.png)",
              "![operator frequencies](plots/op_frequencies.png)",
              "![eager runtime](plots/runtime.png)", ""]  # fmt: skip
    path = out / "report.md"
    path.write_text("\n".join(lines))
    return path


def _fmt(reasons: dict) -> str:
    return ", ".join(f"{v} ({k})" for k, v in reasons.items()) or "none"


def _plots(summary: dict, folder: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    stages = [f["stage"] for f in summary["funnel"]]
    fig, ax = plt.subplots(figsize=(7, 3.5))
    ax.bar(stages, [f["passed"] for f in summary["funnel"]], color="#4c72b0")
    ax.set_ylabel("candidates passing")
    ax.set_title("Funnel per stage")
    _save(fig, folder / "funnel.png")

    fig, ax = plt.subplots(figsize=(5, 3.5))
    counts = summary["op_counts"]
    ax.bar(list(counts), list(counts.values()), color="#55a868")
    ax.set_xlabel("operators per task")
    ax.set_ylabel("tasks")
    _save(fig, folder / "op_counts.png")

    top = list(summary["op_frequencies"].items())[:25][::-1]
    fig, ax = plt.subplots(figsize=(7, max(2.5, 0.28 * len(top) + 1)))
    ax.barh([k.replace("torch.nn.functional.", "F.") for k, _ in top], [v for _, v in top])
    ax.set_xlabel("tasks using it")
    _save(fig, folder / "op_frequencies.png")

    fig, ax = plt.subplots(figsize=(6, 3.5))
    ms = [m for m in summary["eager_ms"] if m > 0]
    if ms:
        lo, hi = math.log10(min(ms)), math.log10(max(ms)) + 1e-9
        bins = [10 ** (lo + (hi - lo) * k / 20) for k in range(21)]
        ax.hist(ms, bins=bins, color="#c44e52")
        ax.set_xscale("log")
    ax.set_xlabel("eager runtime (ms)")
    ax.set_ylabel("tasks")
    _save(fig, folder / "runtime.png")


def _save(fig, path: Path) -> None:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    import matplotlib.pyplot as plt

    plt.close(fig)
