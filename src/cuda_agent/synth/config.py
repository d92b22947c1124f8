"""Settings of a synthesis run (stored in the run's folder, so a rerun can check it resumes the
same run) and where the caches live."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from cuda_agent.sandbox import default_cache_dir as sandbox_cache_dir
from cuda_agent.synth.profiles import profile_for

# Settings that define which candidates a run makes and how they are judged: fixed per run folder.
IDENTITY = ("seed", "device", "window_ms", "atol", "rtol", "ast_threshold", "compile_backend",
            "llm_fraction", "llm_model", "decontaminate")  # fmt: skip


def default_cache_dir() -> Path:
    """Synthesis's folder in the project's cache (the sandbox's: CUDA_AGENT_CACHE)."""
    return sandbox_cache_dir() / "synth"


class SynthConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    n: int = Field(gt=0)  # accepted tasks wanted
    out: Path
    device: str = "cpu"
    workers: int = Field(default=2, gt=0)
    ray: str | None = None
    seed: int = 0
    window_ms: tuple[float, float] | None = None  # None: the device profile's window
    atol: float = 1e-2
    rtol: float = 1e-2
    ast_threshold: float = 0.9
    # the KernelBench copy to decontaminate against; None: $CUDA_AGENT_KERNELBENCH, else the hub
    kernelbench: Path | None = None
    decontaminate: bool = True  # False only when the user opts out explicitly
    cache_dir: Path = Field(default_factory=default_cache_dir)
    max_candidates: int | None = None  # None: 20 per task wanted, at least 200
    compile_backend: str = "inductor"
    # hard caps per candidate and stage: a program that takes longer is rejected as a timeout
    compose_timeout_s: float = 120.0
    eager_timeout_s: float = 120.0
    compile_timeout_s: float = 600.0
    llm_base_url: str | None = None
    llm_model: str | None = None
    llm_fraction: float = 0.0  # share of candidates the language model composes

    @property
    def window(self) -> tuple[float, float]:
        return self.window_ms or profile_for(self.device).window_ms

    @property
    def candidate_cap(self) -> int:
        return self.max_candidates or max(200, 20 * self.n)

    def identity(self) -> dict:
        data = self.model_dump(mode="json")
        return {k: data[k] for k in IDENTITY} | {"window_ms": list(self.window)}
