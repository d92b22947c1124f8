"""`cuda-agent compare` on a real KernelBench result file: both harnesses on the same
submissions, problem texts and GPU, then their verdicts side by side.

The submissions, in one folder named as KernelBench's scripts name them
(`level_1_problem_{ID}_sample_0_kernel.py`): our honest fixture solutions for KernelBench level-1
problems, written in KernelBench's single-file format by `cuda-agent export`, and the files of
tests/fixtures/kernelbench/submissions (shortcuts that KernelBench's harness rewards, and a file
that does not compile). KernelBench's own `scripts/eval_from_generations.py` evaluates that
folder as one of its runs (its settings: 5 correctness trials, 100 timed, builds cached on the
CPU first), once per contiguous range of problem ids, and writes its eval_results.json;
`cuda-agent bench --solutions` evaluates the same folder against the same checkout's problem
texts; `cuda-agent compare` sets the two side by side. One JSON line is appended to --out-file:
both harnesses' wall times, the comparison's counts and each problem's row; the run folders and
their result files stay under --work.

The KernelBench checkout (used for the measurement only) needs src/kernelbench,
scripts/eval_from_generations.py and KernelBench/level1, and its configuration package
`pydra-config` installed; the clients of its generation and cloud scripts (modal, litellm,
python-dotenv, openai) get stand-in modules where they are not installed, since evaluation never
calls them. KernelBench builds for the GPU generation in KERNELBENCH_GPU_ARCH (its names:
Hopper, the default, Ampere, Ada, ...).

    python benchmarks/compare_with_kernelbench.py --kernelbench CHECKOUT --work DIR \
        --out-file FILE.jsonl [--cache DIR] [--ids 8-11,40]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from _run_facts import run_facts

from cuda_agent.cli.options import parse_int_set
from cuda_agent.errors import UserError

REPO = Path(__file__).parent.parent
FIXTURES = REPO / "tests" / "fixtures"
# KernelBench level-1 problem id -> our honest solution for it (tests/fixtures/solutions)
HONEST = {19: "L1_19_ReLU", 40: "L1_40_LayerNorm", 47: "L1_47_Sum_reduction_over_a_dimension"}
RUN_NAME = "cuda_agent_compare"
LEVEL = 1

# Modules KernelBench's scripts import for generation and cloud runs only.
_STAND_INS = {
    "modal": '''"""Stand-in: KernelBench's cloud path is never taken in a local evaluation."""


class _Anything:
    def __init__(self, *args, **kwargs):
        pass

    def __call__(self, *args, **kwargs):
        if len(args) == 1 and not kwargs and callable(args[0]):
            return args[0]  # used as a decorator: leave what it decorates as it is
        return _Anything()

    def __getattr__(self, name):
        return _Anything()


def __getattr__(name):
    return _Anything()
''',
    "dotenv": '''"""Stand-in: no .env file is read in a local evaluation."""


def load_dotenv(*args, **kwargs):
    return False
''',
    "litellm": '''"""Stand-in: no model is queried in an evaluation."""


def completion(*args, **kwargs):
    raise RuntimeError("litellm is a stand-in here: evaluation does not query models")
''',
    "openai": '''"""Stand-in: no model is queried in an evaluation."""


class OpenAI:
    def __init__(self, *args, **kwargs):
        raise RuntimeError("openai is a stand-in here: evaluation does not query models")
''',
}


def _fail(message: str) -> None:
    sys.exit(f"error: {message}")


def _problem_file(checkout: Path, problem_id: int) -> Path:
    found = sorted((checkout / "KernelBench" / f"level{LEVEL}").glob(f"{problem_id}_*.py"))
    if not found:
        _fail(f"{checkout}: no KernelBench/level{LEVEL}/{problem_id}_*.py; give a checkout")
    return found[0]


def _write_submissions(checkout: Path, run_dir: Path, only: set[int] | None) -> list[int]:
    """The run folder both harnesses read: our exports and the KernelBench-format fixtures (of
    the problem ids in `only`, if given)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    for problem_id, solution in HONEST.items():
        if only is not None and problem_id not in only:
            continue
        target = run_dir / f"level_{LEVEL}_problem_{problem_id}_sample_0_kernel.py"
        cmd = [sys.executable, "-m", "cuda_agent", "export", str(FIXTURES / "solutions" / solution)]
        cmd += ["--task", str(_problem_file(checkout, problem_id)), "--to", "kernelbench"]
        cmd += ["--out", str(target)]
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
        if proc.returncode != 0:
            _fail(f"export of {solution} failed: {proc.stderr.strip()[-500:]}")
    for path in sorted((FIXTURES / "kernelbench" / "submissions").glob("level_*_kernel.py")):
        if only is None or _problem_id(path) in only:
            (run_dir / path.name).write_text(path.read_text())
    ids = sorted(_problem_id(p) for p in run_dir.glob(f"level_{LEVEL}_problem_*_kernel.py"))
    if not ids:
        _fail(f"--ids {sorted(only or [])}: none of the benchmark's problems")
    return ids


def _problem_id(path: Path) -> int:
    return int(path.name.split("_")[3])  # level_{L}_problem_{ID}_sample_{K}_kernel.py


def _ranges(ids: list[int]) -> list[tuple[int, int]]:
    """Contiguous runs of ids: KernelBench's script takes a range and evaluates every problem in
    it, so a gap would be scored as a missing file."""
    out: list[tuple[int, int]] = []
    for i in ids:
        if out and out[-1][1] == i - 1:
            out[-1] = (out[-1][0], i)
        else:
            out.append((i, i))
    return out


def _stand_in_folder(work: Path) -> Path:
    folder = work / "kernelbench-stand-ins"
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in _STAND_INS.items():
        if importlib.util.find_spec(name) is None:
            (folder / f"{name}.py").write_text(text)
    return folder


def _theirs(checkout: Path, work: Path, ids: list[int]) -> dict:
    """KernelBench's batch evaluation of the run folder, one call per range of ids."""
    if importlib.util.find_spec("pydra") is None:
        _fail("KernelBench's scripts need its configuration package: pip install pydra-config")
    paths = [str(_stand_in_folder(work)), str(checkout / "src"), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}
    arch = os.environ.get("KERNELBENCH_GPU_ARCH", "Hopper")
    calls = []
    for lo, hi in _ranges(ids):
        workers = min(hi - lo + 1, os.cpu_count() or 1)
        cmd = [sys.executable, str(checkout / "scripts" / "eval_from_generations.py")]
        cmd += [f"run_name={RUN_NAME}", "dataset_src=local", f"level={LEVEL}",
                f"subset=({lo},{hi})", f"runs_dir={work / 'kernelbench-runs'}",
                f"kernel_eval_build_dir={work / 'kernelbench-build'}", f"gpu_arch=['{arch}']",
                "build_cache=True", f"num_cpu_workers={workers}"]  # fmt: skip
        start = time.perf_counter()
        with (work / "kernelbench.log").open("a") as log:
            proc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=work)
        calls.append({"range": [lo, hi], "seconds": round(time.perf_counter() - start, 1),
                      "returncode": proc.returncode})  # fmt: skip
    results = work / "kernelbench-runs" / RUN_NAME / "eval_results.json"
    if not results.is_file():
        _fail(f"KernelBench wrote no {results}; see {work / 'kernelbench.log'}")
    return {"calls": calls, "seconds": round(sum(c["seconds"] for c in calls), 1),
            "results": str(results)}  # fmt: skip


def _cli(args: list[str], log: Path, cache: Path | None) -> dict:
    env = {**os.environ, **({"CUDA_AGENT_CACHE": str(cache)} if cache else {})}
    start = time.perf_counter()
    with log.open("a") as out:
        cmd = [sys.executable, "-m", "cuda_agent", *args]
        proc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=REPO)
    return {"seconds": round(time.perf_counter() - start, 1), "returncode": proc.returncode}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernelbench", type=Path, required=True, help="a KernelBench checkout")
    ap.add_argument("--work", type=Path, required=True, help="a new folder for both runs")
    ap.add_argument("--out-file", type=Path, required=True, help="JSONL the result is appended to")
    ap.add_argument("--cache", type=Path, default=None, help="our build and baseline cache")
    ap.add_argument(
        "--ids", default=None, help="only these of the benchmark's problems, e.g. 8-11,40"
    )
    args = ap.parse_args()
    try:
        only = parse_int_set(args.ids, "--ids")
    except UserError as err:
        _fail(str(err))
    checkout = args.kernelbench.resolve()
    if not (checkout / "scripts" / "eval_from_generations.py").is_file():
        _fail(f"--kernelbench {checkout}: no scripts/eval_from_generations.py; give a checkout")
    work = args.work.resolve()
    if work.exists() and any(work.iterdir()):
        _fail(f"--work {work} is not empty; give a new folder")
    facts = run_facts()
    if facts["gpu"] is None:
        _fail("KernelBench's harness evaluates on a CUDA GPU, and torch sees none here")
    run_dir = work / "kernelbench-runs" / RUN_NAME
    ids = _write_submissions(checkout, run_dir, only)
    print(f"submissions for level {LEVEL} problems {ids} in {run_dir}", flush=True)
    theirs = _theirs(checkout, work, ids)
    print(f"KernelBench: {theirs['seconds']} s, {theirs['results']}", flush=True)
    ours_dir = work / "ours"
    id_list = ",".join(map(str, ids))
    ours = _cli(["bench", "--out", str(ours_dir), "--tasks", "kernelbench", "--kernelbench",
                 str(checkout), "--levels", str(LEVEL), "--ids", id_list, "--solutions",
                 str(run_dir)], work / "ours.log", args.cache)  # fmt: skip
    print(f"ours: {ours['seconds']} s, {ours_dir}", flush=True)
    compared = _cli(["compare", str(ours_dir), "--kernelbench-results", theirs["results"],
                     "--level", str(LEVEL), "--their-problems", str(checkout)],
                    work / "compare.log", None)  # fmt: skip
    comparison_file = ours_dir / "compare.json"
    if compared["returncode"] != 0 or not comparison_file.is_file():
        _fail(f"cuda-agent compare failed; see {work / 'compare.log'}")
    comparison = json.loads(comparison_file.read_text())
    line = {**facts, "level": LEVEL, "problems": ids, "kernelbench": theirs,
            "ours": ours, **comparison}  # fmt: skip
    with args.out_file.open("a") as out:
        out.write(json.dumps(line) + "\n")
    print((work / "ours" / "compare.md").read_text(), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
