"""The kernel development environment: workspace, build, verify, profile, guard, reward."""

from cuda_agent.sandbox.audit import AuditRecord
from cuda_agent.sandbox.baselines import BaselineRecord
from cuda_agent.sandbox.build import BuildResult
from cuda_agent.sandbox.config import EnvConfig
from cuda_agent.sandbox.environment import Environment
from cuda_agent.sandbox.gpu_lock import gpu_lock, lock_files, rw_lock
from cuda_agent.sandbox.isolated_call import IsolatedResult, run_isolated
from cuda_agent.sandbox.isolation import apply_confinement, confine_preexec, scrubbed_env
from cuda_agent.sandbox.reward import milestone_reward
from cuda_agent.sandbox.verdict import Stage, Status, Verdict
from cuda_agent.sandbox.workspace import (
    ENTRY,
    INFRA_FILES,
    KERNELS,
    REFERENCE,
    Solution,
    SolutionError,
    create_workspace,
    read_solution,
    solution_from_files,
)

__all__ = [
    "ENTRY",
    "INFRA_FILES",
    "KERNELS",
    "REFERENCE",
    "AuditRecord",
    "BaselineRecord",
    "BuildResult",
    "EnvConfig",
    "Environment",
    "IsolatedResult",
    "Solution",
    "SolutionError",
    "Stage",
    "Status",
    "Verdict",
    "apply_confinement",
    "confine_preexec",
    "create_workspace",
    "gpu_lock",
    "lock_files",
    "milestone_reward",
    "read_solution",
    "run_isolated",
    "rw_lock",
    "scrubbed_env",
    "solution_from_files",
]
