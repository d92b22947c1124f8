"""A guard finding, typed: its line as the verdict shows it, its rule and the rule's family, and
for PyTorch compute the op and where it was seen. `judge` splits findings by a rules profile into
the violations that refuse the solution and the torch ops the verdict lists."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from cuda_agent.sandbox.guard.profile import Family, Layer, RulesProfile, refuses
from cuda_agent.sandbox.verdict import TorchOp
from cuda_agent.sandbox.violation import Check, Rule, Violation

_CHECK = {
    Layer.STATIC_PYTHON: Check.STATIC_GUARD,
    Layer.STATIC_CPP: Check.STATIC_GUARD,
    Layer.RUNTIME_DISPATCH: Check.RUNTIME_GUARD,
    Layer.RUNTIME_KERNELS: Check.RUNTIME_GUARD,
}


@dataclass(frozen=True)
class Finding:
    text: str  # the violation line (`path:line: what; fix` for the static guard)
    rule: Rule
    family: Family
    layer: Layer
    op: str | None = None  # what PyTorch computes, for a torch_compute finding
    file: str | None = None
    line: int | None = None

    def torch_op(self) -> TorchOp:
        return TorchOp(op=self.op or self.text, layer=self.layer, file=self.file, line=self.line)

    def violation(self) -> Violation:
        return Violation(rule=self.rule, check=_CHECK[self.layer], message=self.text)


@dataclass(frozen=True)
class Judged:
    violations: tuple[Violation, ...]  # refuse the solution
    torch_ops: tuple[TorchOp, ...]  # allowed by the profile, listed in the verdict


def judge(findings: Iterable[Finding], profile: RulesProfile) -> Judged:
    """The findings that refuse the solution under `profile`, and the ones it only lists."""
    violations, listed = [], []
    for f in findings:
        if refuses(profile, f.family):
            violations.append(f.violation())
        else:
            listed.append(f.torch_op())
    return Judged(tuple(violations), tuple(dict.fromkeys(listed)))


def texts(findings: Iterable[Finding]) -> list[str]:
    """Every finding's line: what the cuda-agent rules refuse."""
    return [f.text for f in findings]
