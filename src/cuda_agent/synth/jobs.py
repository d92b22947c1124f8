"""Setup jobs a worker runs: tracing KernelBench programs in an isolated child."""

from __future__ import annotations

from cuda_agent.sandbox import run_isolated
from cuda_agent.synth.batch import PRELOAD
from cuda_agent.synth.decontam import trace_reference


def reference_job(items: tuple[tuple[str, str], ...]) -> list[dict]:
    """aten signatures of KernelBench programs (hash, code), traced in one child."""
    res = run_isolated(trace_reference, (list(items),), timeout_s=1200, memory_mb=16384,
                       preload=PRELOAD)  # fmt: skip
    if res.ok:
        return res.value
    return [{"hash": h, "aten": None, "device": None, "error": res.error_line()} for h, _ in items]
