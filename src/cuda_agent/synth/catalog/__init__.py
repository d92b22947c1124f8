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
    "catalog_rows",
    "load_catalog",
    "mine",
]


def mine(library: str) -> Catalog:
    """Probe every candidate of `library` ("torch" or "transformers"); one entry per computation.

    Candidates that compute the same thing (torch.relu, F.relu, nn.ReLU) fall into one group by
    their probe fingerprint; the preferred name speaks for it and the others become its aliases.
    """
    from cuda_agent.synth.catalog.probe import entry_from, probe, warm_up

    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    warm_up()
    if library == "torch":
        from cuda_agent.synth.catalog.torch_ops import torch_candidates

        cands, notes = torch_candidates(), []
    else:
        from cuda_agent.synth.catalog.hf_ops import transformers_candidates

        cands, notes = transformers_candidates()
    groups = defaultdict(list)
    for cand in cands:
        result = probe(cand)
        if result is not None:
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


def load_catalog(cache_dir: Path, refresh: bool = False) -> Catalog:
    """The catalog for the installed torch and transformers, mined once and cached as JSON."""
    path = Path(cache_dir) / f"catalog-v{CATALOG_VERSION}-{_version_key()}.json"
    if path.is_file() and not refresh:
        try:
            return Catalog.model_validate_json(path.read_text())
        except ValueError:
            pass  # a truncated or stale file: mine again
    catalog = _mine_isolated()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(catalog.model_dump_json())
    tmp.replace(path)
    return catalog


def _mine_isolated() -> Catalog:
    from cuda_agent.sandbox import run_isolated

    with ThreadPoolExecutor(2) as pool:
        futures = {
            lib: pool.submit(run_isolated, mine, (lib,), timeout_s=MINE_TIMEOUT_S)
            for lib in ("torch", "transformers")
        }
        results = {lib: f.result() for lib, f in futures.items()}
    if not results["torch"].ok:
        raise UserError(f"mining torch operators failed: {_first_line(results['torch'].error)}")
    parts = [results["torch"].value]
    notes = list(parts[0].notes)
    if results["transformers"].ok:
        parts.append(results["transformers"].value)
        notes += results["transformers"].value.notes
    else:
        notes.append(f"mining transformers failed: {_first_line(results['transformers'].error)}")
    entries = {e.name: e for part in parts for e in part.entries}
    return Catalog(
        entries=tuple(sorted(entries.values(), key=lambda e: e.name)),
        versions=parts[-1].versions,
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
