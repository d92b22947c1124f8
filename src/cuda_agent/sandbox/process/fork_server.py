"""The fork server of candidate processes, started before this process imports torch.

Candidate processes are forked from one server that imported torch once
(`cuda_agent.sandbox.process.watch`). Started on first use, in a fresh process that server begins
its own import of torch (about 4 s on the H200's host) only after this process has paid the same
import and reached its first evaluation. Started first, the two imports run side by side: a
cold `cuda-agent eval` is that much shorter. Only the standard library is imported here.
"""

from __future__ import annotations

import multiprocessing.forkserver
import os

# The modules the server imports once for every child. torch's profiler object imports
# torch._inductor (and with it torch._dynamo) on its first use in a process, through
# `hasattr(torch, "_inductor")`: imported in each child, that was most of a candidate process's
# start (docs/verdict.md has the figures).
PRELOAD = (
    "torch",
    "torch._inductor.config",
    "cuda_agent.sandbox.process.child",
    "cuda_agent.sandbox.process.isolated_call",
    "cuda_agent.sandbox.single_file.triton_prime",  # Triton's tool answers (triton_prime.py)
)


def start_early() -> bool:
    """Start the fork server now when this machine has an NVIDIA GPU (candidate processes run
    only there); whether it was started. A server already running is kept as it is."""
    if not os.path.exists("/dev/nvidiactl"):
        return False
    multiprocessing.forkserver.set_forkserver_preload(list(PRELOAD))
    multiprocessing.forkserver.ensure_running()
    return True
