"""Every place a command writes is checked before its work starts, by writing there: a
read-only disk, a folder without permission, or a path through a file is one line naming the
path and the fix, not a traceback after minutes of work. (A test of the mode bits would pass
for root on a read-only mount; a probe file does not.)"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from cuda_agent.errors import UserError


def check_writable_folder(path: Path, option: str, fix: str = "choose another folder") -> None:
    """UserError unless `path` is a folder this process can create files in, or can be created.

    `option` names where the path came from (`--out`, `CUDA_AGENT_CACHE`); `fix` is the advice."""
    path = Path(path).expanduser()
    what = f"{option} {path}"
    try:
        if path.exists() and not path.is_dir():
            raise UserError(f"{what}: exists and is not a folder; {fix}")
        existing = path
        while not existing.exists() and existing != existing.parent:
            existing = existing.parent
    except OSError as err:
        raise UserError(f"{what}: cannot be read ({err.strerror}); {fix}") from None
    if not existing.is_dir():
        raise UserError(f"{what}: {existing} is a file, not a folder; {fix}")
    try:
        fd, probe = tempfile.mkstemp(prefix=".cuda-agent-write-check-", dir=existing)
    except OSError as err:
        where = "" if existing == path else f" (in {existing})"
        raise UserError(f"{what}: cannot write there{where}: {err.strerror}; {fix}") from None
    os.close(fd)
    os.unlink(probe)


def check_cache(path: Path) -> None:
    """The build cache (CUDA_AGENT_CACHE, else ~/.cache/cuda-agent) must take files."""
    named = "CUDA_AGENT_CACHE" if os.environ.get("CUDA_AGENT_CACHE") else "the build cache"
    check_writable_folder(path, named, "set CUDA_AGENT_CACHE to a writable folder")
