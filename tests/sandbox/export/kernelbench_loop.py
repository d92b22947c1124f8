"""An evaluation loop for single-file submissions written the way KernelBench evaluates one, as
an outside check of what `cuda-agent export --to kernelbench` writes:

    python kernelbench_loop.py TASK.py SUBMISSION.py [--trials N] [--seed S]

The submission is executed as a module (its load_inline build runs then); Model and ModelNew are
each built right after seeding torch with one seed, and no state_dict is loaded; each trial
seeds torch with its own seed, draws fresh inputs from get_inputs(), and compares the outputs
with torch.allclose(atol=1e-2, rtol=1e-2). One JSON line on standard output says how it went.
Run it in a fresh process: the build and the modules stay in the interpreter.
"""

from __future__ import annotations

import argparse
import json
import random

import torch

TOLERANCE = 1e-2


def _module(path: str, name: str) -> dict:
    namespace = {"__name__": name}
    with open(path) as fh:
        exec(compile(fh.read(), path, "exec"), namespace)  # noqa: S102 - the file under test
    return namespace


def _cuda(values):
    return [v.cuda() if isinstance(v, torch.Tensor) else v for v in values]


def evaluate(task_path: str, submission_path: str, trials: int, seed: int) -> dict:
    reference = _module(task_path, "reference_program")
    submission = _module(submission_path, "submission")
    if "ModelNew" not in submission:
        return {"compiled": True, "correct": False, "error": "no ModelNew"}
    init = reference["get_init_inputs"]()
    torch.manual_seed(seed)
    model = reference["Model"](*init).cuda()
    torch.manual_seed(seed)
    model_new = submission["ModelNew"](*init).cuda()
    trial_seeds = random.Random(seed).sample(range(2**31), trials)
    passed, worst = 0, 0.0
    for trial_seed in trial_seeds:
        torch.manual_seed(trial_seed)
        inputs = _cuda(reference["get_inputs"]())
        with torch.no_grad():
            expected = model(*inputs)
            got = model_new(*inputs)
        torch.cuda.synchronize()
        if got.shape != expected.shape:
            return {"compiled": True, "correct": False, "error": f"shape {tuple(got.shape)}"}
        worst = max(worst, float((got.float() - expected.float()).abs().max()))
        passed += bool(torch.allclose(got, expected, atol=TOLERANCE, rtol=TOLERANCE))
    return {"compiled": True, "correct": passed == trials, "trials": f"{passed}/{trials}",
            "max_abs_error": worst}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task")
    parser.add_argument("submission")
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()
    print(json.dumps(evaluate(args.task, args.submission, args.trials, args.seed)))


if __name__ == "__main__":
    main()
