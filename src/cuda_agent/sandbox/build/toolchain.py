"""The compilers, headers and libraries an extension is built with, found once per process.

`find_toolchain()` never initialises CUDA in the calling process (the harness forks children from
it): the device's compute capability comes from torch only when CUDA is already initialised,
else from `nvidia-smi`, else from a short-lived child process.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path

from cuda_agent.errors import UserError

DEFAULT_ARCH = "sm_90"
ARCH_ENV = "CUDA_AGENT_ARCH"
TORCH_LIBS = ("c10", "c10_cuda", "torch_cpu", "torch_cuda", "torch", "torch_python")
CUDA_TORCH_LIBS = ("c10_cuda", "torch_cuda")
_ARCH = re.compile(r"^(?:sm_|compute_)?(\d+)(?:\.(\d+))?([af]?)$")
_PROBE_TIMEOUT_S = 60


@dataclass(frozen=True)
class Toolchain:
    """Everything that decides what the compilers produce; `key()` names caches built with it."""

    nvcc: str  # the real nvcc binary, wrapper scripts resolved
    cuda_home: str
    nvcc_version: str
    cxx: str  # host compiler for the bindings, the link and nvcc's host side
    cxx_version: str
    torch_version: str
    torch_include_dirs: tuple[str, ...]
    python_include_dir: str
    torch_lib_dir: str
    torch_libs: tuple[str, ...]  # those of TORCH_LIBS present in torch_lib_dir, in link order
    cuda_include_dirs: tuple[str, ...]  # the toolkit's
    extra_include_dirs: tuple[str, ...]  # cuBLAS / cuDNN headers from nvidia-* wheels
    cuda_lib_dirs: tuple[str, ...]  # toolkit, then nvidia-* wheels
    libraries: tuple[tuple[str, str], ...]  # (cudart | cublas | cublasLt | cudnn, shared library)
    cxx11_abi: bool
    pybind11_defines: tuple[str, ...]
    torch_nvcc_flags: tuple[str, ...]  # what torch's extension builder gives every nvcc call
    compat_defines: tuple[str, ...]  # for header sets a CPU wheel ships incomplete
    arch: str  # sm_90, sm_90a, ...

    @property
    def can_link(self) -> bool:
        """torch's CUDA libraries and cudart exist, so an importable extension can be linked."""
        cuda_torch = all(lib in self.torch_libs for lib in CUDA_TORCH_LIBS)
        return cuda_torch and self.library("cudart") is not None

    def library(self, name: str) -> str | None:
        return dict(self.libraries).get(name)

    def nvcc_flags(self) -> list[str]:
        """Flags for kernels/*.cu: raw CUDA, so no torch or Python headers."""
        number, suffix = _ARCH.match(self.arch).group(1, 3)  # type: ignore[union-attr]
        target = f"{number}{suffix}"
        return [
            "-ccbin", self.cxx, "-O3", "-std=c++17",
            f"-gencode=arch=compute_{target},code=sm_{target}",
            "-Xcompiler", "-fPIC,-fvisibility=hidden", "-lineinfo",
            # The toolkit's headers first, so a wheel's copies only supply what it lacks (cuBLAS).
            *(f"-I{d}" for d in (*self.cuda_include_dirs, *self.extra_include_dirs)),
        ]  # fmt: skip

    def host_flags(self) -> list[str]:
        """Flags for every host translation unit and the precompiled header (they must match).

        Hidden visibility keeps each build's symbols (and the static binding registry) private
        to its .so, so several builds loaded in one process do not bind to each other.
        """
        system = [
            *self.torch_include_dirs, self.python_include_dir,
            *self.cuda_include_dirs, *self.extra_include_dirs,
        ]  # fmt: skip
        return [
            "-std=c++17", "-O2", "-fPIC", "-fvisibility=hidden",
            f"-D_GLIBCXX_USE_CXX11_ABI={int(self.cxx11_abi)}", *self.pybind11_defines,
            *self.compat_defines,
            "-DTORCH_API_INCLUDE_EXTENSION_H", "-DTORCH_EXTENSION_NAME=cuda_extension",
            *(f"-isystem{d}" for d in system),
        ]  # fmt: skip

    def key(self) -> str:
        """A hash of compiler versions and paths, torch version, flags and arch."""
        return _digest(
            {"toolchain": asdict(self), "nvcc": self.nvcc_flags(), "host": self.host_flags()}
        )

    def host_key(self) -> str:
        """A hash of what host objects depend on (not the arch); names the precompiled header."""
        return _digest([self.cxx, self.cxx_version, self.torch_version, self.host_flags()])


def find_toolchain(arch: str | None = None) -> Toolchain:
    """Discover nvcc, the host compiler, torch's headers and libraries, and the GPU arch."""
    import torch

    nvcc, cuda_home, nvcc_version = _find_nvcc()
    cxx, cxx_version = _find_cxx()
    torch_dir = Path(torch.__file__).resolve().parent
    torch_include = torch_dir / "include"
    if not (torch_include / "torch" / "extension.h").is_file():
        raise UserError(f"torch's C++ headers are missing under {torch_include}; reinstall torch")
    python_include = sysconfig.get_path("include", scheme="posix_prefix")
    if not (Path(python_include) / "Python.h").is_file():
        raise UserError(f"Python.h not found in {python_include}; install the python3-dev headers")
    torch_lib = torch_dir / "lib"
    wheels = _nvidia_wheel_dirs(torch_dir.parent)
    toolkit_include = _existing([Path(cuda_home) / "include"])
    toolkit_lib = _existing([Path(cuda_home) / "lib64", Path(cuda_home) / "lib"])
    extra_include = tuple(
        d
        for header in ("cublas_v2.h", "cudnn.h")
        if not any((Path(t) / header).is_file() for t in toolkit_include)
        for d in _dirs_with(wheels, "include", header)
    )
    wheel_lib = tuple(
        d
        for pattern in ("libcublas.so*", "libcudnn.so*")
        for d in _dirs_with(wheels, "lib", pattern)
    )
    libraries = {"cudart": _find_shared("cudart", toolkit_lib + wheel_lib)}
    for name in ("cublas", "cublasLt", "cudnn"):
        libraries[name] = _find_shared(name, wheel_lib + toolkit_lib)
    return Toolchain(
        nvcc=nvcc,
        cuda_home=cuda_home,
        nvcc_version=nvcc_version,
        cxx=cxx,
        cxx_version=cxx_version,
        torch_version=torch.__version__,
        torch_include_dirs=(str(torch_include), str(torch_include / "torch/csrc/api/include")),
        python_include_dir=python_include,
        torch_lib_dir=str(torch_lib),
        torch_libs=tuple(n for n in TORCH_LIBS if (torch_lib / f"lib{n}.so").exists()),
        cuda_include_dirs=toolkit_include,
        extra_include_dirs=tuple(dict.fromkeys(extra_include)),
        cuda_lib_dirs=tuple(dict.fromkeys(toolkit_lib + wheel_lib)),
        libraries=tuple((n, p) for n, p in libraries.items() if p),
        cxx11_abi=bool(getattr(torch._C, "_GLIBCXX_USE_CXX11_ABI", True)),
        pybind11_defines=_pybind11_defines(torch),
        torch_nvcc_flags=_torch_nvcc_flags(),
        compat_defines=_compat_defines(torch_include),
        arch=_resolve_arch(arch, torch),
    )


def normalize_arch(arch: str) -> str:
    """'sm_90', '90', '9.0', 'compute_90a' -> 'sm_90' / 'sm_90a'; a UserError otherwise."""
    m = _ARCH.match(arch.strip())
    if m is None:
        raise UserError(f"GPU arch {arch!r} not understood; use a form like sm_90 or sm_90a")
    number = m[1] + (m[2] or "")
    if int(number) < 50:
        raise UserError(f"GPU arch {arch!r} is too old for nvcc; use sm_75 or newer")
    return f"sm_{number}{m[3]}"


def _find_nvcc() -> tuple[str, str, str]:
    homes = [(v, os.environ[v]) for v in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(v)]
    if homes:
        var, home = homes[0]
        found = str(Path(home) / "bin" / "nvcc")
        if not os.access(found, os.X_OK):
            raise UserError(f"{var}={home} has no bin/nvcc: point it at a CUDA toolkit or unset it")
    else:
        found = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
        if not os.access(found, os.X_OK):
            raise UserError(
                "nvcc not found: install the CUDA toolkit (12.x or 13.x) and put its bin/ on "
                "PATH, or set CUDA_HOME to the toolkit folder"
            )
    bin_dir = _nvcc_bin_dir(found)
    version = _run([found, "--version"])
    release = re.search(r"release [\d.]+, V([\d.]+)", version)
    return str(bin_dir / "nvcc"), str(bin_dir.parent), release[1] if release else version.strip()


def _nvcc_bin_dir(nvcc: str) -> Path:
    """The folder of the real nvcc: a dry run names it even when `nvcc` is a wrapper script."""
    dry = _run([nvcc, "-dryrun", "-E", "-x", "cu", os.devnull])
    here = re.search(r"^#\$ _HERE_=(.+)$", dry, re.MULTILINE)
    bin_dir = Path(here[1].strip()) if here else Path(nvcc).resolve().parent
    return bin_dir.resolve()


def _find_cxx() -> tuple[str, str]:
    name = os.environ.get("CXX", "g++")
    path = shutil.which(name)
    if path is None:
        raise UserError(f"host C++ compiler {name!r} not found: install g++ or set CXX")
    return path, _run([path, "--version"]).splitlines()[0].strip()


def _run(cmd: list[str]) -> str:
    env = {**os.environ, "LC_ALL": "C"}
    try:
        proc = subprocess.run(
            cmd, capture_output=True, text=True, timeout=_PROBE_TIMEOUT_S, env=env
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise UserError(f"{cmd[0]} could not run ({exc}); check the installation") from None
    if proc.returncode != 0:
        raise UserError(f"`{' '.join(cmd)}` failed: {(proc.stderr or proc.stdout).strip()[:300]}")
    return proc.stdout + proc.stderr


def _pybind11_defines(torch) -> tuple[str, ...]:
    """The pybind11 ABI defines torch's own extension builder adds (none in recent torch)."""
    from torch.utils import cpp_extension

    helper = getattr(cpp_extension, "_get_pybind11_abi_build_flags", None)
    if helper is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return tuple(helper())
    defines = []
    for name in ("COMPILER_TYPE", "STDLIB", "BUILD_ABI"):
        value = getattr(torch._C, f"_PYBIND11_{name}", None)
        if value is not None:
            defines.append(f'-DPYBIND11_{name}="{value}"')
    return tuple(defines)


def _torch_nvcc_flags() -> tuple[str, ...]:
    from torch.utils import cpp_extension

    return tuple(cpp_extension.COMMON_NVCC_FLAGS)


def _compat_defines(torch_include: Path) -> tuple[str, ...]:
    """A CPU wheel lacks c10/cuda's generated macros header; c10 has a switch to do without it
    (it only matters on Windows), so bindings using c10/cuda still compile there."""
    if (torch_include / "c10/cuda/impl/cuda_cmake_macros.h").is_file():
        return ()
    return ("-DC10_CUDA_NO_CMAKE_CONFIGURE_FILE",)


def _nvidia_wheel_dirs(site_packages: Path) -> list[Path]:
    """site-packages/nvidia/* (nvidia/cu13, nvidia/cublas, nvidia/cudnn, ...) next to torch."""
    roots = dict.fromkeys([site_packages, *map(Path, _site_dirs())])
    return [d for root in roots for d in sorted((root / "nvidia").glob("*")) if d.is_dir()]


def _site_dirs() -> list[str]:
    import site

    return [*site.getsitepackages(), site.getusersitepackages()]


def _dirs_with(wheels: list[Path], sub: str, pattern: str) -> tuple[str, ...]:
    return tuple(str(w / sub) for w in wheels if any((w / sub).glob(pattern)))


def _existing(paths: list[Path]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(str(p.resolve()) for p in paths if p.is_dir()))


def _find_shared(name: str, dirs: tuple[str, ...]) -> str | None:
    """lib<name>.so, else its shortest versioned file (wheels ship only libcublas.so.13)."""
    for d in dirs:
        exact = Path(d) / f"lib{name}.so"
        if exact.exists():
            return str(exact)
        versioned = sorted(Path(d).glob(f"lib{name}.so.*"), key=lambda p: len(p.name))
        if versioned:
            return str(versioned[0])
    return None


def _resolve_arch(arch: str | None, torch) -> str:
    """The argument, else $CUDA_AGENT_ARCH, else the current device's capability, else sm_90."""
    chosen = arch or os.environ.get(ARCH_ENV)
    if chosen:
        return normalize_arch(chosen)
    if torch.version.cuda is None:  # a CPU build of torch sees no device
        return DEFAULT_ARCH
    if torch.cuda.is_initialized():
        major, minor = torch.cuda.get_device_capability()
        return f"sm_{major}{minor}"
    capability = _capability_from_nvidia_smi() or _capability_from_child()
    return normalize_arch(capability) if capability else DEFAULT_ARCH


def _capability_from_nvidia_smi() -> str | None:
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    cmd = [smi, "--query-gpu=compute_cap", "--format=csv,noheader"]
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    return _probe(cmd + ["-i", visible] if visible else cmd)


def _capability_from_child() -> str | None:
    code = (
        "import torch\n"
        "if torch.cuda.is_available():\n"
        "    print('%d.%d' % torch.cuda.get_device_capability())\n"
    )
    return _probe([sys.executable, "-c", code])


def _probe(cmd: list[str]) -> str | None:
    """The first word a command prints, when it is a compute capability such as 9.0."""
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=_PROBE_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired):
        return None
    words = out.stdout.split()
    return words[0] if out.returncode == 0 and words and _ARCH.match(words[0]) else None


def _digest(value: object) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:16]
