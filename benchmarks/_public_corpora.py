"""The public corpora of benchmarks/public_submissions.py: the manifest, each corpus's files and the
verdicts its authors' harness gave them, the selection a run scores, and its layout as a stored
solutions folder (`DIR/level_{L}_problem_{N}_sample_{K}_kernel.py`) for `cuda-agent bench`.

A corpus's samples are renumbered: within a problem, over its sources in the manifest's order and
each source's own sample numbers, so two runs of one corpus that both hold sample 0 of a problem
stay apart, and a file keeps its number whatever the selection (a resumed bench relies on it).
"""

from __future__ import annotations

import hashlib
import json
import re
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from cuda_agent.bench import TheirResult, read_their_results
from cuda_agent.errors import UserError

FORMATS = ("eval_results", "detailed_results", "leaderboard")
SCORED = ("copy", "hub")
_KERNEL = re.compile(r"level_(\d+)_problem_(\d+)_sample_(\d+)_kernel\.py")
_DETAILED_KERNEL = re.compile(r"problem_(\d+)_kernel\.py")
# a source record that is no verdict on the file: its harness never evaluated it
_NO_VERDICT = ("evaluator returned None", "Kernel not found for problem")


@dataclass(frozen=True)
class Source:
    format: str
    run: str | None = None  # eval_results, detailed_results: the run folder
    level: int | None = None
    model: str | None = None
    log: str | None = None  # eval_results: KernelBench's log, for reference runtimes
    verdicts: str | None = None  # leaderboard: the rows
    kernels: str | None = None  # leaderboard: where a row's file is, {file} filled in
    problem_id_base: int = 1  # leaderboard: what its first problem is numbered

    @property
    def label(self) -> str:
        return self.run or self.verdicts or self.format


@dataclass(frozen=True)
class Corpus:
    name: str
    repo: str
    commit: str
    gpu: str | None
    problems: str | None  # a glob with {level} and {problem}, relative to the corpus folder
    problems_scored: str  # copy | hub
    sources: tuple[Source, ...]
    extract: tuple[str, ...] = ()
    notes: str = ""

    def fetch_steps(self, root: Path) -> str:
        where = root / self.name
        return f"git clone {self.repo} {where} && git -C {where} checkout {self.commit}"


@dataclass(frozen=True)
class Submission:
    """One file of a corpus, the problem it solves and the verdict its source gave it."""

    corpus: str
    source: str
    model: str | None
    level: int
    problem_id: int
    sample: int  # in our layout (renumbered within the corpus)
    source_sample: int
    path: str  # relative to the corpus folder
    theirs: TheirResult  # sample_id is `sample`

    @property
    def key(self) -> tuple[str, int, int, int]:
        return (self.corpus, self.level, self.problem_id, self.sample)

    @property
    def file_name(self) -> str:
        return f"level_{self.level}_problem_{self.problem_id}_sample_{self.sample}_kernel.py"


def read_manifest(path: Path) -> list[Corpus]:
    """The corpora a manifest names; one clear error for what is malformed."""
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise UserError(f"--manifest {path}: no such file") from None
    except json.JSONDecodeError as err:
        raise UserError(f"{path}: not valid JSON ({err.msg} at line {err.lineno})") from None
    entries = data.get("corpora") if isinstance(data, dict) else None
    if not isinstance(entries, list) or not entries:
        raise UserError(f"{path}: expected an object with a non-empty list `corpora`")
    corpora = [_corpus(path, n, entry) for n, entry in enumerate(entries)]
    names = [c.name for c in corpora]
    if len(set(names)) != len(names):
        raise UserError(f"{path}: corpus names repeat ({', '.join(names)})")
    return corpora


def _corpus(path: Path, n: int, entry) -> Corpus:
    where = f"{path} corpus {n}"
    if not isinstance(entry, dict):
        raise UserError(f"{where}: expected an object")
    missing = [k for k in ("name", "repo", "commit", "sources") if not entry.get(k)]
    if missing:
        raise UserError(f"{where}: missing {', '.join(missing)}")
    if not re.fullmatch(r"[\w.-]+", entry["name"]):
        raise UserError(f"{where}: name {entry['name']!r} is not a plain folder name")
    scored = entry.get("problems_scored", "copy")
    if scored not in SCORED:
        raise UserError(f"{where}: problems_scored {scored!r} is not one of {', '.join(SCORED)}")
    sources = tuple(_source(f"{where} ({entry['name']}) source {i}", s)
                    for i, s in enumerate(entry["sources"]))  # fmt: skip
    return Corpus(name=entry["name"], repo=entry["repo"], commit=entry["commit"],
                  gpu=entry.get("gpu"), problems=entry.get("problems"), problems_scored=scored,
                  sources=sources, extract=tuple(entry.get("extract", ())),
                  notes=entry.get("problems_note", ""))  # fmt: skip


def _source(where: str, entry) -> Source:
    if not isinstance(entry, dict) or entry.get("format") not in FORMATS:
        raise UserError(f"{where}: expected an object with a format of {', '.join(FORMATS)}")
    needs = {"eval_results": ("run", "level"), "detailed_results": ("run", "level"),
             "leaderboard": ("verdicts", "kernels")}[entry["format"]]  # fmt: skip
    missing = [k for k in needs if entry.get(k) in (None, "")]
    if missing:
        raise UserError(f"{where}: format {entry['format']} needs {', '.join(missing)}")
    known = set(Source.__dataclass_fields__)
    unknown = sorted(set(entry) - known)
    if unknown:
        raise UserError(f"{where}: unknown keys {', '.join(unknown)}")
    return Source(**entry)


def check_fetched(corpora: list[Corpus], root: Path) -> None:
    """One line naming the first corpus not fetched, and how to fetch it."""
    for corpus in corpora:
        if not (root / corpus.name).is_dir():
            raise UserError(
                f"{root / corpus.name}: corpus {corpus.name} is not fetched; on a machine with "
                f"network run `{corpus.fetch_steps(root)}` (all corpora: the docstring of "
                "benchmarks/public_submissions.py), then bring the folder here"
            )


def collect(corpus: Corpus, root: Path) -> list[Submission]:
    """Every file of `corpus` (fetched under `root`) that its source gave a verdict."""
    base = root / corpus.name
    found = []
    for index, source in enumerate(corpus.sources):
        read = {"eval_results": _eval_results, "detailed_results": _detailed_results,
                "leaderboard": _leaderboard}[source.format]  # fmt: skip
        for level, problem_id, sample, path, theirs, *model in read(base, source, corpus):
            if not _no_verdict(theirs):
                model = model[0] if model else source.model
                found.append((level, problem_id, index, sample, path, source, theirs, model))
    found.sort(key=lambda f: f[:4])
    out, counters = [], {}
    for level, problem_id, _, sample, path, source, theirs, model in found:
        k = counters[(level, problem_id)] = counters.get((level, problem_id), -1) + 1
        hardware = theirs.hardware or corpus.gpu
        theirs = replace(theirs, sample_id=k, hardware=hardware)
        out.append(Submission(corpus.name, source.label, model, level, problem_id, k, sample,
                              path, theirs))  # fmt: skip
    return out


def _no_verdict(t: TheirResult) -> bool:
    return bool(t.error) and any(marker in t.error for marker in _NO_VERDICT)


def _eval_results(base: Path, source: Source, corpus: Corpus):
    run = base / source.run
    results = run / "eval_results.json"
    if not results.is_file():
        raise UserError(f"{results}: no such file (corpus {corpus.name}, source {source.run})")
    files = {}
    for path in run.glob("level_*_kernel.py"):
        match = _KERNEL.fullmatch(path.name)
        if match and int(match[1]) == source.level:
            if not path.is_file():
                raise UserError(
                    f"{path}: a link to a file that is not there; fetch the whole repository "
                    "(benchmarks/public_submissions.py says how)"
                )
            files[(int(match[2]), int(match[3]))] = path
    refs = _log_ref_runtimes(base / source.log, Path(source.run).name) if source.log else {}
    for sample in sorted({s for _, s in files}):
        for t in read_their_results(results, source.level, sample):
            path = files.get((t.problem_id, sample))
            if path is None:
                continue
            log = refs.get((t.problem_id, sample))
            if t.speedup is None and log and t.runtime and abs(log[0] - t.runtime) < 1e-9:
                t = replace(t, speedup=log[1] / t.runtime)
            yield source.level, t.problem_id, sample, path.relative_to(base).as_posix(), t


_EVAL_RESULT = re.compile(r"\[Eval Result\] Problem ID: (\d+), Sample ID: (\d+)")
_RUN_NAME = re.compile(r"'run_name': '([^']+)'")
_RUNTIMES = re.compile(r"(?<![\w])runtime=(-?[\d.]+).*?(?<![\w])ref_runtime=(-?[\d.]+)")


def _log_ref_runtimes(log: Path, run_name: str) -> dict[tuple[int, int], tuple[float, float]]:
    """(problem, sample) -> (runtime, reference runtime) as KernelBench's eval log printed them
    for run `run_name`, the last where it printed several; positive figures only."""
    if not log.is_file():
        raise UserError(f"{log}: no such file (the manifest names it as a log)")
    found, current, pending = {}, None, None
    for line in log.read_text(errors="replace").splitlines():
        if (name := _RUN_NAME.search(line)) is not None:
            current = name[1]
        elif (head := _EVAL_RESULT.search(line)) is not None:
            pending = (int(head[1]), int(head[2]))
        elif pending and current == run_name and (times := _RUNTIMES.search(line)) is not None:
            runtime, ref = float(times[1]), float(times[2])
            if runtime > 0 and ref > 0:
                found[pending] = (runtime, ref)
            pending = None
    return found


def _detailed_results(base: Path, source: Source, corpus: Corpus):
    """A run folder of problem_N_kernel.py and detailed_results.json: its records' eval_result
    are KernelBench's, read as KernelBench's eval_results.json is."""
    run = base / source.run
    results = run / "detailed_results.json"
    try:
        rows = json.loads(results.read_text()).get("results", [])
    except (FileNotFoundError, json.JSONDecodeError, AttributeError):
        raise UserError(f"{results}: missing, or not an object with `results`") from None
    records = {str(r["problem_id"]): r["eval_result"] for r in rows
               if isinstance(r, dict) and isinstance(r.get("eval_result"), dict)}  # fmt: skip
    if not records:
        return
    with tempfile.TemporaryDirectory(prefix="public-corpus-") as tmp:
        as_kernelbench = Path(tmp) / "eval_results.json"
        as_kernelbench.write_text(json.dumps(records))
        theirs = read_their_results(as_kernelbench, source.level, 0)
    for t in theirs:
        path = run / f"problem_{t.problem_id}_kernel.py"
        if path.is_file():
            yield source.level, t.problem_id, 0, path.relative_to(base).as_posix(), t


def _leaderboard(base: Path, source: Source, corpus: Corpus):
    """Rows of a leaderboard's data: every row a kernel its harness found correct, with its
    speed-up over PyTorch; a problem's rows are its samples, ordered by model and file."""
    path = base / source.verdicts
    try:
        rows = json.loads(path.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        raise UserError(f"{path}: missing, or not JSON") from None
    if not isinstance(rows, list):
        raise UserError(f"{path}: expected a list of rows")
    keyed = []
    for n, row in enumerate(rows):
        if not isinstance(row, dict) or not {"level", "problem_id", "file"} <= set(row):
            raise UserError(f"{path} row {n}: expected level, problem_id and file")
        problem_id = int(row["problem_id"]) - source.problem_id_base + 1
        keyed.append(((int(row["level"]), problem_id, str(row.get("display_name", "")),
                       str(row["file"])), row))  # fmt: skip
    keyed.sort(key=lambda k: k[0])
    counters = {}
    for (level, problem_id, model, name), row in keyed:
        kernel = base / source.kernels.format(file=name)
        if not kernel.is_file():
            continue
        sample = counters[(level, problem_id)] = counters.get((level, problem_id), -1) + 1
        speedup, runtime = (
            _positive(row.get("torch_speedup")),
            _positive(row.get("kernel_eval_time")),
        )
        theirs = TheirResult(level=level, problem_id=problem_id, sample_id=sample, compiled=True,
                             correct=True, speedup=speedup, runtime=runtime)  # fmt: skip
        yield level, problem_id, sample, kernel.relative_to(base).as_posix(), theirs, model or None


def _positive(value) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if number > 0 else None


def their_problem(corpus: Corpus, root: Path, level: int, problem_id: int) -> Path | None:
    """The corpus's own copy of a problem, where it carries one."""
    if not corpus.problems:
        return None
    pattern = corpus.problems.format(level=level, problem=problem_id)
    found = sorted((root / corpus.name).glob(pattern))
    return found[0] if found else None


def select(subs: list[Submission], levels: set[int] | None = None,
           per_corpus: int | None = None) -> list[Submission]:  # fmt: skip
    """The submissions of `levels`; with `per_corpus`, that many of each corpus, half (where it
    has them) of files its source passed and half of those it failed, each half in an order
    fixed by the files' identities, so a rerun selects the same files."""
    kept = [s for s in subs if levels is None or s.level in levels]
    if per_corpus is None:
        return kept
    out = []
    for corpus in dict.fromkeys(s.corpus for s in kept):
        mine = sorted((s for s in kept if s.corpus == corpus), key=_stable_order)
        passed = [s for s in mine if s.theirs.correct]
        failed = [s for s in mine if not s.theirs.correct]
        chosen = []
        while len(chosen) < per_corpus and (passed or failed):
            for half in (passed, failed):
                if half and len(chosen) < per_corpus:
                    chosen.append(half.pop(0))
        out += sorted(chosen, key=lambda s: s.key)
    return out


def _stable_order(s: Submission) -> str:
    return hashlib.sha256(f"{s.corpus}/{s.source}/{s.path}".encode()).hexdigest()


def lay_out(subs: list[Submission], root: Path, folder: Path) -> dict[str, Path]:
    """Each corpus's selected files as KernelBench names them, in FOLDER/CORPUS/; a file already
    there with the same text is left as it is, and one not selected is removed."""
    folders = {}
    for corpus in dict.fromkeys(s.corpus for s in subs):
        target = folders[corpus] = folder / corpus
        target.mkdir(parents=True, exist_ok=True)
        wanted = {}
        for s in subs:
            if s.corpus == corpus:
                wanted[s.file_name] = (root / corpus / s.path).read_text(errors="replace")
        for stale in target.glob("level_*_kernel.py"):
            if stale.name not in wanted:
                stale.unlink()
        for name, text in wanted.items():
            dest = target / name
            if not dest.is_file() or dest.read_text(errors="replace") != text:
                dest.write_text(text)
    return folders


def lay_out_problems(corpus: Corpus, root: Path, subs: list[Submission], folder: Path) -> Path:
    """The corpus's own copies of its selected problems as a folder of KernelBench level folders
    (FOLDER/CORPUS/level{L}/{N}_{stem}.py), to score them on the text their source scored."""
    target = folder / corpus.name
    for s in subs:
        copy = their_problem(corpus, root, s.level, s.problem_id)
        if copy is None:
            continue
        stem = copy.stem if copy.stem.startswith(f"{s.problem_id}_") else (
            f"{s.problem_id}_{copy.stem}")  # fmt: skip
        dest = target / f"level{s.level}" / f"{stem}.py"
        dest.parent.mkdir(parents=True, exist_ok=True)
        text = copy.read_text(errors="replace")
        if not dest.is_file() or dest.read_text(errors="replace") != text:
            dest.write_text(text)
    return target
