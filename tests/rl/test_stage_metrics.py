"""A stage's metrics over its attempts: veRL's file logger truncates its file, so a cut stage run
again would otherwise lose every step before its last checkpoint."""

from __future__ import annotations

import json
from pathlib import Path

from cuda_agent.rl.stage_metrics import keep_earlier_attempt, metrics_file, stage_steps


def log_steps(path: Path, steps: dict[int, float]) -> None:
    path.write_text(
        "".join(json.dumps({"step": s, "data": {"loss": v}}) + "\n" for s, v in steps.items())
    )


def test_earlier_attempts_and_the_current_one_read_as_one_run_of_steps(tmp_path):
    log_steps(metrics_file(tmp_path, "value"), {1: 0.9, 2: 0.8, 3: 0.7})
    assert keep_earlier_attempt(tmp_path, "value") == tmp_path / "value.attempt-1.jsonl"
    assert not metrics_file(tmp_path, "value").exists()
    # the second attempt resumed from the checkpoint of step 2 and ran step 3 again
    log_steps(metrics_file(tmp_path, "value"), {3: 0.65, 4: 0.6})
    assert [s["loss"] for s in stage_steps(tmp_path, "value")] == [0.9, 0.8, 0.65, 0.6]


def test_attempts_are_read_in_their_numeric_order(tmp_path):
    for k in range(1, 12):
        log_steps(metrics_file(tmp_path, "ppo"), {k: float(k)})
        keep_earlier_attempt(tmp_path, "ppo")
        log_steps(metrics_file(tmp_path, "ppo"), {1: -1.0} if k == 11 else {})
    assert (tmp_path / "ppo.attempt-11.jsonl").is_file()
    # attempt 11 (step 11) comes after attempt 2, and the current attempt's step 1 stands
    assert [s["loss"] for s in stage_steps(tmp_path, "ppo")] == [-1.0, *map(float, range(2, 12))]


def test_an_attempt_that_logged_nothing_is_not_kept(tmp_path):
    metrics_file(tmp_path, "rft").write_text("")
    assert keep_earlier_attempt(tmp_path, "rft") is None
    assert keep_earlier_attempt(tmp_path, "warmup") is None  # no file at all
    assert stage_steps(tmp_path, "rft") == [] and stage_steps(tmp_path, "warmup") == []
