"""The execution filters, on programs built to fail each one; run as the pipeline runs them."""

import random
import statistics

import pytest

from cuda_agent.sandbox import run_isolated
from cuda_agent.synth.batch import COMPILE, BatchJob, Item, run_batch
from cuda_agent.synth.filters import FilterConfig, compile_check, eager_check, outside_for_sure
from tests.synth.programs import (
    CONSTANT,
    DEGENERATE,
    GOOD,
    GOOD_LABELS,
    INDISTINGUISHABLE,
    NONFINITE,
    STOCHASTIC,
)

WIDE = FilterConfig(window_ms=(0.0, 1e6), threads=1)


def _eager(code, cfg=WIDE):
    res = run_isolated(eager_check, (code, cfg), timeout_s=300)
    assert res.ok, res.error
    return res.value


def test_a_good_program_passes_with_labels_shapes_and_runtime():
    rec = _eager(GOOD)
    assert rec["ok"] and rec["stage"] == "labels", rec
    assert rec["ops"] == GOOD_LABELS
    assert all(n >= 1 for n in rec["label_counts"].values())
    assert rec["input_shapes"] == [[32, 64]] and rec["output_shapes"] == [[32]]
    assert rec["eager_ms"] > 0
    assert ["addmm", 1] in rec["aten"] and ["gelu", 2] in rec["aten"]


@pytest.mark.parametrize(
    ("code", "reason"),
    [
        (STOCHASTIC, "nondeterministic"),
        (CONSTANT, "constant"),
        (NONFINITE, "nonfinite"),
        (DEGENERATE, "degenerate"),
        (INDISTINGUISHABLE, "indistinguishable"),
        ("import torch\nclass Model: pass\ndef get_inputs(): return []\n"
         "def get_init_inputs(): return []\n", "error"),
    ],
)  # fmt: skip
def test_each_filter_rejects_what_it_is_for(code, reason):
    rec = _eager(code)
    assert not rec["ok"] and rec["stage"] == "eager" and rec["reason"] == reason, rec


def test_the_runtime_window_is_enforced():
    rec = _eager(GOOD, FilterConfig(window_ms=(5000.0, 6000.0), threads=1))
    assert rec["reason"] == "too fast" and "outside [5000.0, 6000.0]" in rec["detail"]


def test_torch_compile_runs_and_agrees_with_eager():
    job = BatchJob(COMPILE, (Item(0, GOOD),), WIDE, cap_s=600, compose_cap_s=60, timeout_s=900,
                   shared_cache=True)  # fmt: skip
    result = run_batch(job)  # as the pipeline runs it
    [(stage, rec)] = result.records
    assert stage == "compile" and rec["ok"], rec
    assert rec["compile_ms"] > 0 and rec["compile_s"] > 0


@pytest.mark.gpu
def test_filters_on_the_gpu_time_inside_the_default_window():
    cfg = FilterConfig(device="cuda", window_ms=(0.0, 1e6))
    rec = _eager(GOOD.replace("torch.randn(32, 64)", "torch.randn(8192, 64)"), cfg)
    assert rec["ok"], rec
    compiled = run_isolated(compile_check, (GOOD, cfg), timeout_s=600).value
    assert compiled["ok"], compiled


def test_a_timing_stops_early_only_when_the_median_is_decided():
    """Stopping once most samples fall outside the window never changes the verdict."""
    rng = random.Random(0)
    window, reps = (1.0, 2.0), 7
    for _ in range(2000):
        samples = [rng.choice([0.5, 1.5, 3.0]) * rng.uniform(0.8, 1.2) for _ in range(reps)]
        full = statistics.median(samples)
        decided = (outside_for_sure(samples[:k], window, reps) for k in range(1, reps + 1))
        early = next((d for d in decided if d is not None), None)
        if early is None:
            assert window[0] <= full <= window[1]
        else:
            assert (early > window[1]) == (full > window[1])
            assert (early < window[0]) == (full < window[0])
            assert not window[0] <= early <= window[1]


def test_a_program_far_slower_than_the_window_is_rejected_before_it_is_timed():
    rec = _eager(GOOD, FilterConfig(window_ms=(1e-6, 1e-5), threads=1))
    assert rec["reason"] == "too slow" and "untimed call" in rec["detail"], rec


def test_the_gpu_lock_is_shared_for_running_and_exclusive_for_timing(tmp_path):
    """In a confined child (the lock files lie outside its workdir, so it may only read them)."""
    lock = tmp_path / "gpu.lock"
    for path in (lock, tmp_path / "gpu.lock.turnstile"):
        path.touch()
    res = run_isolated(_probe_lock, (str(lock),), timeout_s=120)
    assert res.ok, res.error
    assert res.value == {"shared": (True, False), "exclusive": (False, False)}


def _probe_lock(lock: str) -> dict:
    """While holding the lock each way: could another holder take it shared, exclusively?"""
    import fcntl

    from cuda_agent.synth.filters import _gpu

    def can(fh, mode) -> bool:
        try:
            fcntl.flock(fh, mode | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(fh, fcntl.LOCK_UN)
        return True

    seen = {}
    for name, exclusive in (("shared", False), ("exclusive", True)):
        with _gpu(FilterConfig(device="cuda", gpu_lock=lock), exclusive), open(lock, "rb") as fh:
            seen[name] = (can(fh, fcntl.LOCK_SH), can(fh, fcntl.LOCK_EX))
    return seen
