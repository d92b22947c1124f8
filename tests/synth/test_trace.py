"""Labels come from what runs (tracing) and are checked by a second mechanism (counting)."""

import pytest
import torch

from cuda_agent.synth.program import build, load_program, make_inputs
from cuda_agent.synth.trace import aten_name, trace_forward
from cuda_agent.synth.verify import count_label_calls
from tests.synth.programs import GOOD, GOOD_LABELS, HF_BLOCK


def _trace(code):
    loaded = load_program(code)
    model = build(loaded, "cpu")
    return trace_forward(model, make_inputs(loaded, "cpu", 0), loaded.filename)


def test_labels_are_what_runs_not_what_is_written():
    traced = _trace(GOOD)
    assert list(traced.labels) == GOOD_LABELS  # no relu (dead code); tanh through getattr
    linear = traced.calls[0]
    assert linear.inputs == ((32, 64),) and linear.outputs == ((32, 128),)
    assert [c.label for c in traced.calls].count("torch.nn.Linear") == 1


def test_library_blocks_are_one_label_and_their_insides_none():
    pytest.importorskip("transformers")
    traced = _trace(HF_BLOCK)
    assert list(traced.labels) == ["transformers.llama.LlamaMLP", "torch.softmax"]
    assert {"addmm", "mm", "silu", "softmax"} & {name for name, _ in traced.aten}


def test_counting_agrees_with_the_trace_and_catches_a_false_label():
    counts = count_label_calls(GOOD, [*GOOD_LABELS, "torch.relu", "torch.nn.Conv2d"], "cpu")
    assert all(counts[label] >= 1 for label in GOOD_LABELS)
    assert counts["torch.relu"] == 0 and counts["torch.nn.Conv2d"] == 0
    assert torch.relu.__name__ == "relu" and not hasattr(torch.Tensor.add, "__wrapped__")


def test_counting_ignores_calls_made_inside_library_code():
    pytest.importorskip("transformers")
    counts = count_label_calls(HF_BLOCK, ["transformers.llama.LlamaMLP", "torch.nn.Linear"],
                               "cpu")  # fmt: skip
    assert counts == {"transformers.llama.LlamaMLP": 1, "torch.nn.Linear": 0}


def test_aten_names_are_normalized_across_kernels():
    ops = torch.ops.aten
    assert aten_name(ops._native_batch_norm_legit.default) == "batch_norm"
    assert aten_name(ops.cudnn_batch_norm.default) == "batch_norm"
    assert aten_name(ops._scaled_dot_product_flash_attention.default) == (
        "scaled_dot_product_attention"
    )
    assert aten_name(ops.view.default) is None and aten_name(ops.clone.default) is None
    assert aten_name(ops.addmm.default) == "addmm"
