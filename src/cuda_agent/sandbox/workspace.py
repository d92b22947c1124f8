"""The workspace layout (as CUDA Agent's users know it) and the Solution read back from one.

model.py             reference program, read-only (the harness uses the Task's copy, never this)
model_new.py         class ModelNew: same constructor and state_dict as Model, calls cuda_extension
kernels/*.cu         raw CUDA kernels behind extern "C" launchers
kernels/*_binding.cpp  tensor-to-pointer bindings that REGISTER_BINDING themselves
binding.cpp, binding_registry.h   fixed infrastructure (the harness builds the package's copies)
SKILL.md             how to work here (written by the agent package)
utils/               a CUDA Agent workdir's own tools: ignored (the harness runs its own)
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path, PurePosixPath

from pydantic import BaseModel, ConfigDict

from cuda_agent.errors import UserError
from cuda_agent.sandbox.module_mode import folder_format
from cuda_agent.task import Task

INFRA_DIR = Path(__file__).parent / "infra"
INFRA_FILES = ("binding.cpp", "binding_registry.h")
REFERENCE = "model.py"
ENTRY = "model_new.py"
KERNELS = "kernels"
KERNEL_SUFFIXES = (".cu", ".cuh", ".cpp", ".h", ".hpp")
MAX_FILE_BYTES = 512 * 1024
MAX_FILES = 64


class SolutionError(UserError):
    """A solution folder that breaks the workspace contract."""


class Solution(BaseModel):
    """The candidate's own files: model_new.py and kernels/*, as text keyed by relative path."""

    model_config = ConfigDict(frozen=True)

    files: dict[str, str]
    # the submission format it was written in (module_mode.FORMAT_MODES): its default mode
    format: str = "workspace"

    @property
    def hash(self) -> str:
        digest = hashlib.sha256()
        for path in sorted(self.files):
            digest.update(path.encode() + b"\0" + self.files[path].encode() + b"\0")
        return digest.hexdigest()[:16]

    @property
    def kernel_files(self) -> dict[str, str]:
        return {p: t for p, t in self.files.items() if p.startswith(f"{KERNELS}/")}

    def write_to(self, root: Path) -> None:
        """Lay the files out under `root` (the entry, kernels/ and the package's infrastructure)."""
        for rel, text in self.files.items():
            dest = root / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(text)
        for name in INFRA_FILES:
            (root / name).write_text((INFRA_DIR / name).read_text())


def read_solution(folder: str | Path) -> Solution:
    """model_new.py and kernels/** from `folder`; infrastructure files there are ignored."""
    root = Path(folder)
    if not root.is_dir():
        raise SolutionError(f"{root}: no such solution folder")
    entry = root / ENTRY
    if not entry.is_file():
        raise SolutionError(f"{root}: missing {ENTRY} (class ModelNew calling cuda_extension)")
    files = {ENTRY: read_source_file(entry)}
    kernels = root / KERNELS
    if kernels.is_dir():
        for path in sorted(kernels.rglob("*")):
            if path.is_file() and path.suffix in KERNEL_SUFFIXES:
                files[path.relative_to(root).as_posix()] = read_source_file(path)
    return solution_from_files(files, where=str(root), submission_format=folder_format(root))


def solution_from_files(
    files: dict[str, str], where: str = "solution", submission_format: str = "workspace"
) -> Solution:
    """Check paths and sizes of a solution given as a dict (from a dataset, a model, a service)."""
    if ENTRY not in files:
        raise SolutionError(f"{where}: missing {ENTRY}")
    if len(files) > MAX_FILES:
        raise SolutionError(f"{where}: {len(files)} files; at most {MAX_FILES} are allowed")
    for rel, text in files.items():
        path = PurePosixPath(rel)
        inside = rel == ENTRY or (
            path.parts[0] == KERNELS and ".." not in path.parts and not path.is_absolute()
        )
        if not inside or (rel != ENTRY and path.suffix not in KERNEL_SUFFIXES):
            raise SolutionError(
                f"{where}: {rel} is not a solution file; only {ENTRY} and "
                f"{KERNELS}/*{{{','.join(KERNEL_SUFFIXES)}}} are"
            )
        if len(text.encode()) > MAX_FILE_BYTES:
            raise SolutionError(f"{where}: {rel} is over {MAX_FILE_BYTES // 1024} KiB")
    return Solution(files=dict(sorted(files.items())), format=submission_format)


def create_workspace(
    task: Task, folder: str | Path, extra_files: dict[str, str] | None = None
) -> Path:
    """A fresh workspace: reference (read-only), infrastructure, kernels/, extra files."""
    root = Path(folder)
    if root.exists() and any(root.iterdir()):
        raise UserError(f"{root}: folder exists and is not empty; choose a new folder")
    (root / KERNELS).mkdir(parents=True, exist_ok=True)
    reference = root / REFERENCE
    reference.write_text(task.code)
    os.chmod(reference, stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
    for name in INFRA_FILES:
        (root / name).write_text((INFRA_DIR / name).read_text())
    for name, text in (extra_files or {}).items():
        (root / name).write_text(text)
    return root


def read_source_file(path: Path) -> str:
    """A solution's source file as text, refused (SolutionError) when too large or not UTF-8."""
    if path.stat().st_size > MAX_FILE_BYTES:
        raise SolutionError(f"{path}: over {MAX_FILE_BYTES // 1024} KiB")
    try:
        return path.read_text()
    except UnicodeDecodeError:
        raise SolutionError(f"{path}: not UTF-8 text") from None
