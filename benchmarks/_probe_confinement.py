"""Which confinement layer, applied before CUDA initialisation, breaks it (a diagnostic)."""

import importlib.util
import multiprocessing as mp
import os
import resource
import sys
import tempfile
from pathlib import Path

spec = importlib.util.spec_from_file_location(
    "iso", Path(__file__).parents[1] / "src/cuda_agent/sandbox/isolation.py"
)
iso = importlib.util.module_from_spec(spec)
spec.loader.exec_module(iso)


def child(variant, q):
    wd = Path(tempfile.mkdtemp())
    if "env" in variant:
        os.environ.clear()
        os.environ.update(iso.scrubbed_env(wd))
    if "landlock" in variant:
        iso._landlock(wd)
    if "seccomp" in variant:
        iso._seccomp()
    if "rlimit_data" in variant:
        resource.setrlimit(resource.RLIMIT_DATA, (32 << 30, 32 << 30))
    try:
        import torch

        q.put((variant, "ok", torch.ones(4, device="cuda").sum().item()))
    except Exception as err:
        q.put((variant, "fail", str(err)[-160:]))


if __name__ == "__main__":
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    for v in [(), ("env",), ("landlock",), ("seccomp",), ("rlimit_data",)]:
        p = ctx.Process(target=child, args=(v, q))
        p.start()
        print(q.get(timeout=120), flush=True)
        p.join()
    sys.exit(0)
