"""One load_inline/load call of a single-file submission, built by the harness.

The sources are laid out as torch's own builder lays them out (main.cpp with <torch/extension.h>
first and the bindings `functions=` asks for; cuda.cu with torch's types and the CUDA runtime
first), then compiled with the harness's toolchain, the units side by side: main.cpp by the host
compiler, .cu files by nvcc with torch's include folders and torch's own nvcc defines, for this
GPU's architecture; each first against the narrow torch prelude where it may serve (prelude.py),
else as written (main.cpp on the precompiled torch header). Objects are cached by content
(source, headers, toolchain, flags) and so is the linked module, whose init is aliased to a name
of its own, as workspace builds are (build/extension.py): the same sources never build twice,
and two extensions in one process never collide.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from cuda_agent.sandbox.build.compiler import locked, run_compiler
from cuda_agent.sandbox.build.compiler_output import trim_compiler_output
from cuda_agent.sandbox.build.link import link_module
from cuda_agent.sandbox.build.pch import PCH_UNUSED, ensure_pch, pch_ready
from cuda_agent.sandbox.build.toolchain import Toolchain
from cuda_agent.sandbox.process.messages import ExtensionCall
from cuda_agent.sandbox.single_file.flags import Flags
from cuda_agent.sandbox.single_file.prelude import VERSION, eligible, prelude_folder

_MODULE = re.compile(r"PYBIND11_MODULE\s*\(\s*(\w+)")
_LIBRARIES = ("cublas", "cublasLt", "cudnn")
MAX_CALLS = 16  # distinct extensions one submission may have built (more are refused)
_NOT_ABOUT_SOURCE = ("timed out", "cancelled")  # how a compile ended that says nothing of it


@dataclass(frozen=True)
class Sources:
    """The translation units of one call as torch's builder would write them, and every file
    they may include (written beside them)."""

    cpp: dict[str, str]  # name -> text, host compiler
    cuda: dict[str, str]  # name -> text, nvcc
    headers: dict[str, str]


@dataclass(frozen=True)
class ExtensionBuild:
    ok: bool
    so_path: Path | None  # None unless linked
    module_name: str  # the name the module is imported under (its init is aliased to it)
    log: str = ""
    compiled: tuple[str, ...] = ()
    reused: tuple[str, ...] = ()
    narrowed: tuple[str, ...] = ()  # units compiled against a prelude (prelude.py)
    seconds: float = 0.0


def lay_out(call: ExtensionCall) -> Sources:
    """The files torch's load_inline or load would compile for this call."""
    if call.api == "load":
        files, compiled = dict(call.files), (*call.cpp_sources, *call.cuda_sources)
        return Sources(
            cpp={n: files[n] for n in call.cpp_sources},
            cuda={n: files[n] for n in call.cuda_sources},
            headers={n: t for n, t in files.items() if n not in compiled},
        )
    cpp = ["#include <torch/extension.h>", *call.cpp_sources]
    if call.functions:
        cpp.append("PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {")
        for name, doc in call.functions:
            cpp.append(f'm.def("{name}", torch::wrap_pybind_function({name}), "{_c_string(doc)}");')
        cpp.append("}")
    cuda = {}
    if call.cuda_sources:
        head = ["#include <torch/types.h>", "#include <cuda.h>", "#include <cuda_runtime.h>"]
        cuda["cuda.cu"] = "\n".join([*head, *call.cuda_sources])
    return Sources(cpp={"main.cpp": "\n".join(cpp)}, cuda=cuda, headers={})


def ensure_binding_pch(tc: Toolchain, cache: Path) -> Path | None:
    """The binding prelude precompiled (once per host toolchain and prelude version)."""
    return ensure_pch(tc, cache, searched_first=prelude_folder(cache, binding=True))


def module_init(sources: Sources) -> str | None:
    """The name PYBIND11_MODULE gives the module's init (TORCH_EXTENSION_NAME is defined as
    cuda_extension by the harness's flags), or None where no source defines a module."""
    for text in (*sources.cpp.values(), *sources.cuda.values()):
        found = _MODULE.search(text)
        if found:
            return "cuda_extension" if found[1] == "TORCH_EXTENSION_NAME" else found[1]
    return None


def build_call(
    sources: Sources,
    flags: Flags,
    tc: Toolchain,
    cache: Path,
    timeout_s: float,
    cancel: threading.Event | None = None,
) -> ExtensionBuild:
    """Compile (reusing cached objects) and link where torch's CUDA libraries exist. A build
    given `cancel` can be stopped: once it is set, the compilers still running are killed and the
    build fails; such a build uses the precompiled headers only where they are built already
    (theirs is shared by every build and is never cut short)."""
    start = time.perf_counter()
    deadline = time.monotonic() + timeout_s
    init = module_init(sources)
    headers = "".join(f"{n}\0{t}\0" for n, t in sorted(sources.headers.items()))
    nvcc = [*tc.nvcc_flags(), *tc.torch_nvcc_flags, *_for_nvcc(tc.host_flags())]
    nvcc += flags.nvcc
    host = [*tc.host_flags(), *flags.host]
    units = [(n, t, [tc.nvcc, *nvcc]) for n, t in sources.cuda.items()]
    units += [(n, t, [tc.cxx, *host]) for n, t in sources.cpp.items()]
    keys = [
        content_key("single-file-object-v1", tc.key(), n, t, headers, *cmd) for n, t, cmd in units
    ]
    link_parts = ("single-file-link-v1", tc.key(), init or "", *keys, *flags.libraries)
    link_key = content_key(*link_parts)[:16]
    module_name = f"cuda_extension_{link_key}"
    if init is None:
        message = (
            "the extension defines no module: pass functions=[...] to load_inline or write a "
            "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) in the C++ source"
        )
        return ExtensionBuild(False, None, module_name, message)
    (cache / "tmp").mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache / "tmp", prefix="single-") as tmp:
        root = Path(tmp)
        for name, text in {**sources.headers, **sources.cpp, **sources.cuda}.items():
            (root / name).write_text(text)
        work = _Work(tc, cache, root, deadline, sources.headers, cancel)
        # nvcc, the host compiler and the precompiled header's build run side by side: each
        # is one process, and a cold build is as long as the longest of them
        with ThreadPoolExecutor(max_workers=len(units)) as pool:
            done = list(pool.map(work.unit, units, keys))
        objects = [u.obj for u in done]
        errors = [u.error for u in done if u.error]
        so = None
        if not errors and tc.can_link:
            so, error = _link(objects, flags.libraries, module_name, init, tc, cache, root,
                              deadline)  # fmt: skip
            errors += [error] if error else []
    names = [name for name, _, _ in units]
    return ExtensionBuild(
        ok=not errors,
        so_path=so,
        module_name=module_name,
        log="\n\n".join(errors),
        compiled=tuple(n for n, u in zip(names, done, strict=True) if not u.reused),
        reused=tuple(n for n, u in zip(names, done, strict=True) if u.reused),
        narrowed=tuple(n for n, u in zip(names, done, strict=True) if u.narrow),
        seconds=time.perf_counter() - start,
    )


@dataclass(frozen=True)
class _Unit:
    """What became of one unit: its object, whether the cache had it, whether it is the
    prelude's build, and the compiler's error ("" when none)."""

    obj: Path
    reused: bool
    narrow: bool = False
    error: str = ""


@dataclass(frozen=True)
class _Work:
    """What every unit of one build shares; `unit` compiles one (or finds it in the cache)."""

    tc: Toolchain
    cache: Path
    root: Path
    deadline: float
    headers: dict[str, str]
    cancel: threading.Event | None = None

    def unit(self, unit: tuple[str, str, list[str]], key: str) -> _Unit:
        """One unit compiled, or found in the cache. A unit the prelude may serve (a
        CUDA unit the CUDA prelude, the C++ unit the binding prelude) is tried so first,
        unless that failed before; then as written (C++ on the precompiled header)."""
        name, text, cmd = unit
        obj = _object(self.cache, key)
        if obj.exists():
            return _Unit(obj, reused=True)
        binding = cmd[0] == self.tc.cxx
        if eligible(text, self.headers, binding):
            narrow_obj = _object(self.cache, content_key("narrow", VERSION, key), "-narrow")
            failed = narrow_obj.with_suffix(".failed")
            if narrow_obj.exists():
                return _Unit(narrow_obj, reused=True, narrow=True)
            if not failed.exists():
                folder = prelude_folder(self.cache, binding)
                ncmd = [cmd[0], f"-I{folder}", *cmd[1:]]
                pch = self._pch(folder) if binding else None
                error = self._compile(name, ncmd, narrow_obj, pch, failed)
                if not error:
                    return _Unit(narrow_obj, reused=False, narrow=True)
                if not error.endswith(_NOT_ABOUT_SOURCE):  # the prelude may still serve
                    failed.write_text(error)
        pch = self._pch() if binding else None
        return _Unit(obj, False, error=self._compile(name, cmd, obj, pch))

    def _pch(self, searched_first: Path | None = None) -> Path | None:
        if self.cancel is not None and not pch_ready(self.tc, self.cache, searched_first):
            return None
        remaining = max(1.0, self.deadline - time.monotonic())
        return ensure_pch(self.tc, self.cache, remaining, searched_first)

    def _compile(
        self, name: str, cmd: list[str], obj: Path, pch: Path | None, failed: Path | None = None
    ) -> str:
        """The compiler's error ("" when none): `name` compiled into `obj`, unless a build
        beside this one (another thread or process) got there first, or found it fails
        (`failed` holds its error)."""
        obj.parent.mkdir(parents=True, exist_ok=True)
        with locked(obj.with_suffix(".lock")):
            if obj.exists():
                return ""
            if failed is not None and failed.exists():
                return failed.read_text()
            if self._cancelled():
                return f"{name}: compile cancelled"
            tmp = obj.with_name(f".{obj.stem}.{os.getpid()}.{threading.get_ident()}.o")
            io = ["-I.", "-c", name, "-o", str(tmp)]
            forced = ["-include", str(pch), "-Winvalid-pch"] if pch else []
            run = [*cmd, *forced, *io]
            proc = run_compiler(run, self.root, self.deadline, self.cancel)
            if pch and PCH_UNUSED in proc.output:  # the flags did not fit the precompiled header
                proc = run_compiler([*cmd, *io], self.root, self.deadline, self.cancel)
            if proc.returncode == 0:
                os.replace(tmp, obj)
            tmp.unlink(missing_ok=True)
        if proc.returncode == 0:
            return ""
        if proc.timed_out:
            return f"{name}: compile timed out"
        if self._cancelled():
            return f"{name}: compile cancelled"
        return f"{name}: compile failed\n{trim_compiler_output(proc.output, self.root)}"

    def _cancelled(self) -> bool:
        return self.cancel is not None and self.cancel.is_set()


def _link(objects, libraries, module_name, init, tc: Toolchain, cache, root, deadline):
    so = cache / "ext" / f"{module_name}.so"
    so.parent.mkdir(parents=True, exist_ok=True)
    with locked(so.with_name(f".{so.name}.lock")):
        if so.exists():
            return so, ""
        wanted = ["cudart", *(n for n in _LIBRARIES if n in libraries)]
        return link_module(
            [str(o) for o in objects], so, wanted, (module_name, init), tc, root, deadline
        )


def _for_nvcc(host_flags: list[str]) -> list[str]:
    """The host flags' defines and torch's and Python's include folders, as nvcc takes them."""
    out = []
    for flag in host_flags:
        if flag.startswith("-D"):
            out.append(flag)
        elif flag.startswith("-isystem"):
            out += ["-isystem", flag.removeprefix("-isystem")]
    return out


def _object(cache: Path, key: str, tag: str = "") -> Path:
    return cache / "objects" / key[:2] / f"{key}{tag}.o"


def content_key(*parts: str) -> str:
    """A cache key of `parts` (each kept apart from the next, so no two lists share one)."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode() + b"\0\1")
    return digest.hexdigest()[:32]


def _c_string(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
