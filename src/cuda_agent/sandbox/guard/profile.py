"""The rules profiles: which of the guard's findings refuse a solution, and which are only listed.

Every rule of the guard belongs to one family. `integrity` rules protect the verdict itself
(the reference out of reach, the harness's comparison and clocks untouched, no streams or
threads, no memos or reused memory, no lowered precision, a kernel of the solution's own) and
refuse under every profile. `torch_compute` rules find PyTorch doing part of the work:

- `cuda-agent` (the default, and what training uses) refuses them: every operator is a kernel.
- `kernelbench` allows them, as KernelBench's own checker does by default, and lists each one in
  the verdict's `torch_ops`: a correct verdict with listed ops is a partial kernel.
"""

from __future__ import annotations

from enum import StrEnum

from cuda_agent.errors import choice


class RulesProfile(StrEnum):
    CUDA_AGENT = "cuda-agent"
    KERNELBENCH = "kernelbench"


DEFAULT_RULES = RulesProfile.CUDA_AGENT


class Family(StrEnum):
    INTEGRITY = "integrity"  # refused under every profile
    TORCH_COMPUTE = "torch_compute"  # PyTorch does part of the work: kernelbench lists it


class Layer(StrEnum):
    """Which check saw a finding."""

    STATIC_PYTHON = "static_python"
    STATIC_CPP = "static_cpp"
    RUNTIME_DISPATCH = "runtime_dispatch"
    RUNTIME_KERNELS = "runtime_kernels"  # the GPU trace of the first verification call


def rules_profile(name: str) -> RulesProfile:
    """The profile named `name`, or a UserError that lists the choices."""
    return choice(RulesProfile, name, "rules profile")


def refuses(profile: RulesProfile, family: Family) -> bool:
    """Whether a finding of `family` refuses the solution under `profile`."""
    return family == Family.INTEGRITY or profile == RulesProfile.CUDA_AGENT
