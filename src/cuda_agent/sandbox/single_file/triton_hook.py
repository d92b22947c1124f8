"""In a Triton submission's process: Triton's two process-starting steps handed to the parent.

The candidate's process may start no process (its GPU work must all be where the harness's trace
records it), so before the submission is imported, Triton is set through its own knobs to ask the
parent instead: `knobs.build.impl` compiles the C modules Triton generates (TritonLauncher), and a
stages hook replaces the last stage of each kernel's compilation, PTX to cubin, by the parent's
ptxas (TritonCubin) with the flags Triton's own stage passes. Everything else of Triton's
compilation (its front end, LLVM, its cache, in the process's own folder) runs here as usual.
What Triton would ask of other processes before that was answered in the fork server
(triton_prime.py).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from cuda_agent.sandbox.process.messages import (
    BuildAnswer,
    BuildRequest,
    TritonCubin,
    TritonCubinBuilt,
    TritonLauncher,
    TritonLauncherBuilt,
)
from cuda_agent.sandbox.single_file import triton_prime


class TritonNotReady(RuntimeError):
    """Triton's tool answers were not asked before the process was confined."""


def install(ask: Callable[[BuildRequest], BuildAnswer]) -> None:
    """Point Triton's C builds and ptxas at the parent; `ask` sends a request and returns the
    parent's answer. Without Triton installed, nothing is done (the import then fails as it
    would anywhere)."""
    try:
        from triton import knobs
    except ImportError:
        return
    if not triton_prime.PRIMED and _has_gpu():  # without a GPU no kernel compiles here
        raise TritonNotReady(
            "Triton's tools were not asked for their versions before the candidate's process was "
            "confined (the fork server does it): Triton cannot compile here"
        )

    def build(name, src, srcdir, library_dirs, include_dirs, libraries) -> str:
        answer = ask(TritonLauncher(name=str(name), source=Path(src).read_text()))
        if not isinstance(answer, TritonLauncherBuilt):
            raise RuntimeError(f"the harness answered a Triton C build with {type(answer)}")
        return answer.so_path

    def stages_hook(backend, stages, options, language, capability) -> None:
        arch = backend.target.arch
        flags = ptxas_flags(options, arch)

        def cubin(src: str, metadata: dict) -> bytes:
            answer = ask(TritonCubin(ptx=src, flags=flags, arch=arch))
            if not isinstance(answer, TritonCubinBuilt):
                raise RuntimeError(f"the harness answered a ptxas request with {type(answer)}")
            return answer.cubin

        stages["cubin"] = cubin

    # Triton's default cache is under the home folder its import found (the harness's, in the
    # fork server), where this process may not write; its own folder is where it may
    knobs.cache.dir = str(Path.cwd() / ".triton" / "cache")
    knobs.build.impl = build
    knobs.runtime.add_stages_inspection_hook = stages_hook


def _has_gpu() -> bool:
    import torch

    return torch.cuda.is_available()


def ptxas_flags(options, arch: int) -> tuple[str, ...]:
    """The flags Triton's own cubin stage passes ptxas for `options` (CUDAOptions) on `arch`,
    the input and output files left out."""
    from triton import knobs
    from triton.backends.nvidia.compiler import sm_arch_from_capability

    if knobs.compilation.disable_line_info:
        debug = ["-lineinfo", "-suppress-debug-info"]
    elif knobs.nvidia.disable_ptxas_opt:
        debug = ["-g"]
    else:
        debug = ["-lineinfo"]
    fmad = [] if options.enable_fp_fusion else ["--fmad=false"]
    no_opt = ["--opt-level", "0"] if knobs.nvidia.disable_ptxas_opt else []
    extra = options.ptx_options.split(" ") if options.ptx_options else []
    return (*debug, *fmad, "-v", *no_opt, *extra, f"--gpu-name={sm_arch_from_capability(arch)}")
