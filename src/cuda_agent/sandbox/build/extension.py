"""Build a Solution into one extension module, cached per translation unit by content.

    kernels/**/*.cu    nvcc (raw CUDA; torch headers are refused, a workspace rule)
    kernels/**/*.cpp   the host compiler against torch's headers, <torch/extension.h> precompiled
    binding.cpp        the package's own copy (pybind11 only), one object shared by every build
    -> cache_dir/ext/cuda_extension_<hash>.so, whose module init is PyInit_cuda_extension

An object's key hashes everything that decides it (source, every solution header, the infra
header, toolchain, flags): editing one kernel recompiles that file and relinks; an identical
workspace compiles nothing. Objects and the precompiled header are built under file locks and
renamed into place, so concurrent processes can share one cache.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import tempfile
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from types import ModuleType

from cuda_agent.sandbox.build.compiler import locked, run_compiler
from cuda_agent.sandbox.build.compiler_output import trim_compiler_output
from cuda_agent.sandbox.build.link import link_module
from cuda_agent.sandbox.build.pch import PCH_UNUSED, ensure_pch, pch_note
from cuda_agent.sandbox.build.toolchain import CUDA_TORCH_LIBS, Toolchain
from cuda_agent.sandbox.guard.includes import included_names, read_includes
from cuda_agent.sandbox.workspace import INFRA_DIR, KERNELS, Solution

_HEADERS = (".h", ".cuh", ".hpp")
_FORBIDDEN_IN_CU = {"torch", "ATen", "c10", "caffe2"}


@dataclass(frozen=True)
class BuildResult:
    ok: bool
    so_path: Path | None  # the importable extension; None unless linked
    so_name: str  # cuda_extension_<hash>.so: distinct for every distinct build, linked or not
    linked: bool
    log: str  # trimmed compiler errors (file:line, workspace paths) and notes
    compiled: list[str] = field(default_factory=list)  # workspace paths compiled (or tried)
    reused: list[str] = field(default_factory=list)  # workspace paths whose object was cached
    seconds: dict[str, float] = field(default_factory=dict)  # "pch", each compiled path, "link"
    pch: bool = False  # every .cpp compiled by this build loaded the precompiled torch header


@dataclass(frozen=True)
class _Unit:
    rel: str  # workspace path: kernels/add.cu, kernels/add_binding.cpp, binding.cpp
    kind: str  # cu | cpp | infra
    key: str

    def command(self, tc: Toolchain, out: Path, pch: Path | None) -> list[str]:
        io = ["-I.", f"-I{KERNELS}", "-c", self.rel, "-o", str(out)]
        if self.kind == "cu":
            return [tc.nvcc, *tc.nvcc_flags(), *io]
        forced = ["-include", str(pch), "-Winvalid-pch"] if pch else []
        return [tc.cxx, *tc.host_flags(), *forced, *io]


@dataclass(frozen=True)
class _Step:
    unit: _Unit
    ok: bool
    reused: bool
    seconds: float = 0.0
    output: str = ""
    timed_out: bool = False
    pch: bool = False
    note: str = ""


def build_extension(
    solution: Solution,
    toolchain: Toolchain,
    cache_dir: str | Path,
    *,
    link: bool = True,
    jobs: int | None = None,
    timeout_s: float = 300,
    use_pch: bool = True,
) -> BuildResult:
    """Compile every unit (in parallel, reusing cached objects) and link the extension where
    torch's CUDA libraries exist; without them the build is compile-only (`linked=False`).
    `use_pch=False` compiles bindings against the plain headers (for comparisons)."""
    start = time.perf_counter()
    deadline = time.monotonic() + timeout_s
    cache, tc = Path(cache_dir), toolchain
    units = _units(solution, tc)
    so_name = f"cuda_extension_{_link_key(units, tc)}.so"
    refused = _refused_includes(solution)
    if refused:
        return BuildResult(
            ok=False, so_path=None, so_name=so_name, linked=False, log="\n".join(refused)
        )
    seconds: dict[str, float] = {}
    notes: list[str] = []
    (cache / "tmp").mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache / "tmp", prefix="build-") as tmp:
        root = Path(tmp)
        solution.write_to(root)  # with the package's infrastructure files, never the workspace's
        workers = max(1, min(jobs or os.cpu_count() or 1, len(units)))
        with ThreadPoolExecutor(max_workers=workers) as pool:

            def submit(unit: _Unit, pch: Path | None) -> Future[_Step]:
                return pool.submit(_compile, unit, root, cache, tc, pch, deadline)

            # Kernels and binding.cpp compile while the precompiled header (if due) is built.
            futures = {u.rel: submit(u, None) for u in units if u.kind != "cpp"}
            bindings = [u for u in units if u.kind == "cpp"]
            pch = None
            if use_pch and any(not _object(cache, u).exists() for u in bindings):
                t = time.perf_counter()
                pch = ensure_pch(tc, cache, timeout_s=max(1.0, deadline - time.monotonic()))
                if time.perf_counter() - t > 1.0:
                    seconds["pch"] = round(time.perf_counter() - t, 3)
                if pch is None:
                    notes.append(pch_note(tc, cache))
            futures.update({u.rel: submit(u, pch) for u in bindings})
            steps = [futures[u.rel].result() for u in units]
        built = [s for s in steps if not s.reused]
        seconds.update({s.unit.rel: round(s.seconds, 3) for s in built})
        notes += [s.note for s in steps if s.note]
        failed = [s for s in steps if not s.ok]
        errors = [_failure(s, root) for s in failed]
        so_path = None
        if not failed and link and tc.can_link:
            t = time.perf_counter()
            so_path, error = _link(units, solution, root, cache, so_name, tc, deadline)
            seconds["link"] = round(time.perf_counter() - t, 3)
            errors += [error] if error else []
        elif not failed and link:
            notes.append(
                f"compile-only: torch's CUDA libraries ({', '.join(CUDA_TORCH_LIBS)}) are not in "
                f"{tc.torch_lib_dir}, so the extension was not linked"
            )
    built_cpp = [s for s in built if s.unit.kind == "cpp"]
    return BuildResult(
        ok=not errors,
        so_path=so_path,
        so_name=so_name,
        linked=so_path is not None,
        log="\n\n".join([*errors, *notes]),
        compiled=[s.unit.rel for s in built],
        reused=[s.unit.rel for s in steps if s.reused],
        seconds={**seconds, "total": round(time.perf_counter() - start, 3)},
        pch=bool(built_cpp) and all(s.pch for s in built_cpp),
    )


def _units(solution: Solution, tc: Toolchain) -> list[_Unit]:
    """Every translation unit, each keyed by what its object depends on."""
    files = solution.kernel_files
    headers = "".join(f"{p}\0{t}\0" for p, t in sorted(files.items()) if p.endswith(_HEADERS))
    registry = (INFRA_DIR / "binding_registry.h").read_text()
    units = []
    for rel, text in files.items():
        kind = {".cu": "cu", ".cpp": "cpp"}.get(PurePosixPath(rel).suffix)
        if kind == "cu":
            units.append(_Unit(rel, kind, _key(tc.key(), rel, text, headers, registry)))
        elif kind == "cpp":  # host objects do not depend on the GPU arch
            units.append(_Unit(rel, kind, _key(tc.host_key(), rel, text, headers, registry)))
    infra = (INFRA_DIR / "binding.cpp").read_text()  # no solution header: shared by all builds
    key = _key(tc.host_key(), "binding.cpp", infra, "", registry)
    return [*units, _Unit("binding.cpp", "infra", key)]


def _key(toolchain_key: str, rel: str, text: str, headers: str, registry: str) -> str:
    """Toolchain keys hash the flags too (Toolchain.key, Toolchain.host_key)."""
    digest = hashlib.sha256()
    for part in ("object-v1", toolchain_key, rel, text, headers, registry):
        digest.update(part.encode() + b"\0\1")
    return digest.hexdigest()[:32]


def _refused_includes(solution: Solution) -> list[str]:
    """kernels/*.cu (and the solution headers they include) must not include torch headers."""
    files = solution.kernel_files
    problems: list[str] = []
    for rel in sorted(p for p in files if p.endswith(".cu")):
        todo, seen = [rel], {rel}
        while todo:
            current = todo.pop()
            for directive in read_includes(files[current]):
                name = directive.name
                if directive.kind != "include" or name is None:
                    continue  # the static guard refuses those
                local = resolve_local(current, name, files)
                if local is not None and local not in seen:
                    seen.add(local)
                    todo.append(local)
                elif local is None and _FORBIDDEN_IN_CU & set(PurePosixPath(name).parts):
                    line = directive.line
                    via = "" if current == rel else f" (included by {rel})"
                    problems.append(
                        f"{current}:{line}: error: includes <{name}>{via}; workspace rule: "
                        'kernels/*.cu are raw CUDA behind extern "C" launchers and may not include '
                        "torch/ATen/c10 headers; move tensor code into a kernels/*_binding.cpp"
                    )
    return problems


def resolve_local(current: str, name: str, files: dict[str, str]) -> str | None:
    """The solution file an #include names (searched as the compilers do: the includer's folder,
    then -I. and -Ikernels), or None for a system header."""
    base = PurePosixPath(current).parent
    for candidate in (base / name, PurePosixPath(name), PurePosixPath(KERNELS) / name):
        path = os.path.normpath(str(candidate))
        if path in files:
            return path
    return None


def _uses(solution: Solution, library: str) -> bool:
    """Whether any kernel source includes a header of `library` (cublas, cublasLt or cudnn)."""
    texts = solution.kernel_files.values()
    names = {PurePosixPath(name).name for t in texts for name in included_names(t)}
    lt = library == "cublas"  # cublasLt*.h are cublasLt's, not cublas's
    return any(n.startswith(library) and not (lt and n.startswith("cublasLt")) for n in names)


def _object(cache: Path, unit: _Unit) -> Path:
    return cache / "objects" / unit.key[:2] / f"{unit.key}.o"


def _compile(
    unit: _Unit, root: Path, cache: Path, tc: Toolchain, pch: Path | None, deadline: float
) -> _Step:
    obj = _object(cache, unit)
    if obj.exists():
        return _Step(unit, ok=True, reused=True)
    obj.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    with locked(obj.with_suffix(".lock")):
        if obj.exists():  # another build made it while we waited
            return _Step(unit, ok=True, reused=True)
        tmp = obj.with_name(f".{unit.key}.{os.getpid()}.{id(unit)}.o")
        use_pch = unit.kind == "cpp" and pch is not None
        proc = run_compiler(unit.command(tc, tmp, pch if use_pch else None), root, deadline)
        note = ""
        if use_pch and PCH_UNUSED in proc.output:
            rejected = [line for line in proc.output.splitlines() if "invalid-pch" in line][:2]
            note = f"{unit.rel}: precompiled torch header rejected, built without it: "
            note += "; ".join(rejected)
            use_pch = False
            proc = run_compiler(unit.command(tc, tmp, None), root, deadline)
        if proc.returncode == 0:
            os.replace(tmp, obj)
        tmp.unlink(missing_ok=True)
    return _Step(
        unit, ok=proc.returncode == 0, reused=False, seconds=time.perf_counter() - start,
        output=proc.output, timed_out=proc.timed_out, pch=use_pch, note=note,
    )  # fmt: skip


def _failure(step: _Step, root: Path) -> str:
    why = "timed out" if step.timed_out else f"failed\n{trim_compiler_output(step.output, root)}"
    return f"{step.unit.rel}: compile {why}"


def _link(
    units: list[_Unit], solution: Solution, root: Path, cache: Path, so_name: str,
    tc: Toolchain, deadline: float,
) -> tuple[Path | None, str]:  # fmt: skip
    """Link (or reuse) cache/ext/<so_name>, returning (path, error log). Objects are linked as
    obj/<workspace path>.o, so that linker errors can name the source rather than a hash."""
    so = cache / "ext" / so_name
    so.parent.mkdir(parents=True, exist_ok=True)
    with locked(so.with_name(f".{so_name}.lock")):  # one link per name, across threads too
        if so.exists():
            return so, ""
        return _linklocked(units, solution, root, cache, so, tc, deadline)


def _linklocked(
    units: list[_Unit], solution: Solution, root: Path, cache: Path, so: Path, tc: Toolchain,
    deadline: float,
) -> tuple[Path | None, str]:  # fmt: skip
    wanted = ["cudart"] + [n for n in ("cublas", "cublasLt", "cudnn") if _uses(solution, n)]
    names = []
    for unit in units:
        name = root / "obj" / f"{unit.rel}.o"
        name.parent.mkdir(parents=True, exist_ok=True)
        name.symlink_to(_object(cache, unit))
        names.append(str(name.relative_to(root)))
    return link_module(
        names, so, wanted, (_init_name(so.name), "cuda_extension"), tc, root, deadline
    )


def _link_key(units: list[_Unit], tc: Toolchain) -> str:
    digest = hashlib.sha256(tc.key().encode())
    for unit in units:
        digest.update(f"{unit.rel}\0{unit.key}\0".encode())
    return digest.hexdigest()[:16]


def _init_name(so_name: str) -> str:
    """cuda_extension_<hash>: the name the module's init is defined again under (the build's)."""
    return Path(so_name).stem


def load_extension(so_path: str | Path) -> ModuleType:
    """Import a built extension; only in a candidate's child process (it runs candidate code).

    pybind11 3 caches modules by import name for the whole interpreter, so a second build
    imported as `cuda_extension` would hand back the first. Each build is imported under its
    file's stem instead (the link aliases its init), then registered as `cuda_extension` in
    sys.modules for model_new.py."""
    import torch  # noqa: F401  (the extension's tensor casters need torch's Python types)

    path = Path(so_path)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{path}: not an extension module")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules["cuda_extension"] = module
    return module
