"""The seed catalog: operators mined from torch and transformers, probed, cached on disk.

Mining calls hundreds of library functions with made-up arguments, so it runs in isolated children
(`run_isolated`): a crash or a hang there costs a candidate operator, never the harness.
"""

from __future__ import annotations

import importlib.metadata
import os
import warnings
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import torch

from cuda_agent.errors import UserError
from cuda_agent.synth.catalog.model import ArgSpec, Catalog, OpEntry, Outcome, Plan

CATALOG_VERSION = 3  # bump when mining changes what it finds
MINE_TIMEOUT_S = 1800.0

__all__ = [
    "ArgSpec",
    "Catalog",
    "OpEntry",
    "Outcome",
    "Plan",
    "assemble",
    "catalog_rows",
    "load_catalog",
    "mine",
    "mine_part",
]


def mine(library: str) -> Catalog:
    """Probe every candidate of `library` ("torch" or "transformers"); one entry per computation.

    Candidates that compute the same thing (torch.relu, F.relu, nn.ReLU) fall into one group by
    their probe fingerprint; the preferred name speaks for it and the others become its aliases.
    """
    probed, notes = mine_part(library, 0, 1)
    return assemble(probed, notes)


def mine_part(library: str, part: int, parts: int) -> tuple[list, list[str]]:
    """(candidate, probe result) for every `parts`-th candidate of `library` from `part` on,
    and the notes on what is missing. Probing one candidate does not depend on the others, so
    the parts can run in separate children and `assemble` gives the catalog `mine` gives."""
    from cuda_agent.synth.catalog.probe import probe, warm_up

    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    warm_up()
    if library == "torch":
        from cuda_agent.synth.catalog.torch_ops import torch_candidates

        cands, notes = torch_candidates(), []
    else:
        from cuda_agent.synth.catalog.hf_ops import transformers_candidates

        cands, notes = transformers_candidates()
    probed = [(cand, result) for cand in cands[part::parts] if (result := probe(cand)) is not None]
    return probed, list(notes)


def assemble(probed: list, notes: list[str]) -> Catalog:
    from cuda_agent.synth.catalog.probe import entry_from

    groups = defaultdict(list)
    for cand, result in probed:
        groups[result.fingerprint].append((cand, result))
    entries: dict[str, OpEntry] = {}
    for members in groups.values():
        members.sort(key=lambda m: (m[0].preference, len(m[0].name), m[0].name))
        cand, result = members[0]
        aliases = tuple(sorted({m[0].name for m in members[1:]} - {cand.name}))
        entries.setdefault(cand.name, entry_from(cand, result, aliases))
    return Catalog(
        entries=tuple(sorted(entries.values(), key=lambda e: e.name)),
        versions=_versions(),
        notes=tuple(notes),
    )


def load_catalog(cache_dir: Path, refresh: bool = False, workers: int | None = None) -> Catalog:
    """The catalog for the installed torch and transformers, mined once and cached as JSON
    (keyed by both versions: another installation mines its own)."""
    path = Path(cache_dir) / f"catalog-v{CATALOG_VERSION}-{_version_key()}.json"
    if path.is_file() and not refresh:
        try:
            return Catalog.model_validate_json(path.read_text())
        except ValueError:
            pass  # a truncated or stale file: mine again
    catalog = _mine_isolated(workers or os.cpu_count() or 1)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(catalog.model_dump_json())
    tmp.replace(path)
    return catalog


def _mine_isolated(workers: int) -> Catalog:
    """torch's candidates in up to 8 children, transformers' in one (importing it is most of
    its cost); the parts are assembled per library, then merged."""
    from cuda_agent.sandbox import run_isolated

    parts = max(1, min(8, workers - 1))
    jobs = [("torch", k, parts) for k in range(parts)] + [("transformers", 0, 1)]
    with ThreadPoolExecutor(len(jobs)) as pool:
        futures = [pool.submit(run_isolated, mine_part, job, timeout_s=MINE_TIMEOUT_S)
                   for job in jobs]  # fmt: skip
        results = [f.result() for f in futures]
    torch_results, hf = results[:-1], results[-1]
    failed = next((r for r in torch_results if not r.ok), None)
    if failed is not None:
        raise UserError(f"mining torch operators failed: {_first_line(failed.error)}")
    probed = [pair for r in torch_results for pair in r.value[0]]
    torch_part = assemble(probed, [n for r in torch_results for n in r.value[1]])
    parts_ = [torch_part]
    notes = list(torch_part.notes)
    if hf.ok:
        parts_.append(assemble(*hf.value))
        notes += hf.value[1]
    else:
        notes.append(f"mining transformers failed: {_first_line(hf.error)}")
    entries = {e.name: e for part in parts_ for e in part.entries}
    return Catalog(
        entries=tuple(sorted(entries.values(), key=lambda e: e.name)),
        versions=parts_[-1].versions,
        notes=tuple(notes),
    )


def _versions() -> dict[str, str]:
    return {"torch": torch.__version__, "transformers": _transformers_version() or "absent"}


def _transformers_version() -> str | None:
    try:
        return importlib.metadata.version("transformers")
    except importlib.metadata.PackageNotFoundError:
        return None


def _version_key() -> str:
    key = f"torch{torch.__version__}-tf{_transformers_version() or 'none'}"
    return key.replace("+", "_").replace("/", "_")


def _first_line(text: str | None) -> str:
    return (text or "unknown error").strip().splitlines()[0]


def catalog_rows(catalog: Catalog) -> list[dict]:
    """One JSON-ready summary per entry (what `cuda-agent synth catalog --json` prints)."""
    rows = []
    for e in catalog.entries:
        rows.append(
            {
                "name": e.name,
                "library": e.library,
                "kind": e.kind,
                "category": e.category,
                "ranks": list(e.ranks),
                "plans": sum(len(p) for p in e.plans.values()),
                "aliases": list(e.aliases),
            }
        )
    return rows
