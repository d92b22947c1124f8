"""Settings of a synthesis run (stored in the run's folder, so a rerun can check it resumes the
same run) and where the KernelBench reference and the caches live."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from cuda_agent.errors import UserError
from cuda_agent.sandbox import default_cache_dir as sandbox_cache_dir
from cuda_agent.synth.profiles import profile_for

KERNELBENCH_FILE = "kernelbench_l1-l3.jsonl"
# Settings that define which candidates a run makes and how they are judged: fixed per run folder.
IDENTITY = ("seed", "device", "window_ms", "atol", "rtol", "ast_threshold", "compile_backend",
            "llm_fraction", "llm_model")  # fmt: skip


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
    kernelbench: Path | None = None  # None: found beside the project (../shared/kernelbench)
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


def kernelbench_path(given: Path | None) -> Path:
    """The KernelBench JSONL: as given, else beside the working folder or this checkout."""
    if given is not None:
        if not Path(given).exists():
            raise UserError(f"--kernelbench {given}: no such file; give the KernelBench JSONL")
        return Path(given)
    here = Path(__file__).resolve()
    for root in (Path.cwd(), *here.parents):
        candidate = root.parent / "shared" / "kernelbench" / KERNELBENCH_FILE
        if candidate.is_file():
            return candidate
    raise UserError(
        f"KernelBench reference not found ({KERNELBENCH_FILE}); pass --kernelbench PATH "
        "(a KernelBench checkout or its JSONL)"
    )
