"""A single-file submission (KernelBench's format) and how one is recognised and read.

One Python file defines the entry point class (ModelNew unless told otherwise; a file that
defines `Model` and no `ModelNew`, as newer KernelBench files do, is entered at `Model`) and
builds its CUDA through torch.utils.cpp_extension.load_inline (or load, on files it writes), or
writes Triton kernels (@triton.jit functions it launches as kernel[grid](...)), or both. It
is given as FILE.py, or as a folder holding model_new.py and no kernels/ whose model_new.py does
not import the workspace's cuda_extension. It travels as a Solution whose one file is
model_new.py, so that everything that stores, hashes or ships solutions takes it unchanged.
"""

from __future__ import annotations

import ast
import hashlib
import re
from pathlib import Path

# is_triton is re-exported: callers that read a submission ask it here
from cuda_agent.sandbox.single_file.triton_source import is_triton as is_triton
from cuda_agent.sandbox.workspace import (
    ENTRY,
    KERNELS,
    MAX_FILE_BYTES,
    Solution,
    SolutionError,
    read_source_file,
)
from cuda_agent.sandbox.workspace import read_solution as read_workspace

ENTRY_POINT = "ModelNew"
REFERENCE_NAME = "Model"  # the reference's class; the entry point of files that define no ModelNew
_WORKSPACE_IMPORT = re.compile(r"^\s*(import\s+cuda_extension|from\s+cuda_extension\s)", re.M)


class SingleFileSolution(Solution):
    """A Solution whose only file is model_new.py, built by its own load_inline calls or
    compiled by Triton from its own @triton.jit kernels."""

    entry_point: str = ENTRY_POINT
    format: str = "kernelbench"  # KernelBench's own mode (module_mode.FORMAT_MODES) by default

    @property
    def source(self) -> str:
        return self.files[ENTRY]

    @property
    def hash(self) -> str:
        text = f"single-file\0{self.entry_point}\0{self.source}"
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def single_file_solution(text: str, entry_point: str | None = None, where: str = "solution"):
    """The submission `text` as a SingleFileSolution (sizes checked). Without `entry_point`:
    ModelNew, or Model where the file defines a class Model and none named ModelNew."""
    if len(text.encode()) > MAX_FILE_BYTES:
        raise SolutionError(f"{where}: over {MAX_FILE_BYTES // 1024} KiB")
    entry_point = entry_point or detected_entry_point(text)
    if not entry_point.isidentifier():
        raise SolutionError(f"entry point {entry_point!r}: not a Python class name")
    return SingleFileSolution(files={ENTRY: text}, entry_point=entry_point)


def detected_entry_point(text: str) -> str:
    try:
        tree = ast.parse(text)
    except SyntaxError:  # scored as invalid later, under the default name
        return ENTRY_POINT
    classes = {n.name for n in tree.body if isinstance(n, ast.ClassDef)}
    if ENTRY_POINT not in classes and REFERENCE_NAME in classes:
        return REFERENCE_NAME
    return ENTRY_POINT


def read_submission(path: str | Path, entry_point: str | None = None) -> Solution:
    """A solution from a workspace folder, a single .py file, or a folder holding only a
    single-file model_new.py (`entry_point`: its class; None: detected, single_file_solution)."""
    path = Path(path)
    if path.is_file():
        if path.suffix != ".py":
            raise SolutionError(f"{path}: a single-file submission is a .py file")
        return single_file_solution(read_source_file(path), entry_point, str(path))
    if not path.is_dir():
        raise SolutionError(f"{path}: no such solution file or folder")
    entry = path / ENTRY
    if entry.is_file() and not (path / KERNELS).exists():
        text = read_source_file(entry)
        if not _WORKSPACE_IMPORT.search(text):
            return single_file_solution(text, entry_point, str(entry))
    return read_workspace(path)


def problem(solution: SingleFileSolution) -> str | None:
    """Why the file cannot be scored at all (empty, does not parse), or None."""
    text, entry = solution.source, solution.entry_point
    if not text.strip():
        return "the submission file is empty; it must define class " + entry
    try:
        ast.parse(text)
    except SyntaxError as err:
        return f"the submission does not parse: line {err.lineno}: {err.msg}"
    return None


def missing_entry(solution: SingleFileSolution) -> str | None:
    """Why the file's entry point is missing (asked after the guard, which names worse), or
    None."""
    tree = ast.parse(solution.source)
    classes = {n.name for n in tree.body if isinstance(n, ast.ClassDef)}
    if solution.entry_point not in classes:
        return f"the submission defines no class {solution.entry_point} at module level"
    return None
