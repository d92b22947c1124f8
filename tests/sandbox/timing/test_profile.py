"""The timing cross-checks on figures an honest call and each kind of lie would produce."""

from __future__ import annotations

import time

import pytest
import torch

from cuda_agent.sandbox import Check, EnvConfig, Rule
from cuda_agent.sandbox.process.candidate import RoundTrip
from cuda_agent.sandbox.process.messages import Call, Done, Ping, Stored, StoreSets, Timed
from cuda_agent.sandbox.timing import interleave
from cuda_agent.sandbox.timing import profile as profile_mod
from cuda_agent.sandbox.timing.call import UNTRACED_ALLOWANCE_MS, CallTime
from cuda_agent.sandbox.timing.cross_check import cross_check
from cuda_agent.sandbox.timing.profile import CandidateRun, TimingJob

TRUSTED = [CallTime(stream_ms=1.0, wide_ms=1.02, host_ms=1.05, gpu_ms=0.97) for _ in range(12)]
LAUNCH = 0.04  # the event window's start before the first kernel (host launch)


def _calls(stream: float, gap: float, host_extra: float = 0.03, n: int = 12) -> list[CallTime]:
    gpu = max(stream - LAUNCH, 0.001)
    return [CallTime(stream, stream + gap, stream + gap + host_extra, gpu) for _ in range(n)]


def _pings(gap: float = 0.02) -> list[CallTime]:
    return [CallTime(0.01, 0.01 + gap, 0.04 + gap) for _ in range(12)]  # no GPU work


def test_honest_figures_pass_and_are_reported():
    checks = cross_check(_calls(0.32, 0.025), _pings(), [0.05] * 12, TRUSTED)
    assert checks.violations() == []
    figures = checks.figures()
    # charged the GPU's span of its work; the events (launch included) are reported beside it
    assert figures["candidate_ms"] == figures["gpu_ms"] == pytest.approx(0.28)
    assert figures["events_ms"] == 0.32
    assert figures["untraced_ms"] == pytest.approx(0.345 - 0.28)
    assert abs(figures["escaped_ms"] - 0.005) < 1e-9
    assert figures["unreported_ms"] == 0.05 and figures["device_over_host_calls"] == 0


def test_a_loaded_host_slows_the_call_and_its_ping_alike_and_passes():
    # seen on the H200 with three workers on one GPU: 0.069 ms after a 0.47 ms call, while the
    # reference's own calls, timed earlier on a quiet host, waited 0.019 ms
    checks = cross_check(_calls(0.47, 0.069), _pings(0.062), [0.03] * 12, TRUSTED)
    assert checks.violations() == []


def test_work_left_on_another_stream_is_escaped_time():
    # forward returns after 0.05 ms; the device is busy 2 ms longer
    [found] = cross_check(_calls(0.05, 2.0), _pings(), [0.0] * 12, TRUSTED).violations()
    assert "still running when forward returned" in found.message and "1.980 ms" in found.message
    assert (found.rule, found.check) == (Rule.ESCAPED_WORK, Check.TIMING_CHECKS)


def test_escaped_work_shows_through_an_equally_loaded_ping():
    [found] = cross_check(_calls(0.05, 2.06), _pings(0.06), [0.0] * 12, TRUSTED).violations()
    assert "still running when forward returned" in found.message


# the reference's calls waiting 0.815 ms for the device: veRL trained on the same H100
BUSY_GPU = [CallTime(stream_ms=1.0, wide_ms=1.815, host_ms=1.9, gpu_ms=0.97) for _ in range(12)]


def test_another_processs_work_on_the_gpu_is_not_work_the_candidate_left():
    # an honest LayerNorm timed beside that training: 0.401 ms waits after its calls, 0.333 ms
    # after the no-op calls beside them; the reference's calls waited longer still
    checks = cross_check(_calls(0.33, 0.40), _pings(0.333), [0.0] * 12, BUSY_GPU)
    assert checks.escaped_ms > max(0.02, 0.1 * checks.candidate_ms)
    assert checks.violations() == []


def test_work_left_running_shows_through_another_processs_work():
    [found] = cross_check(_calls(0.05, 2.8), _pings(0.333), [0.0] * 12, BUSY_GPU).violations()
    assert "still running when forward returned" in found.message
    assert "0.815 ms after the ref" in found.message


def test_device_time_beyond_the_host_clock_is_tampering():
    calls = _calls(0.3, 0.02)
    calls[3] = CallTime(0.3, 5.0, 0.4)
    [found] = cross_check(calls, _pings(), [0.0] * 12, TRUSTED).violations()
    assert "1 of 12 calls" in found.message and found.rule == Rule.DEVICE_OVER_HOST


def test_times_smaller_than_the_parents_clock_are_not_real():
    # the candidate reports 0.1 ms while the round trip, less a ping's, says 3 ms more
    [found] = cross_check(_calls(0.1, 0.02), _pings(), [3.0] * 12, TRUSTED).violations()
    assert "less than the parent's wall clock" in found.message
    assert (found.rule, found.check) == (Rule.UNREPORTED_TIME, Check.TIMING_CHECKS)


def test_a_busy_host_stretching_half_the_calls_is_not_a_patched_clock():
    # half the round trips stretched by 2.1 ms (a median of 2.1 ms), the other half honest
    unreported = [2.1, 0.05] * 6
    checks = cross_check(_calls(0.27, 0.02), _pings(), unreported, TRUSTED)
    assert checks.unreported_ms > 0.5 and checks.violations() == []


def test_a_patched_clock_under_reports_even_the_least_stretched_calls():
    unreported = [1.4, 1.5, 1.6, 1.7, 3.9, -2.0] * 2  # one ping in six itself stretched
    [found] = cross_check(_calls(0.1, 0.02), _pings(), unreported, TRUSTED).violations()
    assert "at least 1.400 ms less than the parent's wall clock" in found.message


def test_jitter_below_the_thresholds_passes():
    # honest rounds on the H200 read up to 0.24 ms of unreported time per call
    checks = cross_check(_calls(0.4, 0.035), _pings(), [0.4] * 12, TRUSTED)
    assert checks.violations() == []


# ---- the timing loop itself, with CPU stand-ins for the GPU timer and the candidate process ----


class _Ref:
    """The reference model's surface that profiling uses (x * 2), with a compiled twin."""

    def __init__(self, log):
        self.log = log
        self.compiled = object()
        self.compile_first_call_s = 1.5

    def ensure_compiled(self, example):
        pass  # compiled at construction

    def __call__(self, x):
        self.log.append(("eager", float(x[0])))
        return x * 2

    def run_compiled(self, x):
        self.log.append(("compile", float(x[0])))
        return x * 2


class _Cand:
    """A candidate process that answers `call` with `answer(x)` and reports 0.2 ms per call,
    its GPU trace showing `kernels` (None: no trace). `extra_ms(pass, call)` is how much longer
    the parent's clock finds the call than the 0.4 ms of an honest one (store_sets starts a
    timing pass); `parent_wait_ms` and `child_wait_ms` how long the parent's thread and the
    candidate's main thread meanwhile waited for a CPU."""

    layers = {"kernel_trace": True}

    def __init__(
        self,
        log,
        answer,
        kernels=("scale_kernel",),
        extra_ms=None,
        parent_wait_ms=0.0,
        child_wait_ms=0.0,
    ):
        self.log, self.answer, self.sets, self.kernels = log, answer, None, kernels
        self.extra_ms = extra_ms or (lambda timing_pass, call: 0.0)
        self.parent_wait_ms, self.child_wait_ms = parent_wait_ms, child_wait_ms
        self.passes, self.calls = 0, 0

    def request(self, request):
        if isinstance(request, StoreSets):
            self.sets = request.sets
            self.passes, self.calls = self.passes + 1, 0
            return Stored(len(request.sets))
        return Done()

    def timed_request(self, request):
        if isinstance(request, Ping):
            return Timed(None, CallTime(0.01, 0.03, 0.06)), RoundTrip(0.0001, 0, 0)
        assert isinstance(request, Call)
        self.log.append(("candidate", request.index, request.warm_index))
        if request.refill_from is not None:  # as the child does, after its untimed call
            target, staging = self.sets[request.index], self.sets[request.refill_from]
            for dst, src in zip(target, staging, strict=True):
                dst.copy_(src)
        out = self.answer(self.sets[request.index][0])
        time = CallTime(0.24, 0.26, 0.29, 0.2, self.kernels)
        self.calls += 1
        wall_ms = 0.4 + self.extra_ms(self.passes, self.calls) + self.parent_wait_ms
        trip = RoundTrip(wall_ms / 1e3, self.parent_wait_ms, self.child_wait_ms)
        return Timed(out, time, warm_ms=0.1), trip


@pytest.fixture
def cpu_timer(monkeypatch):
    def timed_call(fn, inputs, flush):
        return fn(*inputs), CallTime(1.04, 1.06, 1.09, 1.0, ("at::native::mul",))

    monkeypatch.setattr(interleave, "timed_call", timed_call)
    monkeypatch.setattr(interleave, "synchronize", lambda: None)
    monkeypatch.setattr(profile_mod, "L2Flusher", lambda device: None)
    monkeypatch.setattr(profile_mod, "spin_up", lambda flush, ms: None)


def _profile(log, cand, timed_calls=8, min_timed_calls=5, draw=None, rules="cuda-agent"):
    draws = iter(range(1000))
    draw = draw or (lambda: [torch.full((4,), float(next(draws)))])
    config = EnvConfig(
        timed_calls=timed_calls, min_timed_calls=min_timed_calls, warmup_calls=1, rules=rules
    )
    run = CandidateRun(cand, [], [], 0, frozenset({"scale_kernel"})) if cand else None
    return profile_mod._timed(TimingJob(_Ref(log), draw, config, "cpu", candidate=run), draw())


def test_baselines_and_candidate_are_timed_interleaved_in_a_varying_order(cpu_timer):
    log = []
    result = _profile(log, _Cand(log, lambda x: x * 2), timed_calls=12)
    assert result.failure is None and result.timed_calls == 12
    # after sizing an output (one eager call on the example, set value 0), the expected outputs
    # (12 untimed eager calls) and the warm-up (eager and compile once each; the candidate warms
    # up in its own process), every input set (values 1..12) gets one timed call of each side,
    # after turn 0 each behind an untimed call of that side on the set of the turn before
    turns, rounds = log[1 + 12 + 2 :], []
    for i in range(12):
        size = 3 if i == 0 else 5
        chunk, turns = turns[:size], turns[size:]
        warm = [e for e in chunk if e[0] != "candidate" and e[1] != i + 1]
        assert sorted(warm) == ([] if i == 0 else [("compile", i), ("eager", i)])
        assert [e[1:] for e in chunk if e[0] == "candidate"] == [(i, i - 1 if i else None)]
        rounds.append(tuple(e[0] for e in chunk if e not in warm))
        if i:  # the untimed call comes right before its side's timed one
            for side in ("eager", "compile"):
                assert chunk.index((side, i)) + 1 == chunk.index((side, i + 1))
    assert turns == []
    assert all(sorted(r) == ["candidate", "compile", "eager"] for r in rounds)
    assert len(set(rounds)) > 1  # the order is drawn afresh (all 12 alike: odds 6^-11)
    # charged by the default method (events); the span's figures beside them
    assert result.method == "events"
    assert result.eager_ms == 1.04 and result.compile_ms == 1.04 and result.candidate_ms == 0.24
    span = result.by_method["span"]
    assert (span.eager_ms, span.compile_ms, span.candidate_ms) == (1.0, 1.0, 0.2)
    assert result.by_method["events"].speedup_vs_eager == pytest.approx(1.04 / 0.24)
    assert result.timing_checks["host_preemptions"] >= 0
    # the round trip beyond the reported call, less the untimed call's time and a ping's
    assert result.timing_checks["unreported_ms"] == pytest.approx((0.4 - 0.29 - 0.1) - (0.1 - 0.06))


def test_a_pass_whose_reference_waited_long_for_the_device_is_contested(cpu_timer, monkeypatch):
    def timed_call(fn, inputs, flush):  # each trusted call waits 0.8 ms for the device
        return fn(*inputs), CallTime(1.04, 1.84, 1.9, 1.0, ("at::native::mul",))

    monkeypatch.setattr(interleave, "timed_call", timed_call)
    result = _profile([], _Cand([], lambda x: x * 2))
    assert result.failure is None and result.contested
    assert result.device_wait_ms == pytest.approx(0.8)
    assert _profile([], None).contested  # a pass of the baselines alone as well


def test_a_quiet_pass_is_not_contested(cpu_timer):
    result = _profile([], _Cand([], lambda x: x * 2))
    assert result.device_wait_ms == pytest.approx(0.02) and not result.contested


def _profile_with_retry(cand):
    draws = iter(range(1000))
    draw = lambda: [torch.full((4,), float(next(draws)))]  # noqa: E731
    config = EnvConfig(timed_calls=8, min_timed_calls=5, warmup_calls=1)
    run = CandidateRun(cand, [], [], 0, frozenset({"scale_kernel"}))
    return profile_mod.profile_candidate(
        TimingJob(_Ref([]), draw, config, "cpu", cached=object(), candidate=run)
    )


@pytest.fixture
def no_gpu_lock(monkeypatch):
    monkeypatch.setattr(profile_mod, "gpu_lock", lambda device, exclusive: _NoLock())


class _NoLock:
    def __enter__(self):
        return 0.0

    def __exit__(self, *exc):
        return False


def test_the_parents_own_wait_for_a_cpu_is_not_the_candidates(cpu_timer):
    result = _profile([], _Cand([], lambda x: x * 2, parent_wait_ms=3.0))
    assert result.failure is None
    assert result.timing_checks["unreported_ms"] == pytest.approx((0.4 - 0.29 - 0.1) - (0.1 - 0.06))
    assert result.timing_checks["parent_wait_ms"] == 3.0


def test_a_dispute_the_second_pass_does_not_repeat_is_the_hosts(cpu_timer, no_gpu_lock):
    cand = _Cand([], lambda x: x * 2, extra_ms=lambda timing_pass, call: 2.5 * (timing_pass == 1))
    result = _profile_with_retry(cand)
    assert cand.passes == 2 and result.failure is None
    assert result.timing_checks["timed_passes"] == 2.0 and result.candidate_ms == 0.24


def test_a_patched_clock_is_disputed_on_both_passes(cpu_timer, no_gpu_lock):
    cand = _Cand([], lambda x: x * 2, extra_ms=lambda timing_pass, call: 1.5)
    result = _profile_with_retry(cand)
    assert cand.passes == 2 and result.failure.status.value == "violation"
    assert "as on a first timing pass: median 1.470" in result.failure.message
    assert result.failure.timing_checks["timed_passes"] == 2.0


def test_a_dispute_the_candidates_waits_for_a_cpu_explain_is_no_verdict(cpu_timer, no_gpu_lock):
    # both passes stretched 1.5 ms a call while its main thread waited 1.6 ms for a CPU: the
    # host's load or the candidate's own threads; either way nothing confirms its times
    cand = _Cand([], lambda x: x * 2, extra_ms=lambda p, c: 1.5, child_wait_ms=1.6)
    result = _profile_with_retry(cand)
    assert cand.passes == 2 and result.failure.status.value == "harness_error"
    assert "the host was too busy to confirm the candidate's times" in result.failure.message
    assert result.failure.timing_checks["child_wait_ms"] == pytest.approx(1.6)


def test_waits_that_explain_only_part_of_a_dispute_leave_it_a_violation(cpu_timer, no_gpu_lock):
    cand = _Cand([], lambda x: x * 2, extra_ms=lambda p, c: 2.5, child_wait_ms=1.0)
    result = _profile_with_retry(cand)
    assert result.failure.status.value == "violation"
    assert result.failure.timing_checks["unexplained_low_ms"] == pytest.approx(1.47)


def test_other_violations_are_not_timed_again(cpu_timer, no_gpu_lock):
    cand = _Cand([], lambda x: x * 2, kernels=(), extra_ms=lambda timing_pass, call: 1.5)
    result = _profile_with_retry(cand)
    assert cand.passes == 1 and "none of the extension's kernels ran" in result.failure.message


def test_a_call_is_charged_its_gpu_span_unless_its_window_is_much_longer():
    # launch and the way back within the allowance: the GPU's span alone
    assert CallTime(0.30, 0.32, 0.35, 0.26).charged_ms == 0.26
    # 2 ms of the window the trace did not see (host work, or GPU work out of its sight)
    assert CallTime(2.3, 2.32, 2.35, 0.26).charged_ms == pytest.approx(2.32 - UNTRACED_ALLOWANCE_MS)
    # no GPU work recorded (a reference that returns a view): the window
    assert CallTime(0.01, 0.02, 0.03).charged_ms == 0.02


def test_a_timed_call_that_ran_pytorchs_kernels_is_a_violation(cpu_timer):
    # verification traced the forward at the dispatcher; a forward that behaves there and hands
    # the work to PyTorch when it is not watched shows in the timed calls' GPU trace
    log = []
    cand = _Cand(log, lambda x: x * 2, kernels=("void at::native::vectorized_elementwise_kernel",))
    result = _profile(log, cand)
    assert result.failure.status.value == "violation"
    assert "timed call 1 of 8" in result.failure.message
    assert any("PyTorch's kernel" in v.message for v in result.failure.violations)


def test_a_partial_kernels_timed_calls_pass_under_the_kernelbench_rules(cpu_timer):
    # its own kernel and PyTorch's after it: verification listed PyTorch's, so timing times it
    kernels = ("scale_kernel(float*)", "void at::native::vectorized_elementwise_kernel")
    result = _profile([], _Cand([], lambda x: x * 2, kernels=kernels), rules="kernelbench")
    assert result.failure is None
    assert result.candidate_ms > 0


def test_a_timed_call_without_the_solutions_kernels_is_a_violation_under_kernelbench(cpu_timer):
    kernels = ("void at::native::vectorized_elementwise_kernel",)
    result = _profile([], _Cand([], lambda x: x * 2, kernels=kernels), rules="kernelbench")
    assert result.failure.status.value == "violation"
    assert "none of the extension's kernels ran" in result.failure.message
    assert not any("PyTorch's kernel" in v.message for v in result.failure.violations)


def test_a_timed_call_without_the_solutions_kernels_is_a_violation(cpu_timer):
    result = _profile([], _Cand([], lambda x: x * 2, kernels=()))
    assert result.failure.status.value == "violation"
    assert "none of the extension's kernels ran" in result.failure.message


def test_a_process_that_stopped_recording_its_gpu_work_is_a_violation(cpu_timer):
    result = _profile([], _Cand([], lambda x: x * 2, kernels=None))
    assert result.failure.status.value == "violation"
    assert "stopped recording GPU activity" in result.failure.message


def test_a_wrong_timed_output_stops_the_run_with_a_mismatch(cpu_timer):
    log = []
    result = _profile(log, _Cand(log, lambda x: x * 2 + (x >= 5).float()))
    assert result.failure.status.value == "mismatch"
    assert "timed call" in result.failure.message
    # stopped at the first wrong set, not timed to the end
    assert sum(e[0] == "candidate" for e in log) < 8


def test_sets_timed_again_are_refilled_with_content_never_timed(cpu_timer):
    # two sets fit, six calls are timed: from the third turn on, each turn's set is refilled
    log, seen = [], []
    result = _profile(log, _Cand(log, lambda x: seen.append(float(x[0])) or x * 2), 2, 6)
    assert result.failure is None
    assert result.timed_calls == 6 and result.distinct_sets == 2
    assert len(seen) == 6 and len(set(seen)) == 6  # every timed call: content never seen
    # the candidate's timed calls went to the two sets it was given, alternately
    assert [e[1] for e in log if e[0] == "candidate"] == [0, 1, 0, 1, 0, 1]
    # eager and torch.compile timed the same content as the candidate, turn by turn
    for side in ("eager", "compile"):
        assert set(seen) <= {e[1] for e in log if e[0] == side}


def test_a_memo_keyed_on_the_inputs_address_meets_refilled_sets_and_fails(cpu_timer):
    # the cheat of cheats/c5_memo_by_data_ptr where sets must be timed again: a repeat of an
    # address used to return the right output (same content) in no time
    memo: dict = {}

    def answer(x):
        return memo.setdefault(x.data_ptr(), x * 2)

    log = []
    result = _profile(log, _Cand(log, answer), 2, 6)
    assert result.failure.status.value == "mismatch"
    assert "timed call 3 of 6" in result.failure.message


def test_sets_whose_shapes_vary_are_not_refilled_and_the_run_ends_there(cpu_timer):
    # a get_inputs() drawing a new shape: draws 1-4 (the example, 2 sets, the staging set) fit
    draws = iter(range(1000))

    def draw():
        i = next(draws)
        return [torch.full((4 if i < 4 else 5,), float(i))]

    log = []
    result = _profile(log, _Cand(log, lambda x: x * 2), 2, 6, draw=draw)
    assert result.failure is None and result.timed_calls == 2


def test_the_candidate_process_refills_only_after_its_untimed_call(monkeypatch):
    from cuda_agent.sandbox.process import child

    seen = []
    monkeypatch.setattr(child, "synchronize", lambda: None)
    monkeypatch.setattr(child, "_poison", lambda nbytes, device: None)
    monkeypatch.setattr(
        child, "timed_call", lambda fn, inputs, flush: (fn(*inputs), CallTime(0.2, 0.21, 0.3))
    )
    state = child._State.__new__(child._State)
    state.device, state.flush, state.held = "cpu", None, None
    state.model = lambda x: seen.append(float(x[0])) or x * 2
    state.sets = [[torch.full((4,), 1.0)], [torch.full((4,), 7.0)]]  # a set, then the staging set
    reply = state.handle(Call(index=0, warm_index=0, poison_bytes=0, refill_from=1))
    assert seen == [1.0, 7.0]  # the untimed call saw the old content, the timed one the new
    assert float(reply.output[0]) == 14.0 and reply.warm_ms >= 0


def test_baselines_alone_time_eager_and_compile_only(cpu_timer):
    log = []
    result = _profile(log, None, timed_calls=6)
    assert result.failure is None and result.candidate_ms is None
    turns = log[1 + 2 :]  # after sizing an output and the warm-up
    # 6 timed calls of each side, 5 of them behind an untimed one
    assert sorted(e[0] for e in turns) == ["compile"] * 11 + ["eager"] * 11


def test_spin_up_keeps_the_device_busy_for_the_time_asked_and_waits_for_it(monkeypatch):
    from cuda_agent.sandbox.timing import call as timing

    syncs, flushes = [], []
    monkeypatch.setattr(timing, "_sync", lambda: syncs.append(len(flushes)))
    start = time.perf_counter()
    timing.spin_up(lambda: flushes.append(1), 20.0)
    assert time.perf_counter() - start >= 0.02
    assert flushes and syncs[-1] == len(flushes)  # the last wait comes after the last read
    assert all(b - a <= 16 for a, b in zip([0, *syncs], syncs, strict=False))  # never far ahead


class _Uncompiled(_Ref):
    """A reference whose torch.compile copy is made by the profiler, noting the lock it holds."""

    def __init__(self, log, held):
        super().__init__(log)
        self.compiled, self.held = None, held

    def ensure_compiled(self, example):
        self.log.append(f"first compiled call, lock {self.held[-1] if self.held else None}")
        self.compiled = object()
        return self.compile_first_call_s


def test_the_first_compiled_call_holds_the_gpu_lock_shared_and_timing_exclusive(
    cpu_timer, monkeypatch
):
    # its kernels (and inductor's benchmarks of kernel configurations) must never overlap
    # another process's timing on the same GPU
    from contextlib import contextmanager

    log, held = [], []

    @contextmanager
    def fake_lock(device, exclusive):
        held.append("exclusive" if exclusive else "shared")
        log.append(f"lock {held[-1]}")
        yield 0.0
        log.append(f"unlock {held.pop()}")

    monkeypatch.setattr(profile_mod, "gpu_lock", fake_lock)
    ref = _Uncompiled(log, held)
    draw = lambda: [torch.ones(4)]  # noqa: E731
    config = EnvConfig(timed_calls=4, warmup_calls=1)
    release = lambda: log.append(f"release, lock {held[-1]}")  # noqa: E731
    result = profile_mod.profile_candidate(TimingJob(ref, draw, config, "cpu", release=release))
    assert log[:4] == [
        "lock shared",
        "first compiled call, lock shared",
        "release, lock shared",  # what the first call cached is not held while waiting
        "unlock shared",
    ]
    assert log[4] == "lock exclusive" and log[-1] == "unlock exclusive"
    # warm-up, timed calls and the untimed ones before all timed calls but the first: inside
    compiled = [e for e in log[5:-1] if e[0] == "compile"]
    assert len(compiled) == 1 + 2 * result.timed_calls - 1
    # the timing sets' memory goes back before another process may time
    assert log[-2] == "release, lock exclusive"
    assert result.compile_first_call_s == 1.5 and result.compile_ms == 1.04  # events
