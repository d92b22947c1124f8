import pytest

from cuda_agent.sandbox import run_isolated
from cuda_agent.synth.decontam import (
    Reference,
    ast_tokens,
    build_reference,
    shrink_sizes,
    similarity,
    trace_reference,
)
from cuda_agent.task import load_tasks
from tests.conftest import FIXTURE_KERNELBENCH_JSONL

RELU_2D = """import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = F.relu(x)
        return x


def get_inputs():
    return [torch.randn(64, 512)]


def get_init_inputs():
    return []
"""


@pytest.fixture(scope="module")
def kernelbench():
    return load_tasks(FIXTURE_KERNELBENCH_JSONL)


def test_ast_similarity_sees_through_names_and_constants(kernelbench):
    relu = next(t for t in kernelbench if t.name == "L1_1_Elementwise_ReLU")
    renamed = relu.code.replace("rows", "bs").replace("features", "dim").replace("x", "inp")
    assert similarity(ast_tokens(relu.code), ast_tokens(renamed)) > 0.95
    lstm = next(t for t in kernelbench if t.level == 3)
    assert similarity(ast_tokens(relu.code), ast_tokens(lstm.code)) < 0.9


def test_similarity_prunes_pairs_that_cannot_pass():
    short, long = ["a"] * 10, ["a"] * 100
    assert similarity(short, long, threshold=0.9) == 0.0
    assert similarity(short, long) == pytest.approx(20 / 110)


def test_shrinking_lowers_module_level_sizes_only():
    code = "batch_size = 4096\ndim = 2 * 393216\nk = 3\n\ndef f():\n    return 1000\n"
    out = shrink_sizes(code)
    assert "batch_size = 16" in out and "dim = 2 * 16" in out and "k = 3" in out
    assert "return 1000" in out


def test_kernelbench_programs_trace_to_aten_signatures(kernelbench):
    picked = [t for t in kernelbench if t.name in ("L1_1_Elementwise_ReLU", "L3_1_Tiny_LSTM")]
    res = run_isolated(trace_reference, ([(t.hash, t.code) for t in picked],), timeout_s=300)
    assert res.ok, res.error
    relu, lstm = res.value
    assert relu["aten"] == [["relu", 2]] and relu["error"] is None
    assert lstm["aten"] and lstm["device"] == "cpu-small"  # LSTMs do not run on meta


def test_reference_flags_signature_matches_and_near_copies(kernelbench, tmp_path):
    picked = [
        t for t in kernelbench if t.name in ("L1_1_Elementwise_ReLU", "L2_1_Conv2d_ReLU_AddBias")
    ]
    calls = []

    def trace(chunks):
        calls.append(len(chunks))
        for chunk in chunks:
            res = run_isolated(trace_reference, (list(chunk),), timeout_s=300)
            yield res.value

    cache = tmp_path / "sigs.jsonl"
    ref = build_reference(picked, cache, trace)
    assert isinstance(ref, Reference) and not ref.untraced and calls == [1]
    assert build_reference(picked, cache, trace).signatures == ref.signatures
    assert calls == [1]  # the second build read the cache
    verdict = ref.check([["relu", 2]], RELU_2D, 0.9)
    assert verdict == {
        "ok": False,
        "reason": "kernelbench signature",
        "detail": "L1_1_Elementwise_ReLU",
    }
    near = ref.check([["relu", 3]], picked[0].code.replace("x", "y"), 0.9)
    assert near["reason"] == "kernelbench ast" and near["similarity"] > 0.9
    assert ref.check([["relu", 3], ["tanh", 3]], RELU_2D.replace("F.relu", "F.tanh"), 0.99)["ok"]
