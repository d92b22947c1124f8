"""Settings of the kernel development environment."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from cuda_agent.errors import UserError
from cuda_agent.sandbox.guard.profile import DEFAULT_RULES, rules_profile
from cuda_agent.sandbox.module_mode import SETTINGS
from cuda_agent.sandbox.timing.method import DEFAULT_TIMING, timing_method


def default_cache_dir() -> Path:
    """The project's cache (builds, audits, baselines; synthesis's beneath): CUDA_AGENT_CACHE,
    else ~/.cache/cuda-agent."""
    return Path(os.environ.get("CUDA_AGENT_CACHE", Path.home() / ".cache" / "cuda-agent"))


@dataclass(frozen=True)
class EnvConfig:
    """Everything an evaluation depends on besides the task and the solution."""

    cache_dir: Path = field(default_factory=default_cache_dir)
    arch: str | None = None  # e.g. "sm_90"; None: from the device, else sm_90
    device_index: int = 0
    atol: float = 1e-2
    rtol: float = 1e-2
    verify_sets: int = 5  # input sets checked at stage verify
    warmup_calls: int = 3
    timed_calls: int = 30  # each on a fresh input set, as memory allows (at least min_timed_calls)
    min_timed_calls: int = 5
    timing_memory_gb: float = 24.0  # GPU memory for the fresh input sets of the timed calls
    spin_up_ms: float = 100.0  # GPU busy this long before timing, so its clocks are up
    build_timeout_s: float = 300.0
    child_timeout_s: float = 120.0  # per step of the candidate process (load, verify, time)
    child_memory_mb: int = 32 * 1024  # host memory of the candidate process
    spare_processes: int = 2  # candidate processes started ahead of the rounds that need them
    build_jobs: int | None = None
    # train | eval | auto: the mode reference and candidate run in (module_mode.py); auto: the
    # submission format's
    module_mode: str = "auto"
    # events | kernels | span: what a call is charged (timing/method.py); every verdict also
    # carries the other two
    timing: str = DEFAULT_TIMING
    # cuda-agent | kernelbench: whether PyTorch compute refuses a solution or is listed in its
    # verdict (guard/profile.py); integrity rules refuse under both
    rules: str = DEFAULT_RULES

    def __post_init__(self):
        if self.module_mode not in SETTINGS:
            raise UserError(f"module mode {self.module_mode!r}: choose {', '.join(SETTINGS)}")
        object.__setattr__(self, "timing", timing_method(self.timing))
        object.__setattr__(self, "rules", rules_profile(self.rules))
