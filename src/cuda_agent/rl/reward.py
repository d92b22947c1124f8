"""Stage 1's reward: veRL's custom reward function signature over one single-turn response.

veRL's reward manager calls `compute_score(data_source, solution_str, ground_truth, extra_info)`
with the decoded response and the dataset row's fields; `reward_kwargs` from the config name the
evaluator. The score is the environment's milestone reward at stage profile, -1 when the
response holds no valid solution. The function imports nothing from veRL.

A `harness_error` verdict (the harness itself ran out of GPU memory, after the Environment's own
try alone on the GPU, or the host was too busy on two timing passes to confirm the times the
candidate's process reported) says nothing about the response, so it never becomes a reward: the
response is evaluated again, and when the harness keeps failing the step stops with what to
change, rather than train on a -1 the policy did not earn.
"""

from __future__ import annotations

from typing import Any

from cuda_agent.rl.evaluators import LOCAL, EvaluatorSpec, open_evaluator
from cuda_agent.rl.single_turn import extract_solution
from cuda_agent.sandbox import Stage, Status
from cuda_agent.task import Task

HARNESS_RETRIES = 2


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: str,
    extra_info: dict | None = None,
    evaluator: str = LOCAL,
    evaluator_kwargs: dict[str, Any] | None = None,
    **_: Any,
) -> dict[str, float | bool]:
    if not extra_info or "task" not in extra_info:
        raise ValueError("extra_info has no task record; build the dataset with cuda_agent.rl")
    task = Task.from_record(_plain(extra_info["task"]))
    if task.hash != ground_truth:
        raise ValueError(f"row for {task.name}: ground truth {ground_truth} is not the task's hash")
    found = extract_solution(solution_str)
    if found.solution is None:
        return {"score": -1.0, "extracted": False, "compiled": False, "correct": False}
    with open_evaluator(EvaluatorSpec(evaluator, dict(evaluator_kwargs or {}))) as env:
        verdict = env.evaluate(task, found.solution, Stage.PROFILE)
        for _ in range(HARNESS_RETRIES):
            if verdict.status != Status.HARNESS_ERROR:
                break
            verdict = env.evaluate(task, found.solution, Stage.PROFILE)
    if verdict.status == Status.HARNESS_ERROR:
        raise RuntimeError(
            f"{task.name}: the harness failed {1 + HARNESS_RETRIES} times to evaluate a response "
            f"({verdict.message.splitlines()[0]}); that is no verdict on the response, so it "
            "gets no reward: run fewer evaluations per GPU or per host, or lower the "
            "environment's timing_memory_gb"
        )
    return {
        "score": float(verdict.reward),
        "extracted": True,
        "compiled": verdict.compiled,
        "correct": verdict.correct,
    }


def _plain(record: Any) -> dict:
    """A task record as veRL hands it over (lists may arrive as numpy arrays)."""
    return {k: (v.tolist() if hasattr(v, "tolist") else v) for k, v in dict(record).items()}
