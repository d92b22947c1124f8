"""Public model-written KernelBench submissions, scored by us under `--rules kernelbench`, beside
the verdicts their authors' harness gave them.

The corpora are named in benchmarks/public_corpora.json (repository, commit, where the files,
their verdicts and the corpus's copy of each problem are). Each corpus's files that carry a
verdict are laid out, one folder per corpus, as a stored-solutions folder
(`WORK/solutions/CORPUS/level_{L}_problem_{N}_sample_{K}_kernel.py`, samples numbered within the
corpus); `cuda-agent bench --tasks kernelbench --kernelbench PATH --rules kernelbench` evaluates
each corpus and level into `WORK/runs/CORPUS/level{L}/` (bench resumes, so a rerun of this script
skips what is finished); `cuda-agent compare`'s `compare_run` then sets each file beside its
source's verdict. One JSON line per file goes to --out (rewritten on every run): whether the
corpus's problem text is ours (same, differs, unknown where the corpus carries none or its run
read another copy), both verdicts, agreement on correctness and on compiling, both speed-ups and,
for a disagreement, its named reasons (_public_compare.py). A summary (counts per corpus, the
agreement where the problem text matches, every disagreement with its reasons) is printed and
written beside --out as FILE.summary.json and FILE.summary.md.

    python benchmarks/public_submissions.py list [--kernelbench PATH] [--per-corpus N]
    python benchmarks/public_submissions.py run --kernelbench PATH --work DIR --out FILE.jsonl \
        [--per-corpus N] [--levels 1,2,3] [--only CORPUS,...] [--own-problems] [--bench-args "..."]
    python benchmarks/public_submissions.py compare --kernelbench PATH --work DIR --out FILE.jsonl

`--own-problems` scores each corpus that carries its copy of the problems on that copy (the text
its source scored) instead of --kernelbench's; `--per-corpus N` takes N files of each corpus,
half of them passed by their source, the same N on every run. `list` needs no GPU.

Fetching the corpora (never committed; `.corpora/` is git-ignored). The GPU machines have no
network: on a machine with network, in the repository root,

    git clone https://github.com/anneouyang/KernelBenchLeaderboard .corpora/kernelbench-leaderboard
    git -C .corpora/kernelbench-leaderboard checkout 170ca7965f53bba599d1078b6fcaa5dd2658ec50
    git clone https://github.com/technoabsurdist/KernelBench .corpora/technoabsurdist-kernelbench
    git -C .corpora/technoabsurdist-kernelbench checkout 9202a5c5786ab959fcaa3b4ce0356348bb87c86a
    git clone https://github.com/yenhao-huang/KernelBench .corpora/yenhao-kernelbench
    git -C .corpora/yenhao-kernelbench checkout 62472a673baf4540af8129fa0e531505f4e62c7d

then bring `.corpora/` to the GPU machine. The device runner carries it (carry [".corpora"])
within its 64 MiB when only each corpus's `extract` paths (globs) are kept: 24 MB. The retime
runs of yenhao-kernelbench hold symbolic links into runs/ralph_*/generated_kernels: keep those
folders, or replace each link by the file it names (`cp -L`) where links may not travel; a link
to a file that is not there is an error. The problems for --kernelbench: a KernelBench checkout
or its JSONL (the project's shared/kernelbench/kernelbench_l1-l3.jsonl is
ScalingIntelligence/KernelBench at 423217d, the text yenhao-kernelbench scored; the leaderboard
scored the problems of 9f9e382, which --own-problems uses).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from _public_compare import (
    compare_rows,
    judge,
    our_results,
    problem_status,
    summarize,
    summary_markdown,
    with_problem_hash,
)
from _public_corpora import (
    Corpus,
    Submission,
    check_fetched,
    collect,
    lay_out,
    lay_out_problems,
    read_manifest,
    select,
    their_problem,
)

from cuda_agent.cli.options import parse_int_set
from cuda_agent.errors import UserError
from cuda_agent.task import Task, load_tasks

REPO = Path(__file__).parent.parent
MANIFEST = Path(__file__).parent / "public_corpora.json"
CORPORA = REPO / ".corpora"


def bench_command(corpus: str, level: int, ids: list[int], kernelbench: Path, work: Path,
                  extra: list[str] = ()) -> list[str]:  # fmt: skip
    """`cuda-agent bench` of one corpus's files of one level, into its own run folder."""
    return [sys.executable, "-m", "cuda_agent", "bench",
            "--out", str(work / "runs" / corpus / f"level{level}"),
            "--tasks", "kernelbench", "--kernelbench", str(kernelbench),
            "--levels", str(level), "--ids", ",".join(map(str, sorted(set(ids)))),
            "--solutions", str(work / "solutions" / corpus), "--rules", "kernelbench",
            *extra]  # fmt: skip


def our_tasks(kernelbench: Path, subs: list[Submission]) -> dict[tuple[int, int], Task]:
    """Our problems of the submissions' levels and ids, by (level, problem id)."""
    levels = {s.level for s in subs}
    ids = {s.problem_id for s in subs}
    if not subs:
        return {}
    try:
        tasks = load_tasks("kernelbench", levels, ids, kernelbench)
    except UserError as err:
        if "no task matches" not in str(err):
            raise
        return {}
    return {(t.level, t.source.problem_id): t for t in tasks}


def gather(args) -> tuple[list[Corpus], list[Submission]]:
    corpora = read_manifest(args.manifest)
    if args.only:
        wanted = set(args.only.split(","))
        unknown = wanted - {c.name for c in corpora}
        if unknown:
            raise UserError(f"--only {','.join(sorted(unknown))}: not in {args.manifest}")
        corpora = [c for c in corpora if c.name in wanted]
    check_fetched(corpora, args.corpora)
    levels = parse_int_set(args.levels, "--levels")
    subs = [s for c in corpora for s in collect(c, args.corpora)]
    return corpora, select(subs, levels, args.per_corpus)


def problems_by_corpus(corpora, subs, root: Path, kernelbench: Path | None, work: Path | None,
                       own: bool) -> dict:  # fmt: skip
    """Per corpus: the --kernelbench it is scored on, our tasks, and each file's text status."""
    plan = {}
    for corpus in corpora:
        mine = [s for s in subs if s.corpus == corpus.name]
        copy = kernelbench
        if own and corpus.problems and work is not None:
            copy = lay_out_problems(corpus, root, mine, work / "problems")
        tasks = our_tasks(copy, mine) if copy is not None else {}
        status = {}
        for s in mine:
            theirs = their_problem(corpus, root, s.level, s.problem_id)
            text = theirs.read_text(errors="replace") if theirs else None
            ours = tasks.get((s.level, s.problem_id))
            if copy is None:
                status[s.key] = ("unknown", "no --kernelbench given"), text, None
            else:
                status[s.key] = problem_status(corpus, text, ours), text, ours
        plan[corpus.name] = (copy, status)
    return plan


def cmd_list(args) -> int:
    corpora, subs = gather(args)
    plan = problems_by_corpus(corpora, subs, args.corpora, args.kernelbench, None, False)
    for corpus in corpora:
        mine = [s for s in subs if s.corpus == corpus.name]
        _, status = plan[corpus.name]
        texts = Counter(status[s.key][0][0] for s in mine)
        outcomes = Counter(s.theirs.outcome for s in mine)
        levels = Counter(s.level for s in mine)
        print(f"{corpus.name} ({corpus.repo} @ {corpus.commit[:12]}, {corpus.gpu}): {len(mine)} "
              f"files; levels {dict(sorted(levels.items()))}; theirs {dict(outcomes)}; "
              f"speed-ups {sum(s.theirs.speedup is not None for s in mine)}; "
              f"problem text {dict(texts)}")  # fmt: skip
    print(f"{len(subs)} files in {len(corpora)} corpora")
    return 0


def cmd_run(args, bench: bool) -> int:
    corpora, subs = gather(args)
    work = args.work.resolve()
    plan = problems_by_corpus(
        corpora, subs, args.corpora, args.kernelbench.resolve(), work, args.own_problems
    )
    usable = [s for s in subs if plan[s.corpus][1][s.key][0][0] != "absent"]
    lay_out(usable, args.corpora, work / "solutions")
    extra = shlex.split(getattr(args, "bench_args", None) or "")
    if bench:
        run_benches(corpora, usable, plan, work, extra, args.budget_s)
    lines = []
    for corpus in corpora:
        status = plan[corpus.name][1]
        mine = [s for s in subs if s.corpus == corpus.name]
        for level in sorted({s.level for s in mine}):
            run = work / "runs" / corpus.name / f"level{level}"
            at_level = [s for s in mine if s.level == level]
            theirs = [with_problem_hash(s, status[s.key][0][0], *status[s.key][1:])
                      for s in at_level]  # fmt: skip
            results = our_results(run)
            rows = compare_rows(run, theirs, level) if results else {}
            for s in at_level:
                k = (s.level, s.problem_id, s.sample)
                lines.append(judge(s, status[s.key][0], results.get(k), rows.get(k)))
    return write(args.out, lines)


def run_benches(corpora, usable, plan, work: Path, extra: list[str], budget_s: float | None):
    """One `cuda-agent bench` per corpus and level, each logged to WORK/logs/; past `budget_s`
    seconds the one running is interrupted (a rerun resumes it) and no other is started."""
    (work / "logs").mkdir(parents=True, exist_ok=True)
    deadline = None if budget_s is None else time.monotonic() + budget_s
    for corpus in corpora:
        for level in sorted({s.level for s in usable if s.corpus == corpus.name}):
            ids = [s.problem_id for s in usable if (s.corpus, s.level) == (corpus.name, level)]
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                print(f"{corpus.name} level {level}: not started, --budget-s spent", flush=True)
                continue
            log = work / "logs" / f"{corpus.name}-level{level}.log"
            cmd = bench_command(corpus.name, level, ids, plan[corpus.name][0], work, extra)
            print(f"{corpus.name} level {level}: {len(ids)} files -> {log}", flush=True)
            status = _bench(cmd, log, left)
            if status is None:
                print("  interrupted at --budget-s; a rerun resumes it", flush=True)
            elif status != 0:
                print(f"  bench ended with status {status}; see {log}", flush=True)


def _bench(cmd: list[str], log: Path, seconds: float | None) -> int | None:
    """Run one bench in its own process group; past `seconds`, interrupt the group (bench ends
    its evaluations and their workers), kill it if it has not ended 60 s later; None then."""
    with log.open("a") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=REPO,
                                start_new_session=True)  # fmt: skip
        try:
            return proc.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGINT)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            return None


def write(out: Path, lines: list[dict]) -> int:
    from _run_facts import run_facts

    facts = run_facts()
    summary = {**facts, **summarize(lines)}
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text("".join(json.dumps({**line, "machine": facts}) + "\n" for line in lines))
    os.replace(tmp, out)
    stem = out.with_suffix("")
    Path(f"{stem}.summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    markdown = summary_markdown(summary, facts)
    Path(f"{stem}.summary.md").write_text(markdown + "\n")
    print(markdown, flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    for name in ("list", "run", "compare"):
        p = sub.add_parser(name)
        p.add_argument("--manifest", type=Path, default=MANIFEST)
        p.add_argument("--corpora", type=Path, default=CORPORA, help="where the corpora are")
        p.add_argument("--levels", default="1,2,3", help="KernelBench levels, e.g. 1,2")
        p.add_argument("--only", default=None, help="these corpora only, e.g. a,b")
        p.add_argument("--per-corpus", type=int, default=None, help="N files of each corpus")
        p.add_argument("--kernelbench", type=Path, required=name != "list",
                       help="our problems: a KernelBench checkout or its JSONL")  # fmt: skip
        if name != "list":
            p.add_argument("--work", type=Path, required=True, help="solutions and run folders")
            p.add_argument("--out", type=Path, required=True, help="JSONL, one line per file")
            p.add_argument("--own-problems", action="store_true",
                           help="score each corpus on its own copy of the problems")  # fmt: skip
        if name == "run":
            p.add_argument("--bench-args", default=None, help="more `cuda-agent bench` options")
            p.add_argument("--budget-s", type=float, default=None,
                           help="evaluate for at most this long, then compare")  # fmt: skip
    args = ap.parse_args(argv)
    if args.per_corpus is not None and args.per_corpus < 1:
        ap.error("--per-corpus must be at least 1")
    try:
        if args.command == "list":
            return cmd_list(args)
        return cmd_run(args, bench=args.command == "run")
    except UserError as err:
        sys.exit(f"error: {err}")


if __name__ == "__main__":
    raise SystemExit(main())
