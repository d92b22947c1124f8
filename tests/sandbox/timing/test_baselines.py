"""The baseline cache on disk: written atomically, never reused across timing methods, and never
written from a pass that other work on the GPU slowed."""

from types import SimpleNamespace

from cuda_agent.sandbox import EnvConfig
from cuda_agent.sandbox.timing.baselines import (
    TIMING_METHOD,
    BaselineRecord,
    baseline_path,
    load_baseline,
    save_json,
)
from cuda_agent.sandbox.timing.profile import ProfileResult
from cuda_agent.sandbox.trusted import TrustedSide
from cuda_agent.sandbox.verdict import MethodTimes


def _record(method):
    return BaselineRecord(
        task="t",
        task_hash="abc",
        gpu="NVIDIA H200",
        torch_version="2.11.0+cu130",
        distribution="task",
        eager_ms=1.0,
        eager_spread=0.01,
        compile_ms=0.5,
        compile_spread=0.01,
        compile_first_call_s=9.0,
        timed_calls=30,
        date=BaselineRecord.now(),
        timing_method=method,
    )


def test_a_record_of_this_timing_method_is_reused(tmp_path):
    path = baseline_path(tmp_path, "abc", "NVIDIA H200", "2.11.0+cu130")
    save_json(path, _record(TIMING_METHOD))
    assert load_baseline(path) == _record(TIMING_METHOD).model_copy(
        update={"date": load_baseline(path).date}
    )
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary file left


def test_a_record_of_another_or_no_timing_method_is_timed_again(tmp_path):
    path = baseline_path(tmp_path, "abc", "NVIDIA H200", "2.11.0+cu130")
    for method in (None, TIMING_METHOD - 1):
        save_json(path, _record(method))
        assert load_baseline(path) is None


def test_an_unreadable_record_is_timed_again(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text("{not json")
    assert load_baseline(path) is None
    assert load_baseline(tmp_path / "missing.json") is None


def _timed(wait_ms):
    return ProfileResult(1.0, 0.01, 0.5, 0.01, 9.0, 30, device_wait_ms=wait_ms)


def test_baselines_timed_while_other_work_shared_the_gpu_are_not_cached(tmp_path):
    side = TrustedSide(EnvConfig(cache_dir=tmp_path), None, "NVIDIA H100 80GB HBM3")
    ref = SimpleNamespace(task=SimpleNamespace(name="t", hash="abc"), module_mode="train")
    audit = SimpleNamespace(distribution="task")
    record = side.store_baseline(ref, audit, _timed(0.815))
    assert record.device_wait_ms == 0.815 and record.eager_ms == 1.0
    assert side.compile_baseline(ref) is None  # timed again on the next evaluation
    side.store_baseline(ref, audit, _timed(0.03))
    assert side.compile_baseline(ref).device_wait_ms == 0.03


def test_one_record_serves_every_timing_method(tmp_path):
    by = {"events": 1.04, "kernels": 0.9, "span": 1.0}
    compiled = {"events": 0.55, "kernels": 0.45, "span": 0.5}
    timed = ProfileResult(1.04, 0.01, 0.55, 0.01, 9.0, 30, eager_launch_ms=0.02)
    timed.by_method = {
        m: MethodTimes(eager_ms=by[m], compile_ms=compiled[m])
        for m in ("events", "kernels", "span")
    }
    ref = SimpleNamespace(task=SimpleNamespace(name="t", hash="abc"), module_mode="train")
    audit = SimpleNamespace(distribution="task")
    TrustedSide(EnvConfig(cache_dir=tmp_path), None, "H100").store_baseline(ref, audit, timed)
    for method in ("events", "kernels", "span"):
        side = TrustedSide(EnvConfig(cache_dir=tmp_path, timing=method), None, "H100")
        record = side.compile_baseline(ref)
        assert record.timing == method
        assert (record.eager_ms, record.compile_ms) == (by[method], compiled[method])
        assert record.eager_launch_ms == 0.02 and not record.launch_bound
