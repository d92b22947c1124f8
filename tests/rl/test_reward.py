"""Stage 1's veRL reward function: a response's milestone reward, never a harness failure's."""

from __future__ import annotations

import pytest

from cuda_agent.rl.reward import HARNESS_RETRIES, compute_score
from cuda_agent.task import load_task
from tests.rl.evaluators import FAST

SCRIPTED = "tests.rl.evaluators:ScriptedEvaluator"
TASK = load_task("elementwise_chain")


def _response(marker: str) -> str:
    entry = f"{marker}\nimport torch\nclass ModelNew(torch.nn.Module):\n    pass\n"
    kernel = 'extern "C" void launch() {}\n'
    return f"```cuda kernels/chain.cu\n{kernel}```\n\n```python model_new.py\n{entry}```\n"


def _score(response: str, **kwargs) -> dict:
    info = {"task": TASK.to_record()}
    return compute_score("cuda_agent", response, TASK.hash, info, SCRIPTED, kwargs)


def test_the_score_is_the_milestone_reward():
    assert _score(_response(FAST)) == {
        "score": 3.0,
        "extracted": True,
        "compiled": True,
        "correct": True,
    }
    assert _score("no code here")["score"] == -1.0


def test_a_harness_error_is_evaluated_again_not_scored():
    scored = _score(_response(FAST), harness_errors=HARNESS_RETRIES)
    assert scored["score"] == 3.0 and scored["correct"]


def test_a_harness_that_keeps_failing_stops_the_step_with_what_to_change():
    with pytest.raises(RuntimeError, match="no verdict on the response.*fewer evaluations"):
        _score(_response(FAST), harness_errors=HARNESS_RETRIES + 1)


def test_a_row_for_another_task_is_refused():
    with pytest.raises(ValueError, match="ground truth"):
        compute_score("cuda_agent", _response(FAST), "0" * 16, {"task": TASK.to_record()})
