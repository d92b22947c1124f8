import pytest
import torch

from cuda_agent.sandbox.check.compare import as_tensors, compare, tensor_pieces


def test_close_values_pass_and_far_fail():
    ref = torch.linspace(-3, 3, 1000)
    assert compare(ref, ref + 5e-3, 1e-2, 1e-2).ok
    bad = ref.clone()
    bad[10] += 1.0
    result = compare(ref, bad, 1e-2, 1e-2)
    assert not result.ok and "1 of 1000 values" in result.reason
    assert abs(result.max_abs_error - 1.0) < 1e-5


def test_relative_tolerance_scales_with_reference():
    ref = torch.full((4,), 1000.0)
    assert compare(ref, ref + 9.0, 1e-2, 1e-2).ok  # 9 <= 0.01 + 0.01 * 1000
    assert not compare(ref, ref + 11.0, 1e-2, 1e-2).ok


def test_nan_inf_shape_dtype_count():
    ref = torch.zeros(3)
    assert "NaN/Inf" in compare(ref, torch.tensor([0.0, float("nan"), 0.0]), 1, 1).reason
    assert "NaN/Inf" in compare(ref, torch.tensor([0.0, float("inf"), 0.0]), 1, 1).reason
    assert "shape" in compare(ref, torch.zeros(4), 1, 1).reason
    assert "dtype" in compare(ref, torch.zeros(3, dtype=torch.float64), 1, 1).reason
    assert "returned 2 tensors" in compare(ref, (ref, ref), 1, 1).reason
    assert "expected tensors" in compare(ref, "text", 1, 1).reason


def test_tuples_and_integers():
    assert as_tensors((torch.ones(1), [torch.zeros(2)]))[1].shape == (2,)
    ints = torch.arange(5)
    assert compare(ints, ints.clone(), 0, 0).ok
    assert not compare(ints, ints + 1, 10, 10).ok  # integers must match exactly


def test_large_outputs_are_compared_a_chunk_at_a_time(monkeypatch):
    from cuda_agent.sandbox.check import compare as compare_module

    monkeypatch.setattr(compare_module, "_CHUNK", 1000)
    ref = torch.randn(10, 1001)
    near = ref + 1e-3
    assert compare(ref, near, 1e-2, 1e-2).ok
    far = ref.clone()
    far[-1, -1] += 5.0  # in the last, partial chunk
    result = compare(ref, far, 1e-2, 1e-2)
    assert not result.ok and "1 of 10010 values" in result.reason
    assert abs(result.max_abs_error - 5.0) < 1e-4
    nan = ref.clone()
    nan[4, 7] = float("nan")
    nan[9, 1000] = float("inf")
    assert "2 NaN/Inf values" in compare(ref, nan, 1e-2, 1e-2).reason


@pytest.mark.parametrize("chunk", [1, 6, 7, 20, 1000])
def test_a_tensor_is_cut_into_small_pieces_in_order_whatever_its_layout(chunk):
    base = torch.arange(2 * 3 * 5 * 7).reshape(2, 3, 5, 7)
    layouts = [base, base.permute(3, 1, 2, 0).contiguous().permute(3, 1, 2, 0), base[:, ::2],
               base[:1].expand(4, 3, 5, 7), torch.tensor(5), base[:, :0]]  # fmt: skip
    for t in layouts:
        pieces = list(tensor_pieces(t, chunk))
        assert all(p.numel() <= chunk for p in pieces)
        assert torch.equal(torch.cat(pieces), t.reshape(-1))
        same_cuts = tensor_pieces(t.contiguous(), chunk)
        assert [p.numel() for p in pieces] == [p.numel() for p in same_cuts]
