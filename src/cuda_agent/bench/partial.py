"""Partial kernels: correct solutions that leave part of the work to PyTorch, which the
kernelbench rules allow and list in the verdict (`torch_ops`). Where a run has any, the report
gives its pass rate both ways: counting them, as KernelBench scores, and without them, as the
cuda-agent rules would (they refuse PyTorch compute)."""

from __future__ import annotations

from cuda_agent.bench import metrics as m
from cuda_agent.bench.store import TaskResult
from cuda_agent.bench.table import Table, pct
from cuda_agent.sandbox import DEFAULT_RULES, Verdict


def is_partial(v: Verdict) -> bool:
    """Correct, with PyTorch computing part of the result."""
    return v.correct and bool(v.torch_ops)


def partial_table(results: list[TaskResult]) -> Table:
    """Per level and overall: the pass rate with and without partial kernels (one result per
    task). No rows where no verdict is a partial kernel."""
    header = ["group", "tasks", "pass rate", "pass rate without partial kernels",
              "partial kernels"]  # fmt: skip
    title = "Partial kernels (PyTorch computes part of the result)"
    if not any(is_partial(r.verdict) for r in results):
        return Table(title, header, [], "partial")
    groups: dict[str, list[Verdict]] = {}
    for r in sorted(results, key=lambda r: (r.level is None, r.level or 0)):
        groups.setdefault(m.level_key(r.level), []).append(r.verdict)
    groups[m.OVERALL] = [r.verdict for r in results]
    rows = []
    for key, verdicts in groups.items():
        n, partial = len(verdicts), sum(is_partial(v) for v in verdicts)
        passed = sum(v.correct for v in verdicts)
        rows.append([key, str(n), pct(passed / n), pct((passed - partial) / n), str(partial)])
    return Table(title, header, rows, "partial")


def rules_line(rules: str, results: list[TaskResult]) -> list[str]:
    """The report's line on the rules profile, where it is not the default's."""
    if rules == DEFAULT_RULES:
        return []
    partial = sum(is_partial(r.verdict) for r in results)
    correct = sum(r.verdict.correct for r in results)
    return [
        f"Judged by the {rules} rules: PyTorch compute beside the kernels is allowed and listed "
        f"in each verdict's torch_ops; {partial} of the {correct} correct tasks are partial "
        "kernels (see Partial kernels)."
    ]
