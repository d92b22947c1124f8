"""A KernelBench single-file submission's verdict: ours against KernelBench's own harness, side by
side on the same files and GPU.

For each file: `cuda-agent eval` as a user runs it, in a fresh process, first with the file's
sources never built before (cold: the precompiled torch headers and the task's audit and
baselines are cached first, as on any machine that has evaluated something for the task: they
are the task's cost, not the submission's), then again (warm: its build cached); and
KernelBench's `eval_kernel_against_ref` with its batch settings (5 correctness trials, 100
timed; `backend="triton"` for a Triton file, as its scripts pass it), in a fresh process with a
fresh build folder, from a KernelBench checkout given with --kernelbench (used for the
measurement only; its package is entered past its __init__, which imports the LLM clients its
generation scripts use). Wall seconds of the whole process, verdicts
and what each harness reported are written as one JSON line per file and harness, and a line
per file with the ratio of our cold process time to KernelBench's. A warm verdict is also timed
inside a running Environment (bench, the service and an agent's rounds evaluate so), where the
interpreter, torch and the GPU are already up: right after a first evaluation (back to back, as a
bench over stored files runs) and again after a pause (as an agent's round follows its model's
reply, while the next candidate process starts).

    python benchmarks/single_file_vs_kernelbench.py [--kernelbench PATH] --out FILE.jsonl \
        [--case TASK=SUBMISSION ...] [--cache DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _kernelbench_entry import kernelbench_src
from _run_facts import run_facts

from cuda_agent.sandbox.single_file.triton_source import is_triton

REPO = Path(__file__).parent.parent
HONEST = REPO / "tests" / "sandbox" / "single_file" / "honest"
CASES = (  # (task, submission): KernelBench's example shape, the plainest of our forms, Triton
    ("tests/sandbox/tasks/elementwise_add.py", HONEST / "kernelbench_example" / "model_new.py"),
    ("tests/sandbox/tasks/scale_gelu.py", HONEST / "strings" / "model_new.py"),
    (
        "tests/sandbox/tasks/elementwise_add.py",
        REPO / "tests" / "fixtures" / "triton" / "honest_add.py",
    ),
)
# Run in a fresh interpreter: KernelBench's harness as its batch scripts call it.
_KERNELBENCH_DRIVER = """
import json, sys, time
sys.path.insert(0, BENCHMARKS)
from _kernelbench_entry import enter_kernelbench
enter_kernelbench(sys.argv[1])
from kernelbench.eval import eval_kernel_against_ref
ref, sub, build = (open(sys.argv[2]).read(), open(sys.argv[3]).read(), sys.argv[4])
start = time.perf_counter()
result = eval_kernel_against_ref(ref, sub, num_correct_trials=5, num_perf_trials=100,
                                 measure_performance=True, build_dir=build, verbose=False,
                                 backend=sys.argv[5])
seconds = time.perf_counter() - start
print(json.dumps({"seconds": seconds, "compiled": bool(result and result.compiled),
                  "correct": bool(result and result.correctness),
                  "runtime_ms": getattr(result, "runtime", None),
                  "ref_runtime_ms": getattr(result, "ref_runtime", None)}))
""".replace("BENCHMARKS", repr(str(Path(__file__).parent)))


def _ours(task: Path, submission: Path, cache: Path) -> dict:
    env = {**os.environ, "CUDA_AGENT_CACHE": str(cache)}
    cmd = [sys.executable, "-m", "cuda_agent", "eval", "--task", str(task)]
    cmd += ["--solution", str(submission), "--json"]
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        return {"seconds": seconds, "error": proc.stderr.strip()[-2000:]}
    verdict = json.loads(proc.stdout)
    keep = ("status", "reward", "compiled", "correct", "candidate_ms", "eager_ms", "notes")
    return {"seconds": seconds, **{k: verdict.get(k) for k in keep}, "stages": verdict["seconds"]}


_PREPARE = """
import sys
from pathlib import Path
from cuda_agent.sandbox import EnvConfig, Environment
from cuda_agent.task import load_task
with Environment(EnvConfig(cache_dir=Path(sys.argv[1]))) as env:
    env.warm_up().join()
    for path in sys.argv[2:]:
        task = load_task(path)
        env.audit(task, "train")
        env.baselines(task, "train")
"""


# A warm verdict where the Environment is already running (bench, the service, an agent's
# rounds): the second of two evaluations of the file in one Environment, right after the first
# (back to back, as a bench over stored files runs), then a third after a pause of PAUSE_S
# seconds, as an agent's round comes after its model's reply.
PAUSE_S = 10
_IN_ENVIRONMENT = """
import json, sys, time
from pathlib import Path
from cuda_agent.sandbox import EnvConfig, Environment, read_submission
from cuda_agent.task import load_task
task, solution = load_task(sys.argv[2]), read_submission(sys.argv[3])
pause = float(sys.argv[4])
marks = [time.perf_counter()]
env = Environment(EnvConfig(cache_dir=Path(sys.argv[1])))
marks.append(time.perf_counter())
env.evaluate(task, solution)
marks.append(time.perf_counter())
verdict = env.evaluate(task, solution)
marks.append(time.perf_counter())
time.sleep(pause)
start = time.perf_counter()
paused = env.evaluate(task, solution)
after_pause = time.perf_counter() - start
start = time.perf_counter()
env.close()
close = time.perf_counter() - start
parts = ("start", "first_evaluation", "seconds")
row = {p: round(b - a, 3) for p, a, b in zip(parts, marks, marks[1:])}
stages = {k: round(v, 3) for k, v in verdict.seconds.items()}
print(json.dumps({**row, "close": round(close, 3), "status": verdict.status.value,
                  "reward": verdict.reward, "stages": stages, "pause_s": pause,
                  "seconds_after_pause": round(after_pause, 3),
                  "status_after_pause": paused.status.value,
                  "stages_after_pause": {k: round(v, 3) for k, v in paused.seconds.items()}}))
"""


def _in_environment(task: Path, submission: Path, cache: Path) -> dict:
    args = [str(cache), str(task), str(submission), str(PAUSE_S)]
    cmd = [sys.executable, "-c", _IN_ENVIRONMENT, *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
    if proc.returncode != 0 or not proc.stdout.strip():
        return {"error": (proc.stderr or proc.stdout).strip()[-2000:]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _theirs(kernelbench_src: Path, task: Path, submission: Path) -> dict:
    with tempfile.TemporaryDirectory(prefix="kernelbench-build-") as build:
        cmd = [sys.executable, "-c", _KERNELBENCH_DRIVER, str(kernelbench_src), str(task)]
        cmd += [str(submission), build, "triton" if is_triton(submission.read_text()) else "cuda"]
        start = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
        seconds = time.perf_counter() - start
    if proc.returncode != 0 or not proc.stdout.strip():
        return {"seconds": seconds, "error": (proc.stderr or proc.stdout).strip()[-2000:]}
    return {"process_seconds": seconds, **json.loads(proc.stdout.strip().splitlines()[-1])}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--kernelbench", type=Path, default=None,
        help="a KernelBench checkout (without it, only our rows are measured)",
    )  # fmt: skip
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--case", action="append", default=[], help="TASK=SUBMISSION (repeatable)")
    ap.add_argument("--cache", type=Path, default=None, help="build cache kept across files")
    args = ap.parse_args()
    src = kernelbench_src(args.kernelbench) if args.kernelbench else None
    cases = [tuple(c.split("=", 1)) for c in args.case] or CASES
    cache = args.cache or Path(tempfile.mkdtemp(prefix="cuda-agent-cache-"))
    # the precompiled torch headers, built once per machine, and the task's audit and baselines
    # (single files are evaluated in training mode, as KernelBench runs its references) are not
    # any submission's cost
    facts = run_facts()
    if facts["gpu"] is None:
        sys.exit("error: this benchmark times verdicts on a CUDA GPU, and torch sees none here")
    tasks = sorted({str(REPO / task) for task, _ in cases})
    prepared = subprocess.run([sys.executable, "-c", _PREPARE, str(cache), *tasks], cwd=REPO)
    if prepared.returncode != 0:
        sys.exit(f"error: preparing the tasks' audit and baselines failed (status "
                 f"{prepared.returncode}); its output is above")  # fmt: skip
    with args.out.open("a") as out:
        for task, submission in cases:
            task, submission = REPO / task, REPO / submission
            measures = [
                ("ours_cold", _ours, (task, submission, cache)),
                ("ours_warm", _ours, (task, submission, cache)),
                ("ours_warm_in_environment", _in_environment, (task, submission, cache)),
            ]
            if src is not None:
                measures.append(("kernelbench", _theirs, (src, task, submission)))
            rows = {}
            for harness, measure, measure_args in measures:  # each line written when measured
                rows[harness] = measure(*measure_args)
                line = {**facts, "task": task.name}
                line["submission"] = str(submission.relative_to(REPO))
                line |= {"harness": harness, **rows[harness]}
                out.write(json.dumps(line) + "\n")
                out.flush()
                print(json.dumps(line), flush=True)
            theirs = rows.get("kernelbench", {}).get("process_seconds")
            if theirs:
                ratio = {**facts, "task": task.name, "harness": "ratio_cold_to_kernelbench"}
                ratio["value"] = round(rows["ours_cold"]["seconds"] / theirs, 3)
                out.write(json.dumps(ratio) + "\n")
                print(json.dumps(ratio), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
