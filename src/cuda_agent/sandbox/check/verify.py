"""Verification: the candidate's outputs on fresh input sets, under the runtime guard."""

from __future__ import annotations

from collections.abc import Iterable

from cuda_agent.sandbox.check.compare import compare
from cuda_agent.sandbox.config import EnvConfig
from cuda_agent.sandbox.guard.findings import judge
from cuda_agent.sandbox.guard.runtime import trace_findings
from cuda_agent.sandbox.outcome import Failure, Head
from cuda_agent.sandbox.process.messages import Verify
from cuda_agent.sandbox.verdict import Status


def check_outputs(
    cand,
    pairs: Iterable[tuple[list, object]],
    count: int,
    poison: int,
    own_kernels: set[str],
    config: EnvConfig,
    label: str,
    head: Head,
    keep: int = 1,
) -> tuple[Failure | None, list]:
    """Run the candidate on each (inputs, reference output) pair under the runtime guard, one set
    at a time so that large tasks hold one set's outputs at once; (the Failure or None, the
    first `keep` pairs). The first set's forward is profiled too: its kernels are judged. What
    the rules profile allows is listed in `head`."""
    kept = []
    for i, (inputs, expected) in enumerate(pairs):
        reply = cand.request(Verify([inputs], poison_bytes=poison, profile_at=0 if i == 0 else -1))
        found = [f for t in reply.traces for f in trace_findings(t, own_kernels, config.rules)]
        judged = judge(found, config.rules)
        head.list_ops(judged.torch_ops)
        # each line once over the traces, in the order of its text
        violations = sorted({v.message: v for v in judged.violations}.values(), key=str)
        if violations:
            return Failure(
                Status.VIOLATION,
                "the runtime guard caught PyTorch doing the work (see violations)",
                violations=tuple(violations),
            ), kept
        result = compare(expected, reply.outputs[0], config.atol, config.rtol)
        del reply
        if not result.ok:
            return Failure(
                Status.MISMATCH,
                f"{label} {i + 1} of {count}: {result.reason}",
                max_abs_error=result.max_abs_error,
            ), kept
        if len(kept) < keep:
            kept.append((inputs, expected))
        # dropped before the next set is drawn: a large task then holds the kept sets and one
        # more, not two more
        del inputs, expected
    return None, kept
