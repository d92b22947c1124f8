"""On the GPU: a scripted episode writes a kernel with a bug, sees verification fail, fixes it,
profiles and submits; the episode's answer is the fixed, correct solution."""

from __future__ import annotations

import pytest
import torch

from cuda_agent.agent import AgentConfig, OpenAIModel, load_trajectory, run_episode
from cuda_agent.sandbox import Stage, Status

from .conftest import model_config
from .scripted import call, reply

KERNEL = "kernels/elementwise_chain.cu"
RIGHT, WRONG = "#define CLAMP_HI 2.0f", "#define CLAMP_HI 1.0f"  # the bug: clamps at 1.0


@pytest.mark.gpu
@pytest.mark.timeout(900)
def test_episode_fixes_a_wrong_kernel(serve, tmp_path, task, environment, chain_files):
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    files = dict(chain_files)
    assert files[KERNEL].count(RIGHT) == 1
    files[KERNEL] = files[KERNEL].replace(RIGHT, WRONG)
    script = [
        reply(call("read_file", path="model.py")),
        reply(*[call("write_file", path=p, content=t) for p, t in files.items()]),
        reply(call("compile")),
        reply(call("verify")),
        reply(call("edit_file", path=KERNEL, old_string=WRONG, new_string=RIGHT)),
        reply(call("verify")),
        reply(call("profile")),
        reply(call("submit")),
    ]
    server = serve(script)
    config = model_config(server)
    result = run_episode(
        task,
        tmp_path / "ws",
        OpenAIModel(config),
        environment,
        tmp_path / "trajectory.jsonl",
        AgentConfig(max_turns=20),
        config,
    )
    record = load_trajectory(tmp_path / "trajectory.jsonl")
    verdicts = {t.index: t.verdict for t in record.turns if t.verdict is not None}
    assert verdicts[2].compiled, verdicts[2].message
    assert verdicts[3].status == Status.MISMATCH and not record.turns[3].observations[0].ok
    assert verdicts[5].correct, verdicts[5].message
    assert verdicts[6].stage == Stage.PROFILE and verdicts[6].candidate_ms is not None
    assert result.reason == "submitted"
    best = result.best
    assert best is not None and best.verdict.correct and best.verdict.reward >= 1
    assert RIGHT in best.solution.files[KERNEL]
    assert record.end.reward == best.verdict.reward == result.reward
