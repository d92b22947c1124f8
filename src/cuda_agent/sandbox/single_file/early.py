"""A single file's literal extension builds, started as `cuda-agent eval` starts, before torch.

A cold `cuda-agent eval` of a single file spends its first seconds importing torch and the
harness (about 2.4 s on an H100's host); the evaluation's own build of the file's literal
load_inline calls (ahead.py) can only start after that. What such a build needs from torch (the
toolchain with torch's flags and ABI defines, load_inline's signature) was written down by the
last Environment that found the toolchain on this machine (`record`). With that record and the
precompiled headers in place, `start_early_build` reads the calls and builds them in a thread of
its own, importing only the standard library and the build modules; the evaluation that follows
asks for the same objects and finds them built, or waits on their locks while they are. (This
needs the binding prelude's precompiled header, which any earlier single-file evaluation built;
a unit that would need a precompiled header not yet built is compiled without one.)

Nothing here is trusted. A record that no longer fits the machine gives other cache keys, so
its builds are never asked for. These builds run before the guard has read the sources: the
evaluation checks every call before it takes any build, and `stop`, which the command calls as it
ends, kills the compilers still running, so a source the guard refused is never built beyond the
command's own lifetime. Flags the harness refuses are never passed to a compiler here either.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import json
import os
import sys
import threading
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from cuda_agent.sandbox.build.pch import pch_ready
from cuda_agent.sandbox.build.toolchain import ARCH_ENV, Toolchain
from cuda_agent.sandbox.config import EnvConfig
from cuda_agent.sandbox.single_file.ahead import literal_calls, torch_signature
from cuda_agent.sandbox.single_file.build import MAX_CALLS, build_call, lay_out
from cuda_agent.sandbox.single_file.flags import call_flags
from cuda_agent.sandbox.single_file.prelude import prelude_folder

_VERSION = "1"
_MAX_FILE = 4 * 2**20  # a submission past this is not read ahead
_ENV = ("PATH", "CUDA_HOME", "CUDA_PATH", "CXX", ARCH_ENV)  # what decides the toolchain found


def record(cache: Path, arch: str | None, tc: Toolchain) -> None:
    """Write down what an early build needs from torch, for the toolchain an Environment found
    with `arch` (its setting: None for the GPU's own); rewritten only when it changed."""
    parameters = []
    for p in torch_signature().parameters.values():
        parameters.append({"name": p.name, "kind": p.kind.name})
        if p.default is not inspect.Parameter.empty:
            if not (p.default is None or isinstance(p.default, bool | int | str)):
                return  # a default JSON cannot hold: no early builds with this torch
            parameters[-1]["default"] = p.default
    text = json.dumps({"toolchain": asdict(tc), "load_inline": parameters}, sort_keys=True)
    path = _path(cache, arch)
    if path.is_file() and path.read_text() == text:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
    tmp.write_text(text)
    os.replace(tmp, path)


@dataclass
class EarlyBuild:
    """The thread building a file's literal calls; `stop` ends it (compilers killed)."""

    thread: threading.Thread
    cancel: threading.Event
    calls: int

    def stop(self) -> None:
        self.cancel.set()
        self.thread.join()

    def note(self) -> str:
        """What the verdict says of it."""
        return (
            f"{self.calls} literal extension call(s) of the file started building as the command "
            "started, before torch was imported"
        )


def start_early_build(solution: Path, cache: Path, arch: str | None) -> EarlyBuild | None:
    """Start building the literal load_inline calls of the single file `solution` (a .py, or a
    folder with model_new.py); None where there is nothing to start: no record for this
    machine, precompiled headers not built yet, no literal call, a file that cannot be read."""
    recorded = _load(cache, arch)
    if recorded is None:
        return None
    tc, signature = recorded
    if not pch_ready(tc, cache, prelude_folder(cache, binding=True)):
        return None  # the module's unit would be compiled without it: slower than waiting
    path = solution / "model_new.py" if solution.is_dir() else solution
    try:
        if path.suffix != ".py" or path.stat().st_size > _MAX_FILE:
            return None
        calls = literal_calls(path.read_text(), signature)[:MAX_CALLS]
    except (OSError, UnicodeDecodeError, RecursionError, MemoryError):
        return None
    if not calls:
        return None
    cancel = threading.Event()
    timeout_s = EnvConfig.build_timeout_s  # the command's: it sets no other

    def build_all() -> None:
        for call in calls:
            flags = call_flags(call, tc.arch)
            if flags.refused or cancel.is_set():
                continue
            try:
                sources = lay_out(call)
            except KeyError:  # a file `load` names was not written
                continue
            build_call(sources, flags, tc, cache, timeout_s, cancel)

    thread = threading.Thread(target=build_all, name="cuda-agent-early-build", daemon=True)
    thread.start()
    return EarlyBuild(thread, cancel, len(calls))


def _load(cache: Path, arch: str | None) -> tuple[Toolchain, inspect.Signature] | None:
    path = _path(cache, arch)
    try:
        data = json.loads(path.read_text())
        tc = Toolchain(**{f.name: _tuples(data["toolchain"][f.name]) for f in fields(Toolchain)})
        signature = inspect.Signature(
            [
                inspect.Parameter(
                    p["name"], getattr(inspect.Parameter, p["kind"]),
                    default=p.get("default", inspect.Parameter.empty),
                )
                for p in data["load_inline"]
            ]
        )  # fmt: skip
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    return tc, signature


def _tuples(value):
    """JSON's lists back into the tuples the frozen Toolchain holds."""
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def _path(cache: Path, arch: str | None) -> Path:
    return Path(cache) / "early" / f"{_fingerprint(arch)}.json"


def _fingerprint(arch: str | None) -> str:
    """What the toolchain found depends on, read without importing torch: the interpreter,
    torch's installation, the environment that points at compilers, the arch asked for."""
    spec = importlib.util.find_spec("torch")
    folder = Path(spec.origin).parent if spec is not None and spec.origin else None
    version = folder / "version.py" if folder is not None else None
    stat = version.stat() if version is not None and version.is_file() else None
    parts = [
        _VERSION, sys.executable, sys.version, str(folder),
        f"{stat.st_mtime_ns}:{stat.st_size}" if stat is not None else "",
        *(f"{k}={os.environ.get(k, '')}" for k in _ENV), arch or "",
    ]  # fmt: skip
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:24]
