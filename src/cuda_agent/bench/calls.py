"""What a service worker does with its Environment: the only code of the service that calls it.

Every mode (in-process, local processes, Ray actors) runs these same functions, so the modes
differ only in where the Environment lives. `build` runs on CPU workers; the rest on GPU workers.
"""

from __future__ import annotations

import shutil
import subprocess

from cuda_agent.sandbox import (
    AuditRecord,
    BaselineRecord,
    BuildResult,
    Environment,
    Solution,
    Stage,
    Verdict,
)
from cuda_agent.task import Task


def build(env: Environment, task: Task, solution: Solution, stage: Stage) -> Verdict | BuildResult:
    """Compile on a CPU worker: the final Verdict when nothing is left for a GPU (a failed build,
    or stage compile), else the build for `evaluate`."""
    built = env.build(task, solution)
    if stage == Stage.COMPILE or not built.ok:
        return env.evaluate(task, solution, stage, prebuilt=built)
    return built


def evaluate(
    env: Environment, task: Task, solution: Solution, stage: Stage, prebuilt: BuildResult | None
) -> Verdict:
    """Verify (and profile) on a GPU worker; `prebuilt` None builds here (no build pool)."""
    if prebuilt is not None and prebuilt.so_path is not None and not prebuilt.so_path.exists():
        prebuilt = None  # built on another Ray node whose cache this node does not share
    return env.evaluate(task, solution, stage, prebuilt=prebuilt)


def baselines(env: Environment, task: Task) -> BaselineRecord:
    return env.baselines(task)


def prepare_baselines(env: Environment, task: Task) -> float | None:
    return env.prepare_baselines(task)


def audit(env: Environment, task: Task, module_mode: str = "train") -> AuditRecord:
    return env.audit(task, module_mode)


def identity(env: Environment) -> dict:
    """What baseline and audit caches key on besides the task: the GPU and torch's version."""
    import torch

    return {"gpu": env.gpu_name, "torch_version": torch.__version__}


METHODS = {
    "build": build,
    "evaluate": evaluate,
    "baselines": baselines,
    "prepare_baselines": prepare_baselines,
    "audit": audit,
    "identity": identity,
}


def dispatch(env: Environment, method: str, args: tuple):
    return METHODS[method](env, *args)


def device_arch(index: int = 0) -> str | None:
    """`sm_90` for GPU `index`, read with nvidia-smi (no CUDA context); None without a GPU."""
    if shutil.which("nvidia-smi") is None:
        return None
    try:
        out = subprocess.run(
            ["nvidia-smi", "-i", str(index), "--query-gpu=compute_cap", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout.split()
    except (subprocess.SubprocessError, OSError):
        return None
    return f"sm_{out[0].replace('.', '')}" if out else None
