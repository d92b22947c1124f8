"""Linking compiled objects into one Python extension module, the same way for every format."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from cuda_agent.sandbox.build.compiler import run_compiler
from cuda_agent.sandbox.build.compiler_output import trim_compiler_output
from cuda_agent.sandbox.build.toolchain import Toolchain


def link_module(
    objects: list[str], so: Path, libraries: list[str], init_alias: tuple[str, str],
    tc: Toolchain, root: Path, deadline: float,
) -> tuple[Path | None, str]:  # fmt: skip
    """Link `objects` (paths relative to `root`) with torch and `libraries` (cudart, cublas,
    cublasLt, cudnn) into `so`, written atomically; (path, "") or (None, error log).
    `init_alias` (new, existing): the module's init function is defined again under the new
    name, so the module imports under the file's own name as well as the one it was built as."""
    missing = [n for n in libraries if tc.library(n) is None]
    if missing:
        where = ", ".join(tc.cuda_lib_dirs)
        return None, f"link failed: lib{', lib'.join(missing)} not found (searched {where})"
    found = [str(tc.library(n)) for n in libraries]
    rpaths = dict.fromkeys([tc.torch_lib_dir, *(str(Path(p).parent) for p in found)])
    tmp = so.with_name(f".{so.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    cmd = [tc.cxx, "-shared", *objects, "-o", str(tmp), f"-L{tc.torch_lib_dir}"]
    cmd += [f"-l{lib}" for lib in tc.torch_libs] + found + [f"-Wl,-rpath,{d}" for d in rpaths]
    cmd += [f"-Wl,--defsym=PyInit_{init_alias[0]}=PyInit_{init_alias[1]}"]
    proc = run_compiler(cmd, root, deadline)
    if proc.returncode != 0:
        tmp.unlink(missing_ok=True)
        reason = "timed out" if proc.timed_out else trim_compiler_output(proc.output, root)
        return None, f"link failed\n{reason}"
    os.replace(tmp, so)
    return so, ""
