"""The pipeline's own failures: an evaluation that raised in the harness is the harness's error,
told in one line, never the candidate's runtime error."""

from __future__ import annotations

from cuda_agent.bench.pipeline import Pipeline
from cuda_agent.bench.store import SERVICE_ERROR
from cuda_agent.bench.workers import WorkerError, WorkerLost
from cuda_agent.sandbox import Stage, Status, read_solution
from cuda_agent.task import load_task
from tests.bench.conftest import FIXTURES, GOOD

TRACEBACK = """Traceback (most recent call last):
  File "cuda_agent/sandbox/environment.py", line 173, in _evaluate
    return evaluate_single_file(
           ^^^^^^^^^^^^^^^^^^^^^
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 512.00 MiB. GPU 0 has a total \
capacity of 79.18 GiB of which 218.75 MiB is free.
"""


class _Raising:
    """A GPU worker whose every call fails as `err`."""

    def __init__(self, err: Exception):
        self.name, self.restarts, self.pid, self.err = "gpu0", 0, None, err

    def call(self, method, args, timeout_s):
        raise self.err

    def close(self):
        pass

    def kill(self):
        pass


def _verdict(err: Exception):
    task, solution = load_task(GOOD[0]), read_solution(FIXTURES / GOOD[0])
    pipeline = Pipeline([], [_Raising(err)], call_timeout_s=5)
    try:
        return pipeline.submit_evaluation(task, solution, Stage.PROFILE).result(timeout=30)
    finally:
        pipeline.close()


def test_an_evaluation_that_raised_is_a_harness_error_in_one_line():
    verdict = _verdict(WorkerError(TRACEBACK))
    assert verdict.status == Status.HARNESS_ERROR and verdict.reward == -1
    assert verdict.service_error and verdict.message.startswith(SERVICE_ERROR)
    assert "\n" not in verdict.message and "Traceback" not in verdict.message
    assert verdict.message.endswith("218.75 MiB is free.")


def test_a_worker_lost_while_timing_out_is_a_timeout():
    verdict = _verdict(WorkerLost("the call overran 5 s", timed_out=True))
    assert verdict.status == Status.TIMEOUT and "lost twice" in verdict.message
