"""The execution filters, on programs built to fail each one; run as the pipeline runs them."""

import random
import statistics
import time

import pytest
import torch
from torch.profiler import ProfilerActivity, profile

from cuda_agent.sandbox import run_isolated
from cuda_agent.synth import filters
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
    program,
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


def test_a_program_whose_batch_slice_is_far_too_slow_never_runs_at_full_size():
    # 20 ms per row: 64 rows would take 1.3 s, over the 25 x 2 x 10 ms = 500 ms bound of a first
    # call; the probe's two calls on 4 rows take 160 ms and predict it
    code = program("time.sleep(0.02 * x.shape[0])\nreturn x * 2", inputs="torch.randn(64, 8)",
                   head="import time\n")  # fmt: skip
    start = time.perf_counter()
    rec = _eager(code, FilterConfig(window_ms=(0.001, 10.0), threads=1))
    took = time.perf_counter() - start
    assert rec["reason"] == "too slow" and "4 of the batch's 64" in rec["detail"], rec
    assert took < 20  # (the child's start included) it did not run its 1.3 s call thrice


def test_a_program_the_batch_slice_cannot_run_is_judged_at_full_size():
    code = program("return torch.relu(x.view(64, 8))", inputs="torch.randn(64, 8)")
    rec = _eager(code)
    assert rec.get("reason") != "too slow" and rec["eager_ms"] > 0, rec  # it ran and was timed


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


def _relaid(t: torch.Tensor, how: str) -> torch.Tensor:
    """`t`'s values in another memory layout: as is, permuted (flattening it copies), or a slice
    of a larger tensor (gaps between its elements)."""
    if how == "permuted" and t.dim() >= 2:
        return t.transpose(0, -1).contiguous().transpose(0, -1)
    if how == "sliced" and t.dim() >= 1:
        wide = torch.zeros((*t.shape[:-1], 2 * t.shape[-1]), dtype=t.dtype)
        wide[..., ::2] = t
        return wide[..., ::2]
    return t


_SHAPES = [(), (0,), (1,), (7,), (8,), (15,), (3, 5), (6, 0, 2), (2, 3, 4), (5, 7), (2, 1, 9, 2)]


def _pairs(seed: int, rtol: float, atol: float):
    """(x, y) pairs of random shapes, dtypes and layouts: y within tolerance of x but for a few
    values just inside or past its edge, far off, zero, NaN or Inf (in either tensor)."""
    gen = torch.Generator().manual_seed(seed)
    rng = random.Random(seed)
    for _ in range(300):
        shape = rng.choice(_SHAPES)
        dtype = rng.choice([torch.float32, torch.float64, torch.float16, torch.int64, torch.bool])
        x = torch.randn(shape, generator=gen, dtype=torch.float64)
        x *= 10.0 ** torch.randint(-8, 9, shape, generator=gen)  # mixed magnitudes
        y = x * (1 + rtol * (torch.rand(shape, generator=gen, dtype=torch.float64) - 0.5))
        for _ in range(rng.choice([0, 0, 1, 2, 5])) if x.numel() else ():
            i, which = rng.randrange(x.numel()), rng.choice([x, y])
            edge = atol + rtol * abs(float(y.view(-1)[i]))
            which.view(-1)[i] = rng.choice([
                x.view(-1)[i] + edge * rng.choice([0.99, 1.01]), x.view(-1)[i] * 3 + 1, 0.0,
                float("nan"), float("inf"), -float("inf"),
            ])  # fmt: skip
        if not dtype.is_floating_point:
            x, y = x.nan_to_num().clamp(-3, 3).round(), y.nan_to_num().clamp(-3, 3).round()
        x, y = x.to(dtype), y.to(dtype)
        if rng.random() < 0.2:
            y = x.clone()
        layouts = ("as is", "permuted", "sliced")
        yield _relaid(x, rng.choice(layouts)), _relaid(y, rng.choice(layouts))


@pytest.mark.parametrize("chunk", [1, 4, 7])
def test_chunked_comparisons_equal_the_whole_tensor_ones(monkeypatch, chunk):
    """The filters' comparisons give what torch's whole-tensor ones give on float64 copies."""
    monkeypatch.setattr(filters, "_CHUNK", chunk)
    rtol, atol = 1e-2, 1e-3
    seen = set()
    for x, y in _pairs(chunk, rtol, atol):
        close = torch.allclose(x.double(), y.double(), rtol, atol)
        near_zero = torch.allclose(x.double(), torch.zeros_like(x).double(), rtol, atol)
        finite = not x.dtype.is_floating_point or bool(torch.isfinite(x).all())
        assert filters._allclose(x, y, rtol, atol) == close, (x, y)
        assert filters._near_zero(x, atol) == near_zero, x
        assert filters._equal(x, y) == torch.equal(x, y), (x, y)
        assert filters._finite(x) == finite, x
        seen.add((close, near_zero, torch.equal(x, y), finite))
    assert {c for c, *_ in seen} == {True, False} and len(seen) >= 6, seen  # both verdicts, each
    other = torch.zeros(3, 5)
    assert not filters._allclose(other, other.reshape(5, 3), rtol, atol)  # shapes first
    assert not filters._equal(other, other.reshape(15))


def test_each_element_is_compared_across_piece_boundaries(monkeypatch):
    monkeypatch.setattr(filters, "_CHUNK", 4)
    x = torch.rand(3, 5, 2).transpose(0, 1)  # a permuted output: its pieces are copies
    assert filters._allclose(x, x.clone(), 0.0, 0.0) and filters._equal(x, x.clone())
    for i in range(x.numel()):
        at = tuple(torch.unravel_index(torch.tensor(i), x.shape))
        y = x.clone()
        y[at] = 7.0
        assert not filters._allclose(x, y, 0.1, 0.1) and not filters._equal(x, y)
        assert not filters._near_zero(y, 1.0)
        y[at] = float("nan")
        assert not filters._finite(y)


def _peak_bytes(fn) -> int:
    """The most CPU memory allocated at once while `fn` runs, beyond what it started with (from
    the profiler's record of every allocation and free)."""
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    events = [e for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"]
    live = peak = 0
    for event in sorted(events, key=lambda e: e.start_ns()):
        live += event.nbytes()
        peak = max(peak, live)
    return peak


def test_comparing_large_outputs_needs_memory_for_a_few_pieces_only(monkeypatch):
    """Each output is 4 MB (8 MB in float64); the comparisons may hold ~50 bytes per element of a
    piece, never a whole-output copy."""
    chunk = 1 << 12
    monkeypatch.setattr(filters, "_CHUNK", chunk)
    cfg = FilterConfig()
    a = torch.rand(1024, 1024) * cfg.atol  # near zero, the distinguishing values last: each
    a[-1, -1] = 1.0  # filter must read everything
    b = a.clone()
    b[-1, -1] = 2.0
    permuted, again = b.t().contiguous().t(), a.clone()
    for check in (
        lambda: filters._check_outputs([a], [b], True, cfg),  # passes every filter
        lambda: filters._check_outputs([a], [permuted], True, cfg),
        lambda: filters._allclose(a, again, 0.0, 0.0),
    ):
        assert _peak_bytes(check) <= 64 * chunk
    # (the profiler does see whole-output copies)
    assert _peak_bytes(lambda: torch.allclose(a.double(), b.double())) > 16 * a.numel()


def test_eager_check_holds_no_more_than_two_input_and_two_output_sets():
    """A program whose input and output are each 4 MB: eager_check never holds more than the
    third call's inputs and output beside the first call's, plus pieces."""
    size = 1 << 20
    code = program("return x * 2.0", inputs=f"torch.randn({size})")
    res = run_isolated(_profiled_eager, (code,), timeout_s=300)
    assert res.ok, res.error
    rec, peak = res.value
    assert rec["ok"], rec
    assert peak <= 4 * 4 * size + (2 << 20), peak


def _profiled_eager(code: str) -> tuple[dict, int]:
    """In a child: eager_check's record and peak memory, with pieces far smaller than the
    outputs (at the default size each output would be a single piece)."""
    filters._CHUNK = 1 << 12
    out = {}
    peak = _peak_bytes(lambda: out.update(eager_check(code, WIDE)))
    return out, peak
