"""CUDA-Agent-style compile script: a full rebuild through torch's extension loader."""

import sys
from pathlib import Path

from torch.utils.cpp_extension import load

work, build = Path(sys.argv[1]), Path(sys.argv[2])
build.mkdir(parents=True, exist_ok=True)
sources = [
    str(work / "binding.cpp"),
    *map(str, sorted((work / "kernels").glob("*.cu"))),
    *map(str, sorted((work / "kernels").glob("*_binding.cpp"))),
]
load(
    name="cuda_extension",
    sources=sources,
    build_directory=str(build),
    extra_include_paths=[str(work)],
    extra_cuda_cflags=["-O3", "-arch=sm_90"],
    extra_ldflags=["-lcublas"],
    verbose=False,
)
print("compiled")
