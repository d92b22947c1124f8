"""Stand-in for the evaluation GPUs (there are none in CPU CI): verdicts decided by the text of
the solution. Each call is appended to `log` (JSON lines) so a test sees what was evaluated."""

from __future__ import annotations

import json

from cuda_agent.bench.store import failed_verdict
from cuda_agent.sandbox import Solution, Stage, Status, Verdict, milestone_reward
from cuda_agent.task import Task

FAST = "# fast"  # a model_new.py with this line is correct and 2x faster than eager and compile
CORRECT = "# correct"  # correct, no faster


class ScriptedEvaluator:
    """`harness_errors`: this many first calls end in a harness_error, whatever the solution.
    `timing` is taken as the Environment takes it, so a config's declared method reaches here
    and is logged with each call."""

    def __init__(self, log: str | None = None, harness_errors: int = 0, timing: str = "events"):
        self.log = log
        self.harness_errors = harness_errors
        self.timing = timing

    def evaluate(self, task: Task, solution: Solution, stage: Stage) -> Verdict:
        if self.log is not None:
            with open(self.log, "a") as fh:
                fh.write(
                    json.dumps(
                        {
                            "task": task.name,
                            "stage": stage.value,
                            "timing": self.timing,
                            "files": solution.files,
                        }
                    )
                    + "\n"
                )
        if self.harness_errors > 0:
            self.harness_errors -= 1
            failed = failed_verdict(task, stage, Status.HARNESS_ERROR, "the harness ran out")
            return failed.model_copy(update={"compiled": True})  # as the Environment says it
        code = solution.files["model_new.py"]
        if FAST not in code and CORRECT not in code:
            return failed_verdict(task, stage, Status.COMPILE_ERROR, "kernels/: no kernel found")
        correct = stage != Stage.COMPILE
        speedup = (2.0 if FAST in code else 1.0) if stage == Stage.PROFILE else None
        return Verdict(
            task=task.name,
            task_hash=task.hash,
            stage=stage,
            status=Status.OK,
            compiled=True,
            correct=correct,
            eager_ms=1.0 if speedup else None,
            compile_ms=1.0 if speedup else None,
            candidate_ms=1.0 / speedup if speedup else None,
            speedup_vs_eager=speedup,
            speedup_vs_compile=speedup,
            reward=milestone_reward(correct, speedup, speedup),
        )
