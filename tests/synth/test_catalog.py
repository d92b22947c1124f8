import json
import os
import subprocess
import sys

import pytest

from cuda_agent.sandbox import run_isolated
from cuda_agent.synth import load_catalog
from cuda_agent.synth.catalog.hf_ops import MISSING


def test_catalog_mines_enough_torch_and_transformers_operators(catalog):
    assert catalog.count("torch") >= 150
    pytest.importorskip("transformers")
    assert catalog.count("transformers") >= 20
    kinds = {e.kind for e in catalog.entries if e.library == "transformers"}
    assert {"module", "rope", "attention"} <= kinds


def test_catalog_covers_each_source_of_operators(catalog):
    names = set(catalog.by_name())
    assert {"torch.nn.Conv2d", "torch.nn.Linear", "torch.nn.LayerNorm"} <= names  # modules
    assert {"torch.nn.functional.gelu", "torch.nn.functional.softplus"} <= names  # functional
    assert {"torch.sum", "torch.matmul", "torch.tanh"} <= names  # torch.*
    assert any(n.startswith("torch.Tensor.") for n in names)  # methods without a torch twin
    if catalog.count("transformers"):
        assert "transformers.llama.LlamaRMSNorm" in names
        assert "transformers.llama.LlamaAttention" in names


def test_operators_that_cannot_make_tasks_are_not_mined(catalog):
    every = {n for e in catalog.entries for n in (e.name, *e.aliases)}
    assert "torch.nn.functional.dropout" not in every  # stochastic
    assert "torch.zeros_like" not in every  # constant
    assert "torch.Tensor.contiguous" not in every  # the identity
    assert "torch.Tensor.long" not in every  # a cast, not an index result


def test_aliases_fold_into_one_entry(catalog):
    by_name = catalog.by_name()
    relu = [e for e in catalog.entries if "torch.nn.functional.relu" in (e.name, *e.aliases)]
    assert len(relu) == 1
    assert {"torch.relu", "torch.nn.ReLU"} & {relu[0].name, *relu[0].aliases}
    assert "torch.arctan" not in by_name and "torch.arctan" in by_name["torch.atan"].aliases


def test_entries_know_how_to_build_and_what_comes_out(catalog):
    conv = catalog.by_name()["torch.nn.Conv2d"]
    assert conv.ranks == (4,) or 4 in conv.ranks
    rules = {s.param: s.rule for s in conv.plans[4][0].init}
    assert rules["in_channels"] == "channels" and rules["out_channels"] == "channels_new"
    assert conv.outcomes[4].rank == 4
    total = catalog.by_name()["torch.sum"]
    assert any(o.rank < r for r, o in total.outcomes.items())


def test_catalog_is_cached(catalog, synth_cache):
    assert list(synth_cache.glob("catalog-*.json"))
    assert load_catalog(synth_cache) == catalog


def test_mining_without_transformers_says_why():
    code = (
        "import sys; sys.modules['transformers'] = None\n"
        "from cuda_agent.synth.catalog.hf_ops import transformers_candidates\n"
        "cands, notes = transformers_candidates()\n"
        "print(len(cands)); print(notes[0])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    count, note = out.stdout.strip().splitlines()
    assert count == "0"
    assert note == MISSING and "pip install 'cuda-agent[synth]'" in note


def test_mining_runs_isolated_and_probes_real_operators():
    res = run_isolated(_probe_two, timeout_s=300)
    assert res.ok, res.error
    linear, dropout = res.value
    assert linear == [1, 2, 3, 4, 5]  # nn.Linear takes any rank
    assert dropout is None


def _probe_two():
    from cuda_agent.synth.catalog.probe import probe, warm_up
    from cuda_agent.synth.catalog.torch_ops import torch_candidates

    warm_up()
    cands = {c.name: c for c in torch_candidates()}
    linear = probe(cands["torch.nn.Linear"])
    dropout = probe(cands["torch.nn.functional.dropout"])
    return sorted(linear.plans) if linear else None, dropout


def test_catalog_command_lists_every_entry_as_json(catalog, synth_cache):
    out = subprocess.run(
        [sys.executable, "-m", "cuda_agent", "synth", "catalog", "--json",
         "--cache-dir", str(synth_cache)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert len(rows) == len(catalog.entries)
    assert {"name", "library", "kind", "category", "ranks", "plans", "aliases"} <= set(rows[0])


def test_catalog_command_shows_a_table(catalog, synth_cache):
    out = subprocess.run(
        [sys.executable, "-m", "cuda_agent", "synth", "catalog",
         "--cache-dir", str(synth_cache)],
        capture_output=True, text=True, check=True, env={**os.environ, "COLUMNS": "200"},
    )  # fmt: skip
    assert f"{len(catalog.entries)} operators (torch {catalog.count('torch')}" in out.stdout
    assert "torch.nn.Conv2d" in out.stdout
