"""The sides of a timing (eager, torch.compile, the candidate), timed turn by turn on the same
fresh input sets, in an order drawn afresh each turn.

Every timed call but the first follows an untimed call of the same side on the set timed the turn
before (so there is nothing in it to precompute). Between two calls of one side the harness
pickles, talks to the candidate and compares outputs, and a call whose launch path went cold that
way is slow to start: torch.compile's one fused kernel of elementwise_chain timed at 0.47-0.51 ms
so on the H200, 0.33 ms with the untimed call before it, and 0.31-0.35 ms by events around a loop
of back-to-back calls; eager's four kernels, whose first launch is cheap, at 1.06 ms each way.

When fewer sets fit in memory than there are calls to time, the sets are refilled in place with
freshly drawn content before they are timed again, so a memo keyed on an input's address returns
a stale output; the candidate's process copies the new content in (from a staging set it is
never handed) only after its untimed call, so that call cannot precompute it either.
"""

from __future__ import annotations

import random

import torch

from cuda_agent.sandbox.check.compare import compare
from cuda_agent.sandbox.check.inputs import copy_inputs
from cuda_agent.sandbox.guard.findings import judge
from cuda_agent.sandbox.guard.runtime import Trace, trace_findings
from cuda_agent.sandbox.outcome import Failure
from cuda_agent.sandbox.process.messages import Call, DropOutput, Ping, StoreSets, Warmup
from cuda_agent.sandbox.timing.call import CallTime, L2Flusher, synchronize, timed_call
from cuda_agent.sandbox.verdict import Status
from cuda_agent.sandbox.violation import Check, Rule, Violation

_coin = random.SystemRandom()


def interleaved(sides: dict, n: int, distinct: int, refill: Refill | None):
    """`n` turns, each one call of every side on the turn's input set, in an order drawn afresh
    each turn: a drift of the GPU's clocks or of the host's load during the run falls on every
    side alike, and the speed-ups (ratios of medians) do not move with it as they would between
    timed blocks. From turn `distinct` on, each turn's content is drawn afresh into the staging
    set first (the run ends early when it cannot be). (The first failure's verdict fields or
    None, the turns timed.)"""
    for i in range(n):
        fresh = refill is not None and i >= distinct
        if fresh and not refill.draw_next():
            return None, i
        for name in _coin.sample(list(sides), len(sides)):
            warm = (i - 1) % distinct if i else None
            failure = sides[name].call(i, i % distinct, warm, n, refill if fresh else None)
            if failure is not None:
                return failure, i
    return None, n


class Refill:
    """The staging set: each turn's freshly drawn content when sets are timed again. The trusted
    sides time on it; the candidate's process copies it into the turn's set after its untimed
    call, and its timed call gets that set (an address it has seen, content it has not)."""

    def __init__(self, draw, sets: list):
        self.draw = draw
        self.staging = draw()
        shape = _structure(sets[0])
        self._shape = shape if _structure(self.staging) == shape else None  # None: no refills

    def draw_next(self) -> bool:
        """Draw the next turn's content; False when it does not fit the sets (a get_inputs()
        whose shapes, dtypes or other arguments vary: those sets cannot be refilled)."""
        if self._shape is None:
            return False
        fresh = self.draw()
        if _structure(fresh) != self._shape:
            return False
        copy_inputs(self.staging, fresh)
        del fresh
        synchronize()  # the candidate's process reads the staging set from its own stream
        return True


def _structure(inputs: list) -> list:
    return [(tuple(x.shape), x.dtype) if isinstance(x, torch.Tensor) else repr(x) for x in inputs]


class Trusted:
    """Eager or torch.compile in this process: one timed call per turn.

    Each output is dropped before the next call, so every call allocates from the allocator's
    cache, as the candidate's calls do: outputs kept alive across calls would make each call
    cudaMalloc a fresh output inside its timed region (measured on the H200: torch.compile's
    0.35 ms elementwise graph timed at 0.49 ms that way)."""

    def __init__(self, fn, sets: list, flush: L2Flusher):
        self.fn, self.sets, self.flush = fn, sets, flush
        self.times: list[CallTime] = []

    def warm_up(self, warm: list) -> None:
        for inputs in warm:
            self.fn(*inputs)
        synchronize()

    def call(self, i: int, index: int, warm: int | None, n: int, refill=None) -> None:
        if warm is not None:
            self.fn(*self.sets[warm])
        inputs = refill.staging if refill is not None else self.sets[index]
        out, t = timed_call(self.fn, inputs, self.flush)
        del out
        self.times.append(t)


class Candidate:
    """The candidate's process: one timed call per turn, each beside a no-op ping, its output
    checked against the eager output of the same input set."""

    def __init__(self, cand, sets, expected, poison, config, reference, refill, own_kernels):
        self.cand, self.expected, self.poison, self.config = cand, expected, poison, config
        self.reference, self.own_kernels = reference, own_kernels
        self.times: list[CallTime] = []
        self.pings: list[CallTime] = []
        self.unreported: list[float] = []  # per call: round trip beyond reported, less a ping's
        self.waits: list[tuple[float, float]] = []  # per call: (parent's, child's) less a ping's
        self.worst = 0.0
        self.staging = len(sets)  # the staging set's index in the process (after the sets)
        cand.request(StoreSets(sets + ([refill.staging] if refill is not None else [])))

    def warm_up(self, warm: list) -> None:
        self.cand.request(Warmup(warm))

    def call(self, i: int, index: int, warm: int | None, n: int, refill=None) -> Failure | None:
        """None, or why the call failed."""
        cand, poison = self.cand, self.poison
        if refill is not None:
            self.expected[index] = None  # its memory, before the new one is computed
            self.expected[index] = self.reference(*refill.staging)
        job = Call(index, warm, poison, self.staging if refill is not None else None)
        # A ping (the same request with the harness's own no-op as forward) next to every call,
        # in an order the candidate cannot predict: the pair's difference cancels pipe, pickling,
        # allocator and host-scheduling costs as they are at that moment (other processes load
        # the host), and leaves what the candidate's own call did.
        ping_first = _coin.random() < 0.5
        if ping_first:
            cand.request(DropOutput())
            ping = cand.timed_request(Ping(poison))
        cand.request(DropOutput())
        reply, trip = cand.timed_request(job)
        if not ping_first:
            cand.request(DropOutput())
            ping = cand.timed_request(Ping(poison))
        check = compare(self.expected[index], reply.output, self.config.atol, self.config.rtol)
        if not check.ok:
            return Failure(
                Status.MISMATCH,
                f"timed call {i + 1} of {n} (a fresh input set): {check.reason}",
                max_abs_error=check.max_abs_error,
            )
        ran = self._trace_violations(reply.time)
        if ran:
            return Failure(
                Status.VIOLATION,
                f"timed call {i + 1} of {n}, as the GPU trace recorded it: "
                + "; ".join(v.message for v in ran),
                violations=tuple(ran),
            )
        self.worst = max(self.worst, check.max_abs_error or 0.0)
        self.times.append(reply.time)
        ping_time, ping_trip = ping[0].time, ping[1]
        self.pings.append(ping_time)
        # (reading a trace back costs more for a call's kernels than for a ping's none; the
        # parent's own wait for a CPU is the host's load, not the candidate's)
        self.unreported.append(
            (trip.seconds * 1e3 - trip.parent_wait_ms)
            - (reply.time.host_ms + reply.warm_ms + reply.time.trace_ms)
            - (ping_trip.seconds * 1e3 - ping_trip.parent_wait_ms)
            + (ping_time.host_ms + ping_time.trace_ms)
        )
        self.waits.append(
            (
                trip.parent_wait_ms - ping_trip.parent_wait_ms,
                trip.child_wait_ms - ping_trip.child_wait_ms,
            )
        )
        return None

    def _trace_violations(self, t: CallTime) -> list[Violation]:
        """What the GPU trace of one timed call shows that the run's rules profile refuses:
        PyTorch's kernels (listed, not refused, where the profile lets PyTorch compute: the
        verification's trace listed them already), none of the solution's, or no trace at all
        from a process that could record one at its start."""
        if t.kernels is not None:
            rules = self.config.rules
            found = trace_findings(Trace(kernels=list(t.kernels)), self.own_kernels, rules)
            return list(judge(found, rules).violations)
        if self.cand.layers.get("kernel_trace"):
            return [
                Violation(
                    rule=Rule.TRACE_STOPPED,
                    check=Check.RUNTIME_GUARD,
                    message="the candidate's process stopped recording GPU activity (it recorded "
                    "it when it started): the GPU trace belongs to the harness",
                )
            ]
        return []
