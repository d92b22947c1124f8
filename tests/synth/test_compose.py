import ast
import math
from collections import Counter

import pytest

from cuda_agent.sandbox import run_isolated
from cuda_agent.synth.profiles import PROFILES
from cuda_agent.task import check_program
from tests.synth.programs import compose_batch


def _compose(catalog, cache, seed, ids, device="cpu"):
    path = cache / "catalog-for-compose.json"
    path.write_text(catalog.model_dump_json())
    res = run_isolated(compose_batch, (str(path), seed, list(ids), device), timeout_s=600)
    assert res.ok, res.error
    return res.value


@pytest.fixture(scope="module")
def composed(catalog, synth_cache):
    return _compose(catalog, synth_cache, 0, range(16))


def test_a_seed_reproduces_the_candidates(composed, catalog, synth_cache):
    again = _compose(catalog, synth_cache, 0, [11, 3])  # alone and in another order
    by_id = {r["id"]: r for r in composed}
    assert again == [by_id[11], by_id[3]]
    other = _compose(catalog, synth_cache, 1, [3])
    assert other[0].get("code") != by_id[3].get("code")


def test_composed_programs_are_standalone_kernelbench_programs(composed):
    records = [r for r in composed if r["ok"]]
    assert len(records) >= 12
    counts = Counter(r["n_ops"] for r in records)
    assert set(counts) <= {1, 2, 3, 4, 5} and sum(v for k, v in counts.items() if k >= 3) >= 5
    for rec in records:
        check_program(rec["code"], f"candidate {rec['id']}")
        tree = ast.parse(rec["code"])
        imported = {a.asname or a.name for n in ast.walk(tree)
                    if isinstance(n, ast.Import | ast.ImportFrom) for a in n.names}  # fmt: skip
        used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        defined = {n.name for n in tree.body if isinstance(n, ast.ClassDef | ast.FunctionDef)}
        local = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)
                 and isinstance(n.ctx, ast.Store)}  # fmt: skip
        args = {n.arg for n in ast.walk(tree) if isinstance(n, ast.arg)}
        undefined = used - imported - defined - local - args - {"super"}
        assert not undefined, f"undefined names {undefined} in\n{rec['code']}"


def test_programs_run_and_their_shapes_agree(composed):
    records = [r for r in composed if r["ok"]][:8]
    res = run_isolated(_run_all, ([r["code"] for r in records],), timeout_s=600)
    assert res.ok, res.error
    for rec, shapes in zip(records, res.value, strict=True):
        assert shapes is not None, rec["code"]
        assert rec["primary_shape"] == shapes[0]


def _run_all(codes):
    import torch

    from cuda_agent.synth.program import build, load_program, make_inputs

    out = []
    for code in codes:
        loaded = load_program(code)
        inputs = make_inputs(loaded, "cpu", 0)
        with torch.no_grad():
            result = build(loaded, "cpu")(*inputs)
        out.append([list(inputs[0].shape), list(result.shape)] if result.numel() else None)
    return out


def test_sizes_follow_the_device_profile(composed, catalog, synth_cache):
    cpu = [r for r in composed[:6] if r["ok"]]
    gpu = [r for r in _compose(catalog, synth_cache, 0, range(6), "cuda") if r["ok"]]
    assert all(r["est_ms"] <= PROFILES["cpu"].target_ms[1] * 4 for r in cpu)
    numel = lambda recs: sum(math.prod(r["primary_shape"]) for r in recs)  # noqa: E731
    assert numel(gpu) / len(gpu) > 8 * numel(cpu) / len(cpu)


def test_step_by_step_shapes_agree_with_the_whole_program(catalog, synth_cache):
    """The composer infers each step's shape by running that step alone on the previous step's
    meta output; the whole rendered program must end in the same rank."""
    path = synth_cache / "catalog-for-compose.json"
    path.write_text(catalog.model_dump_json())
    res = run_isolated(_realize_against_whole, (str(path), range(8)), timeout_s=600)
    assert res.ok, res.error
    checked = res.value
    assert len(checked) >= 8 and all(step == whole for step, whole in checked), checked


def _realize_against_whole(catalog_path, ids):
    from cuda_agent.synth.codegen import render
    from cuda_agent.synth.compose import compose_record, load_composer
    from cuda_agent.synth.program import build, load_program, make_inputs, tensors_of

    composer = load_composer(catalog_path, "cuda")
    realize, checked = composer._realize, []

    def realize_and_check(choices, shape):
        spec, rank = realize(choices, shape)
        if rank is not None:
            loaded = load_program(render(spec), "whole")
            out = tensors_of(build(loaded, "meta")(*make_inputs(loaded, "meta", 0)))
            checked.append((rank, out[0].dim() if len(out) == 1 else None))
        return spec, rank

    composer._realize = realize_and_check
    for index in ids:
        compose_record(composer, 0, index)
    return checked
