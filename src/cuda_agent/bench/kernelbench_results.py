"""Another harness's verdicts on KernelBench problems, read for `cuda-agent compare`.

Two shapes are read:
- KernelBench's `eval_results.json` (its `scripts/eval_from_generations.py` writes one per level
  and run): problem id -> a sample record, or a list of them, each with `sample_id`, `compiled`,
  `correctness`, `metadata` (errors, `max_difference`, `hardware`), `runtime` and, in later
  versions, `ref_runtime`. The file names no level, so the caller supplies it.
- A JSON list of rows that name the problem by `task_id` (`level_L_problem_N`) and the sample by
  `solution_id` (ending `_sample_K` or `_solution_K`, or a number), with `compiled`,
  `correctness`, `metadata` as above and `runtime` (ms, -1 where untimed): the shape a common fork
  of KernelBench writes as its eval_results.json.
- JSONL (or a JSON list) of rows: `level`, `problem_id`, `compiled`, `correct` (or
  `correctness`), and optionally `speedup`, `runtime`, `ref_runtime`, `sample_id`, `timeout`,
  `error`, `max_difference`, `atol`, `mode` (the module's train/eval mode), `hash` or `code` (the
  problem's text, so its version can be compared).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from cuda_agent.errors import UserError
from cuda_agent.task import content_hash

KERNELBENCH_MODE = "train"  # KernelBench never calls .eval() on the reference or the candidate
SHAPES = (
    "expected KernelBench's eval_results.json (problem id -> samples with compiled and "
    "correctness, or a list of rows with task_id, solution_id, compiled and correctness) or "
    "JSONL rows with level, problem_id, compiled and correct"
)
_TASK_ID = re.compile(r"level_?(\d+)_problem_?(\d+)")
_SOLUTION_ID = re.compile(r"(?:^|_)(?:sample|solution)_?(\d+)$")
_ERROR_KEYS = ("compilation_error", "runtime_error", "cuda_error", "other_error",
               "correctness_issue", "error_during_performance", "error")  # fmt: skip


@dataclass(frozen=True)
class TheirResult:
    """One sample's verdict by the other harness."""

    level: int
    problem_id: int
    sample_id: int
    compiled: bool
    correct: bool
    speedup: float | None = None  # over their reference, when they timed both
    runtime: float | None = None  # their kernel's mean time as they recorded it (ms), if timed
    timeout: bool = False
    error: str | None = None  # the first line of what went wrong, as they recorded it
    runtime_error: bool = False  # it compiled and then raised, rather than mismatched
    max_difference: float | None = None  # their largest |output - reference| over the trials
    atol: float | None = None  # their tolerance, when recorded
    mode: str | None = None  # the module's mode they ran (train/eval), when known
    problem_hash: str | None = None  # the problem's content hash, when their file has it
    hardware: str | None = None

    @property
    def outcome(self) -> str:
        if self.timeout:
            return "timeout"
        if not self.compiled:
            return "compile_error"
        if self.correct:
            return "correct"
        return "runtime_error" if self.runtime_error else "mismatch"


def read_their_results(path: str | Path, level: int | None = None, sample: int = 0) -> list[
    TheirResult
]:  # fmt: skip
    """Their verdicts, sample `sample` of each problem; `level` for files that name none."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"--kernelbench-results {path}: no such file")
    text = path.read_text(errors="replace")
    if path.suffix.lower() == ".jsonl":
        rows = [(f"{path}:{n}", _parse(line, f"{path}:{n}")) for n, line in
                enumerate(text.splitlines(), 1) if line.strip()]  # fmt: skip
        found = [_from_row(where, row) for where, row in rows]
    else:
        data = _parse(text, str(path))
        if isinstance(data, list):
            found = [_from_row(f"{path} item {n}", row) for n, row in enumerate(data)]
        elif isinstance(data, dict):
            found = _from_eval_results(path, data, level)
        else:
            raise UserError(f"{path}: {SHAPES}")
    if not found:
        raise UserError(f"{path}: holds no results; {SHAPES}")
    if level is not None:
        found = [r for r in found if r.level == level]
    return [r for r in found if r.sample_id == sample]


def _parse(text: str, where: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise UserError(f"{where}: not valid JSON ({err.msg} at line {err.lineno})") from None


def _from_row(where: str, row) -> TheirResult:
    if not isinstance(row, dict):
        raise UserError(f"{where}: {SHAPES}")
    if "task_id" in row and "level" not in row:
        return _from_task_row(where, row)
    correct = row.get("correct", row.get("correctness"))
    given = {"level": row.get("level"), "problem_id": row.get("problem_id"),
             "compiled": row.get("compiled"), "correct": correct}  # fmt: skip
    missing = [k for k, v in given.items() if v is None]
    if missing:
        raise UserError(f"{where}: missing {', '.join(missing)}; {SHAPES}")
    code = row.get("code")
    problem_hash = row.get("hash") or (content_hash(code) if isinstance(code, str) else None)
    return TheirResult(
        level=_int(row["level"], where, "level"),
        problem_id=_int(row["problem_id"], where, "problem_id"),
        sample_id=_int(row.get("sample_id", 0), where, "sample_id"),
        compiled=bool(row["compiled"]),
        correct=bool(correct),
        speedup=_speedup(row),
        runtime=_runtime(row),
        timeout=bool(row.get("timeout", False)),
        error=_first_line(row.get("error")),
        runtime_error=bool(row.get("runtime_error", False)),
        max_difference=_number(row.get("max_difference")),
        atol=_number(row.get("atol")),
        mode=row.get("mode") or row.get("module_mode"),
        problem_hash=problem_hash,
        hardware=row.get("hardware"),
    )


def _from_task_row(where: str, row: dict) -> TheirResult:
    """A row of the fork's list: the problem and sample named in strings."""
    task = _TASK_ID.search(str(row["task_id"]))
    if task is None:
        raise UserError(f"{where}: task_id {row['task_id']!r} names no level_L_problem_N; {SHAPES}")
    if "compiled" not in row:
        raise UserError(f"{where}: missing compiled; {SHAPES}")
    solution = row.get("solution_id", 0)
    if isinstance(solution, str) and not solution.isdigit():
        found = _SOLUTION_ID.search(solution)
        if found is None:
            raise UserError(
                f"{where}: solution_id {solution!r} ends in no _sample_K or _solution_K; {SHAPES}"
            )
        solution = found[1]
    return _from_sample(row, int(task[1]), int(task[2]), _int(solution, where, "solution_id"))


def _from_sample(sample: dict, level: int, problem_id: int, sample_id: int) -> TheirResult:
    """A sample record as KernelBench writes it: `compiled`, `correctness`, `metadata`."""
    meta = sample.get("metadata") if isinstance(sample.get("metadata"), dict) else {}
    return TheirResult(
        level=level,
        problem_id=problem_id,
        sample_id=sample_id,
        compiled=bool(sample["compiled"]),
        correct=bool(sample.get("correctness", False)),
        speedup=_speedup(sample),
        runtime=_runtime(sample),
        timeout=bool(meta.get("timeout", False)),
        error=next((_first_line(meta[k]) for k in _ERROR_KEYS if meta.get(k)), None),
        runtime_error="runtime_error" in meta,
        max_difference=_max_difference(meta.get("max_difference")),
        mode=KERNELBENCH_MODE,
        hardware=meta.get("hardware"),
    )


def _from_eval_results(path: Path, data: dict, level: int | None) -> list[TheirResult]:
    if level is None:
        raise UserError(
            f"{path}: KernelBench's eval_results.json names no level (it writes one file per "
            "level); pass --level N"
        )
    found = []
    for key, samples in data.items():
        if not str(key).isdigit():
            raise UserError(f"{path}: key {key!r} is not a problem id; {SHAPES}")
        for sample in samples if isinstance(samples, list) else [samples]:
            where = f"{path} problem {key}"
            if not isinstance(sample, dict) or "compiled" not in sample:
                raise UserError(f"{where}: {SHAPES}")
            sample_id = _int(sample.get("sample_id", 0), where, "sample_id")
            found.append(_from_sample(sample, level, int(key), sample_id))
    return found


def _speedup(row: dict) -> float | None:
    """`speedup` as given, else their reference's time over the candidate's (same units)."""
    given = _number(row.get("speedup"))
    if given is not None:
        return given if given > 0 else None
    runtime, ref = _number(row.get("runtime")), _number(row.get("ref_runtime"))
    return ref / runtime if runtime and ref and runtime > 0 and ref > 0 else None


def _runtime(row: dict) -> float | None:
    """KernelBench writes -1 where it timed nothing."""
    runtime = _number(row.get("runtime"))
    return runtime if runtime is not None and runtime > 0 else None


def _max_difference(value) -> float | None:
    """KernelBench appends one figure per failed trial, as strings."""
    values = value if isinstance(value, list) else [value]
    numbers = [n for n in (_number(v) for v in values) if n is not None]
    return max(numbers) if numbers else None


def _number(value) -> float | None:
    try:
        return float(value) if value is not None and not isinstance(value, bool) else None
    except (TypeError, ValueError):
        return None


def _int(value, where: str, name: str) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise UserError(f"{where}: {name} {value!r} is not a whole number") from None


def _first_line(value) -> str | None:
    if value is None or value == "":
        return None
    lines = str(value).strip().splitlines()
    return lines[0][:200] if lines else None
