"""The Verdict: what the environment says about one solution to one task."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from cuda_agent.sandbox.violation import Violation


class Status(StrEnum):
    OK = "ok"  # compiled, ran, matched (and was timed, at stage profile)
    COMPILE_ERROR = "compile_error"
    RUNTIME_ERROR = "runtime_error"  # raised, crashed, ran out of memory, or returned nothing
    TIMEOUT = "timeout"
    MISMATCH = "mismatch"  # wrong shape, dtype, values, NaN or Inf
    VIOLATION = "violation"  # the guard caught a forbidden shortcut
    INVALID = "invalid"  # the solution folder breaks the workspace contract
    NO_GPU = "no_gpu"  # static checks and compile-only build ran; correctness and timing need a GPU
    # the harness itself ran out of GPU memory beside other evaluations, on a second try too
    # (holding the GPU's lock alone), or the host kept the candidate's process off the CPU for
    # as long as its reported times fall short of the parent's clock, on two timing passes: no
    # verdict on the candidate; the bench runner evaluates it again after every other
    # evaluation, and a rerun redoes it
    HARNESS_ERROR = "harness_error"


class Stage(StrEnum):
    COMPILE = "compile"
    VERIFY = "verify"
    PROFILE = "profile"


class MethodTimes(BaseModel):
    """One timing method's medians (ms) and the speed-ups they give."""

    model_config = ConfigDict(frozen=True)

    eager_ms: float
    compile_ms: float
    candidate_ms: float | None = None
    speedup_vs_eager: float | None = None
    speedup_vs_compile: float | None = None


class TorchOp(BaseModel):
    """PyTorch computing part of the result, which the kernelbench rules allow and list."""

    model_config = ConfigDict(frozen=True)

    op: str  # torch.relu, self.conv (torch.nn.Conv3d), .mean(), at::gelu, aten::relu
    layer: str  # static_python | static_cpp | runtime_dispatch | runtime_kernels
    file: str | None = None  # where the static guard read it; None for the runtime's findings
    line: int | None = None

    def where(self) -> str:
        return f"{self.file}:{self.line}" if self.file is not None else self.layer


class Verdict(BaseModel):
    """A typed record, printed as JSON by `cuda-agent eval --json`."""

    model_config = ConfigDict(frozen=True)

    task: str
    task_hash: str
    stage: Stage
    status: Status
    compiled: bool
    correct: bool
    violations: list[Violation] = Field(default_factory=list)  # each prints as its message
    # cuda-agent | kernelbench: the rules profile the guard judged by (guard/profile.py); None
    # where no guard ran (a missing solution), or in results written before profiles existed
    rules: str | None = None
    torch_ops: list[TorchOp] = Field(default_factory=list)  # what kernelbench allowed, listed
    eager_ms: float | None = None
    compile_ms: float | None = None
    candidate_ms: float | None = None
    candidate_spread: float | None = None  # (p75 - p25) / median of the candidate's timed calls
    speedup_vs_eager: float | None = None
    speedup_vs_compile: float | None = None
    reward: int = -1
    # events | kernels | span: the method the times above, the speed-ups and the reward use
    timing: str | None = None
    timings: dict[str, MethodTimes] = Field(default_factory=dict)  # every method's figures
    # the reference's host time to issue a call is well above its GPU busy time (method.py)
    launch_bound: bool = False
    eager_launch_ms: float | None = None  # that host time, median over eager's timed calls
    degenerate: bool = False  # no input distribution tells the reference from a trivial output
    input_distribution: str | None = None  # the inputs the verdict was checked on
    module_mode: str | None = None  # train | eval: the models' mode (see module_mode.py)
    checks: list[str] = Field(default_factory=list)  # guard and isolation layers that were active
    max_abs_error: float | None = None
    timing_checks: dict[str, float] = Field(default_factory=dict)  # figures the times met
    gpu: str | None = None
    seconds: dict[str, float] = Field(default_factory=dict)  # build, verify, profile wall times
    # what the harness changed in the submission to score it (architecture flags replaced)
    notes: list[str] = Field(default_factory=list)
    message: str = ""
    # the service running the evaluation failed it (a worker lost twice, an exception out of the
    # environment), not the candidate: a bench rerun evaluates it again
    service_error: bool = False

    def summary(self) -> str:
        """A few human-readable lines."""
        head = f"{self.task}: {self.status.value}"
        if self.status == Status.OK and self.candidate_ms is not None:
            head += (
                f" — {self.candidate_ms:.3f} ms vs eager {self.eager_ms:.3f} ms "
                f"({self.speedup_vs_eager:.2f}x), torch.compile {self.compile_ms:.3f} ms "
                f"({self.speedup_vs_compile:.2f}x)"
            )
        lines = [head, f"reward {self.reward}"]
        if self.timing is not None and self.candidate_ms is not None:
            others = [
                f"{name} {t.speedup_vs_eager:.2f}x"
                for name, t in self.timings.items()
                if name != self.timing and t.speedup_vs_eager is not None
            ]
            lines.append(f"timed by {self.timing}; vs eager by " + ", ".join(others))
        if self.launch_bound:
            lines.append(
                f"warning: the task is launch-bound (the reference's host takes "
                f"{self.eager_launch_ms:.3f} ms to issue a call): its speed-ups measure launch "
                "overhead, and the timing methods disagree on them"
            )
        lines += [f"violation: {v}" for v in self.violations]
        lines += [f"torch op (allowed by the {self.rules} rules): {o.op} at {o.where()}"
                  for o in self.torch_ops]  # fmt: skip
        lines += [f"note: {n}" for n in self.notes]
        if self.degenerate:
            lines.append("warning: the task is degenerate (a trivial output passes its check)")
        if self.message:
            lines.append(self.message)
        return "\n".join(lines)
