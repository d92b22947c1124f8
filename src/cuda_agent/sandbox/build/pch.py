"""The precompiled torch header: <torch/extension.h> parsed once per host toolchain.

Every binding (kernels/*_binding.cpp) includes torch's headers, whose parse dominates a binding's
compile; with the header precompiled, a one-kernel edit rebuilds in seconds.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from cuda_agent.sandbox.build.compiler import locked, run_compiler
from cuda_agent.sandbox.build.compiler_output import trim_compiler_output
from cuda_agent.sandbox.build.toolchain import Toolchain

PCH_HEADER = "torch_extension.h"  # what -include names: a sentinel that fails when read as text
PCH_UNUSED = "cuda-agent: the precompiled header was not used"


def ensure_pch(
    toolchain: Toolchain,
    cache_dir: str | Path,
    timeout_s: float = 900,
    searched_first: Path | None = None,
) -> Path | None:
    """The header to pass with `-include` so that <torch/extension.h> comes precompiled; built
    once per host toolchain under a lock and checked to load. None where that failed.
    `searched_first`: a folder of stand-ins for torch's headers (the single-file binding
    prelude), searched before torch's own when the header is built and wherever it is used.

    The .gch sits next to a sentinel header that is an #error: if gcc ever skipped the .gch
    (other flags, a moved file), the compile fails loudly and the build retries without it,
    instead of silently paying for the full headers."""
    folder = _folder(toolchain, cache_dir, searched_first)
    header, ready, failed = folder / PCH_HEADER, folder / "ready", folder / "failed"
    if ready.exists() or failed.exists():
        return header if ready.exists() else None
    folder.mkdir(parents=True, exist_ok=True)
    with locked(folder / "lock"):
        if ready.exists() or failed.exists():
            return header if ready.exists() else None
        deadline = time.monotonic() + timeout_s
        first = [f"-I{searched_first}"] if searched_first is not None else []
        flags = [toolchain.cxx, *first, *toolchain.host_flags()]
        (folder / "pch_source.h").write_text("#include <torch/extension.h>\n")
        tmp = folder / f".{PCH_HEADER}.{os.getpid()}.gch"
        proc = run_compiler(
            [*flags, "-x", "c++-header", "pch_source.h", "-o", tmp.name], folder, deadline
        )
        if proc.returncode == 0:
            os.replace(tmp, folder / f"{PCH_HEADER}.gch")
            header.write_text(f'#error "{PCH_UNUSED}"\n')
            probe = ["-include", str(header), "-Winvalid-pch", "-fsyntax-only", "-x", "c++"]
            proc = run_compiler([*flags, *probe, os.devnull], folder, deadline)
        tmp.unlink(missing_ok=True)
        if proc.returncode == 0 and not proc.output.strip():
            ready.write_text(toolchain.host_key())
            return header
        (folder / f"{PCH_HEADER}.gch").unlink(missing_ok=True)
        if not proc.timed_out:  # a timeout may pass on a quieter machine; other failures not
            failed.write_text(trim_compiler_output(proc.output, folder) or "no compiler output")
        return None


def pch_ready(tc: Toolchain, cache_dir: str | Path, searched_first: Path | None = None) -> bool:
    """Whether ensure_pch would return at once with a header (built before)."""
    return (_folder(tc, cache_dir, searched_first) / "ready").exists()


def _folder(tc: Toolchain, cache_dir: str | Path, searched_first: Path | None) -> Path:
    variant = f"-{searched_first.name}" if searched_first is not None else ""
    return Path(cache_dir) / "pch" / f"{tc.host_key()}{variant}"


def pch_note(tc: Toolchain, cache: Path) -> str:
    failed = _folder(tc, cache, None) / "failed"
    why = failed.read_text().strip() if failed.exists() else "it could not be built in time"
    return f"the precompiled torch header is unavailable, bindings compiled without it: {why}"
