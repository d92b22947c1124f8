"""The baseline cache on disk: written atomically, and never reused across timing methods."""

from cuda_agent.sandbox.timing.baselines import (
    TIMING_METHOD,
    BaselineRecord,
    baseline_path,
    load_baseline,
    save_json,
)


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
