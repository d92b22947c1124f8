"""The four trainable stages in order on one GPU (cuda_agent.rl.pipeline with the *_1gpu configs):
single-turn PPO scored by the environment, RFT with veRL's SFT trainer on 8 episodes, critic
pre-training, two multi-turn PPO steps on the hf rollout, each stage from the previous stage's
merged model. The run folder goes to $CUDA_AGENT_RL_RUN when set (the GPU suite keeps it: each
stage's records in pipeline.jsonl, checkpoints, merged models), else to a temporary folder."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.rl.extras import VERL_MISSING
from tests.rl.test_pipeline import episodes

pytest.importorskip("verl", reason=VERL_MISSING)
REPO = Path(__file__).resolve().parents[2]


@pytest.mark.gpu
def test_the_stages_run_in_order_each_from_the_last_merged_model(tmp_path, tiny_model):
    run = Path(os.environ.get("CUDA_AGENT_RL_RUN") or tmp_path / "run")
    out = subprocess.run(
        [
            sys.executable, "-m", "cuda_agent.rl.pipeline", "--run-dir", str(run),
            "--model", str(tiny_model), "--trajectories", str(episodes(tmp_path / "episodes")),
            "--tasks", "builtin",
        ],
        capture_output=True, text=True, cwd=REPO, timeout=3000,
    )  # fmt: skip
    (run / "pipeline.log").write_text(out.stdout + out.stderr)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-4000:]
    records = [json.loads(line) for line in (run / "pipeline.jsonl").read_text().splitlines()]
    assert [r["stage"] for r in records] == ["warmup", "rft", "value", "ppo"]
    assert all(r["returncode"] == 0 for r in records)
    for name in ("warmup_actor", "rft_actor", "value_critic", "ppo_actor"):
        assert (run / "models" / name / "config.json").is_file()
    assert records[3]["critic"] == str(run / "models" / "value_critic")
