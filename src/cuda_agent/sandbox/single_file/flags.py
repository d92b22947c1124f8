"""The extra flags of a load_inline/load call, as the harness's own build takes them.

The harness compiles with its own toolchain for the GPU it runs on, so flags that choose a GPU
architecture (`-arch=sm_86`, `-gencode ...`) are dropped (the build's own target replaces them)
and the verdict says so; include and library folders are the harness's own. The rest are
allowed only from lists of flags that change how code is optimised or which macros are
defined, or that keep symbols hidden (as the harness's own build does, and as exported files
ask): the compilers run in the trusted process, and a flag such as `-fplugin=` or `-Wl,...`
would run or link code the guard never read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cuda_agent.sandbox.process.messages import ExtensionCall

_HOST_OK = re.compile(
    r"-O[0-3sgz]?|-Ofast|-g\d?|-w|-std=(c|gnu)\+\+\w+|-[DU]\w+(=.*)?|-W(?![lap],)[\w=+-]*"
    r"|-f(no-)?(fast-math|unroll-loops|strict-aliasing|math-errno|finite-math-only|PIC|pic"
    r"|omit-frame-pointer|tree-vectorize)|-fvisibility=hidden|-fvisibility-inlines-hidden"
    r"|-march=native|-mtune=native|-m(avx2?|avx512\w*|fma|sse\w*)"
)
_NVCC_OK = re.compile(
    r"-O[0-3]|-g|-G|-w|-lineinfo|--?use_fast_math|--?std=c\+\+\w+|-[DU]\w+(=.*)?"
    r"|--(ftz|prec-div|prec-sqrt|fmad)=(true|false)|--?(expt-relaxed-constexpr|expt-extended-lambda"
    r"|extended-lambda|restrict|resource-usage|res-usage)"
    r"|--?maxrregcount=\d+|--?ptxas-options=[\w=,.+-]+|--?diag-suppress=[\w,]+|-Xptxas=[\w=,.+-]+"
    r"|--?default-stream=(per-thread|legacy)|-dlcm=c[ag]"
)
_NVCC_WITH_VALUE = {"-Xptxas": re.compile(r"[\w=,.+-]+"), "-Xcompiler": None}
_ARCH = re.compile(r"(-arch|--gpu-architecture|-gencode|--generate-code|-code|--gpu-code)(=.*)?")
_INCLUDE = re.compile(r"-I.*|-isystem.*")
_LIB_OK = re.compile(r"-l(cublas|cublasLt|cudnn|cudart|cuda|c10|c10_cuda|torch|torch_cpu"
                     r"|torch_cuda|torch_python)")  # fmt: skip
_LIB_DIR = re.compile(r"-L.*|-Wl,-rpath.*|-Wl,-rpath-link.*")


@dataclass(frozen=True)
class Flags:
    """Flags as the harness's build uses them; `notes` say what was replaced or dropped and
    `refused` names the flags not allowed (the call is then refused)."""

    host: tuple[str, ...] = ()
    nvcc: tuple[str, ...] = ()
    libraries: tuple[str, ...] = ()  # cublas, cudnn, ... (linked by the harness from its own)
    notes: tuple[str, ...] = ()
    refused: tuple[str, ...] = ()


def call_flags(call: ExtensionCall, arch: str) -> Flags:
    """The flags of `call` (read_flags on its extra_* arguments)."""
    return read_flags(
        call.extra_cflags,
        call.extra_cuda_cflags,
        call.extra_ldflags,
        call.extra_include_paths,
        arch,
    )


def read_flags(cflags, cuda_cflags, ldflags, include_paths, arch: str) -> Flags:
    """The flags of one call; `arch` is the build's own target (sm_90), named in the notes."""
    host, notes, refused = [], [], []
    cflags, cuda_cflags, ldflags = (
        [f.strip() for f in group if f.strip()] for group in (cflags, cuda_cflags, ldflags)
    )  # torch passes empty flags through; KernelBench files often give [""]
    for flag in cflags:
        if _HOST_OK.fullmatch(flag):
            host.append(flag)
        elif _INCLUDE.fullmatch(flag):
            notes.append(f"dropped {flag}: the harness compiles with its own include folders")
        else:
            refused.append(f"extra_cflags {flag!r}")
    nvcc, dropped = _nvcc_flags(list(cuda_cflags), notes, refused)
    if dropped:
        notes.insert(
            0, f"replaced the architecture flags {' '.join(dropped)} by this GPU's own ({arch})"
        )
    libraries = []
    for flag in ldflags:
        if _LIB_OK.fullmatch(flag):
            libraries.append(flag[2:])
        elif _LIB_DIR.fullmatch(flag):
            notes.append(f"dropped {flag}: the harness links its own libraries")
        else:
            refused.append(f"extra_ldflags {flag!r}")
    if include_paths:
        notes.append(
            f"ignored extra_include_paths ({', '.join(include_paths)}): the harness compiles with "
            "its own include folders"
        )
    return Flags(tuple(host), tuple(nvcc), tuple(libraries), tuple(notes), tuple(refused))


def _nvcc_flags(flags: list[str], notes: list[str], refused: list[str]):
    kept, dropped, i = [], [], 0
    while i < len(flags):
        flag = flags[i]
        arch = _ARCH.fullmatch(flag)
        if arch:
            takes_value = arch.group(2) is None and i + 1 < len(flags)
            dropped += flags[i : i + 2] if takes_value else [flag]
            i += 2 if takes_value else 1
            continue
        if flag in _NVCC_WITH_VALUE and i + 1 < len(flags):
            value, pattern = flags[i + 1], _NVCC_WITH_VALUE[flag]
            if pattern is not None:
                ok = bool(pattern.fullmatch(value))
            else:
                ok = all(_HOST_OK.fullmatch(v) for v in value.split(","))
            if ok:
                kept += [flag, value]
            else:
                refused.append(f"extra_cuda_cflags {flag} {value!r}")
            i += 2
            continue
        if flag.startswith("-Xcompiler="):
            values = flag.split("=", 1)[1].split(",")
            if all(_HOST_OK.fullmatch(v) for v in values):
                kept.append(flag)
            else:
                refused.append(f"extra_cuda_cflags {flag!r}")
        elif _NVCC_OK.fullmatch(flag):
            kept.append(flag)
        elif _INCLUDE.fullmatch(flag):
            notes.append(f"dropped {flag}: the harness compiles with its own include folders")
        else:
            refused.append(f"extra_cuda_cflags {flag!r}")
        i += 1
    return kept, dropped
