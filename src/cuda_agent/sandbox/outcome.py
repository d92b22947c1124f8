"""What a stage ends with, and the one place an evaluation's outcome becomes a Verdict.

A stage that stops the evaluation returns (or raises, from the candidate's process) a Failure; a
compile-only stage ends Compiled; a checked solution ends Correct, with the timing's figures at
stage profile. `to_verdict` adds what every verdict of the evaluation carries (the Head) and what
the trusted side knew about the task once it got that far (the Facts).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from cuda_agent.sandbox.guard.profile import DEFAULT_RULES
from cuda_agent.sandbox.reward import milestone_reward
from cuda_agent.sandbox.verdict import Stage, Status, TorchOp, Verdict
from cuda_agent.sandbox.violation import Violation

if TYPE_CHECKING:
    from cuda_agent.sandbox.timing.profile import ProfileResult


@dataclass(frozen=True)
class Failure:
    """Why an evaluation ended without a correct result: the verdict's status and message, and
    the evidence behind them (the guard's violations, the worst error, the timing's figures)."""

    status: Status
    message: str
    violations: tuple[Violation, ...] = ()
    max_abs_error: float | None = None
    timing_checks: dict[str, float] | None = None


@dataclass(frozen=True)
class Compiled:
    """The build was all that was asked for (stage compile)."""

    message: str


@dataclass(frozen=True)
class Correct:
    """Correct on every checked input set; `timing` is the profile stage's figures."""

    message: str
    timing: ProfileResult | None = None


Outcome = Failure | Compiled | Correct


@dataclass(frozen=True)
class Head:
    """What every verdict of one evaluation carries; `seconds` fills as the stages run."""

    task: str
    task_hash: str
    stage: Stage
    gpu: str | None
    module_mode: str
    seconds: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # what the harness changed (arch flags)
    rules: str = DEFAULT_RULES  # the rules profile the guard judges by
    torch_ops: list[TorchOp] = field(default_factory=list)  # fills as the guard lists them

    def list_ops(self, ops: Iterable[TorchOp]) -> None:
        """Add what the guard allowed and listed (each op once)."""
        self.torch_ops.extend(o for o in dict.fromkeys(ops) if o not in self.torch_ops)


@dataclass(frozen=True)
class Facts:
    """What the trusted side knew once the candidate's process was needed: the task's audit,
    and the guard and isolation layers that were active (once a process was taken)."""

    degenerate: bool
    input_distribution: str
    checks: tuple[str, ...] = ()


def to_verdict(head: Head, outcome: Outcome, compiled: bool, facts: Facts | None = None) -> Verdict:
    """The Verdict of an evaluation that ended with `outcome`."""
    common = {
        "task": head.task,
        "task_hash": head.task_hash,
        "stage": head.stage,
        "gpu": head.gpu,
        "module_mode": head.module_mode,
        "seconds": head.seconds,
        "compiled": compiled,
        "rules": head.rules,
        "torch_ops": list(head.torch_ops),
    }
    if head.notes:
        common["notes"] = list(head.notes)
    if facts is not None:
        common |= {"degenerate": facts.degenerate, "input_distribution": facts.input_distribution}
        common |= {"checks": list(facts.checks)} if facts.checks else {}
    match outcome:
        case Failure():
            return Verdict(
                **common,
                status=outcome.status,
                correct=False,
                violations=list(outcome.violations),
                max_abs_error=outcome.max_abs_error,
                timing_checks=outcome.timing_checks or {},
                message=outcome.message,
            )
        case Compiled():
            return Verdict(**common, status=Status.OK, correct=False, message=outcome.message)
        case Correct(timing=None):
            reward = milestone_reward(True, None, None)
            return Verdict(
                **common, status=Status.OK, correct=True, reward=reward, message=outcome.message
            )
    r = outcome.timing
    vs_eager = r.eager_ms / r.candidate_ms
    vs_compile = r.compile_ms / r.candidate_ms
    return Verdict(
        **common,
        status=Status.OK,
        correct=True,
        eager_ms=r.eager_ms,
        compile_ms=r.compile_ms,
        candidate_ms=r.candidate_ms,
        candidate_spread=r.candidate_spread,
        speedup_vs_eager=vs_eager,
        speedup_vs_compile=vs_compile,
        reward=milestone_reward(True, vs_eager, vs_compile),
        timing=r.method,
        timings=r.by_method,
        launch_bound=r.launch_bound,
        eager_launch_ms=r.eager_launch_ms,
        max_abs_error=r.max_abs_error,
        timing_checks=r.timing_checks or {},
        message=outcome.message,
    )
