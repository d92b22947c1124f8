"""Triton's answers that need a process, asked once by the fork server before any candidate.

A candidate's process may start no process, but Triton starts some to learn about its tools:
`ptxas --version` (for each architecture's cache key and PTX version) and `ldconfig -p` (to
find libcuda). Each answer is kept in a functools cache of Triton's own; asked here, in the fork
server that every candidate's process is forked from, they are answered from memory there.
Importing this module asks them; where Triton is not installed it does nothing.
"""

from __future__ import annotations

import subprocess

# the compute capabilities Triton's NVIDIA backend targets (ptxas-blackwell from 100 on)
ARCHS = (75, 80, 86, 87, 89, 90, 100, 101, 103, 110, 120, 121)


def prime() -> bool:
    """Ask Triton what it asks of processes; whether Triton is installed and found libcuda and
    a ptxas (an architecture whose ptxas is missing stays unanswered, as it would fail anyway)."""
    try:
        from triton.backends.nvidia.compiler import get_ptxas_version
        from triton.backends.nvidia.driver import libcuda_dirs
    except ImportError:
        return False
    try:
        libcuda_dirs()
    except (OSError, RuntimeError, AssertionError):  # no GPU driver here
        return False
    answered = False
    for arch in ARCHS:
        try:
            get_ptxas_version(arch)
            answered = True
        except (OSError, RuntimeError, subprocess.SubprocessError):
            pass
    return answered


PRIMED = prime()
