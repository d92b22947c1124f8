"""Load task sets from any path a user gives: a .py file, a folder, a KernelBench checkout,
JSONL with a `code` field, or parquet with a `code` column (the CUDA-Agent-Ops-6K schema); or by
name: `builtin`, and `kernelbench` (the user's copy or the Hugging Face dataset: kernelbench.py)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path

from cuda_agent.task.kernelbench import (
    DEFAULT_LEVELS,
    HOW_TO_POINT,
    KERNELBENCH,
    kernelbench_name,
    kernelbench_source,
    load_from_hub,
)
from cuda_agent.task.limits import check_size
from cuda_agent.task.types import Task, TaskSource
from cuda_agent.task.validate import TaskError, check_program, declared_ops

BUILTIN_DIR = Path(__file__).parent / "builtin"
BUILTIN = "builtin"
_KB_FILE = re.compile(r"^(\d+)_")


def load_tasks(
    path: str | Path | None = None,
    levels: Iterable[int] | None = None,
    problem_ids: Iterable[int] | None = None,
    kernelbench: str | Path | None = None,
) -> list[Task]:
    """Every task at `path` (the built-in set when None or "builtin"), validated by parsing.

    `levels` and `problem_ids` select KernelBench problems; selecting on a set whose tasks carry
    no KernelBench level is an error, as is a selection that matches nothing. `path` "kernelbench"
    is KernelBench's levels 1-3 (or `levels`) from the copy at `kernelbench`, else the one
    $CUDA_AGENT_KERNELBENCH names, else the Hugging Face dataset.
    """
    if str(path) == KERNELBENCH:
        return _load_kernelbench(kernelbench, levels, problem_ids)
    if path is None or str(path) == BUILTIN:
        tasks = _load_folder(BUILTIN_DIR, kind="builtin")
    else:
        tasks = _load_path(Path(path))
    if not tasks:
        raise TaskError(f"{path}: no tasks found")
    return _select(tasks, path or BUILTIN, levels, problem_ids)


def _load_kernelbench(given, levels, problem_ids) -> list[Task]:
    levels = set(levels) if levels is not None else set(DEFAULT_LEVELS)
    copy = kernelbench_source(given)
    if copy is None:
        return _select(load_from_hub(sorted(levels)), KERNELBENCH, levels, problem_ids)
    tasks = _load_path(copy)
    if all(t.level is None for t in tasks):
        raise TaskError(f"{copy}: holds no KernelBench problems (no levels); {HOW_TO_POINT}")
    return _select(tasks, copy, levels, problem_ids)


def load_task(path: str | Path) -> Task:
    """One task: a .py file, or a built-in task by name (`builtin/NAME` or `NAME`)."""
    p = Path(path)
    if p.suffix == ".py" and p.is_file():
        return _load_file(p, kind="file")
    name = str(path).removeprefix(f"{BUILTIN}/").removesuffix(".py")
    builtin = BUILTIN_DIR / f"{name}.py"
    if builtin.is_file():
        return _load_file(builtin, kind="builtin")
    raise TaskError(
        f"{path}: no such task file; give a KernelBench-format .py file or a built-in task name "
        "(`cuda-agent tasks` lists them)"
    )


def _load_path(path: Path) -> list[Task]:
    if not path.exists():
        raise TaskError(f"{path}: no such file or folder")
    if path.is_dir():
        return _load_directory(path)
    suffix = path.suffix.lower()
    if suffix == ".py":
        return [_load_file(path, kind="file")]
    if suffix == ".jsonl":
        return _load_jsonl(path)
    if suffix == ".parquet":
        return _load_parquet(path)
    raise TaskError(f"{path}: unknown task format; use a .py file, a folder, .jsonl or .parquet")


def _load_directory(path: Path) -> list[Task]:
    for root in (path, path / "KernelBench"):
        level_dirs = sorted(p for p in root.glob("level[0-9]*") if p.is_dir())
        if level_dirs:
            return [t for d in level_dirs for t in _load_kernelbench_level(d)]
    if not any(path.glob("*.py")):
        raise TaskError(
            f"{path}: folder holds no .py task files (nor a KernelBench checkout with level1..3)"
        )
    return _load_folder(path, kind="file")


def _load_folder(path: Path, kind: str) -> list[Task]:
    return [_load_file(f, kind=kind) for f in sorted(path.glob("*.py")) if f.name != "__init__.py"]


def _load_file(path: Path, kind: str) -> Task:
    check_size(path.stat().st_size, str(path))
    try:
        code = path.read_text()
    except UnicodeDecodeError:
        raise TaskError(f"{path}: not a UTF-8 text file") from None
    check_program(code, str(path))
    source = TaskSource(kind=kind, path=str(path))
    return Task(name=path.stem, code=code, source=source, ops=declared_ops(code))


def _load_kernelbench_level(level_dir: Path) -> list[Task]:
    level = int(level_dir.name.removeprefix("level"))
    tasks = []
    for f in sorted(level_dir.glob("*.py"), key=_problem_sort_key):
        match = _KB_FILE.match(f.name)
        if not match:
            continue
        check_size(f.stat().st_size, str(f))
        code = f.read_text()
        check_program(code, str(f))
        source = TaskSource("kernelbench", str(f), level=level, problem_id=int(match.group(1)))
        tasks.append(Task(name=kernelbench_name(level, f.stem), code=code, source=source))
    return tasks


def _problem_sort_key(f: Path) -> tuple[int, str]:
    match = _KB_FILE.match(f.name)
    return (int(match.group(1)) if match else 10**9, f.name)


def _load_jsonl(path: Path) -> list[Task]:
    rows = []
    with path.open() as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as err:
                raise TaskError(f"{path}:{lineno}: not valid JSON ({err.msg})") from None
            if not isinstance(row, dict):
                raise TaskError(f"{path}:{lineno}: expected a JSON object with a 'code' field")
            rows.append((f"{path}:{lineno}", lineno, row))
    if not rows:
        raise TaskError(f"{path}: the dataset is empty")
    return [_task_from_row(where, path, n, row) for where, n, row in rows]


def _load_parquet(path: Path) -> list[Task]:
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except Exception as err:  # pyarrow raises several types for unreadable files
        raise TaskError(f"{path}: cannot read parquet ({err})") from None
    if "code" not in table.column_names:
        raise TaskError(
            f"{path}: missing column 'code' (has: {', '.join(table.column_names) or 'none'})"
        )
    if table.num_rows == 0:
        raise TaskError(f"{path}: the dataset is empty")
    return [
        _task_from_row(f"{path} row {i}", path, i, row) for i, row in enumerate(table.to_pylist())
    ]


def _task_from_row(where: str, path: Path, row_no: int, row: dict) -> Task:
    code = row.get("code")
    if not isinstance(code, str):
        raise TaskError(f"{where}: missing field 'code' (the program's source)")
    check_size(len(code.encode()), where)
    check_program(code, where)
    level, problem_id = row.get("level"), row.get("problem_id")
    if level is not None and problem_id is not None:
        stem = row.get("name") or str(problem_id)
        source = TaskSource("kernelbench", str(path), level=int(level), problem_id=int(problem_id))
        return Task(name=kernelbench_name(int(level), stem), code=code, source=source)
    source = TaskSource("dataset", str(path), row=row_no, data_source=row.get("data_source"))
    name = row.get("name") or f"{path.stem}_{row_no}"
    return Task(name=name, code=code, source=source, ops=_parse_ops(row.get("ops")))


def _parse_ops(ops) -> tuple[str, ...]:
    """`ops` as CUDA-Agent-Ops-6K stores it (a JSON list in a string) or as a real list."""
    if ops is None:
        return ()
    if isinstance(ops, str):
        try:
            ops = json.loads(ops)
        except json.JSONDecodeError:
            ops = [o.strip() for o in ops.split(",")]
    if isinstance(ops, str):
        ops = [ops]
    return tuple(str(o) for o in ops if str(o).strip())


def _select(tasks, path, levels, problem_ids) -> list[Task]:
    if levels is None and problem_ids is None:
        return tasks
    if all(t.level is None for t in tasks):
        raise TaskError(
            f"{path}: --levels/--ids select KernelBench problems, and these tasks have no level"
        )
    levels = set(levels) if levels is not None else None
    ids = set(problem_ids) if problem_ids is not None else None
    chosen = [
        t
        for t in tasks
        if (levels is None or t.level in levels) and (ids is None or t.source.problem_id in ids)
    ]
    if not chosen:
        raise TaskError(f"{path}: no task matches the selected levels and problem ids")
    return chosen
