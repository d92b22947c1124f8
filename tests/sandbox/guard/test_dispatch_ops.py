"""What the dispatcher trace records for views and conversions, on the CPU: the static guard lets
forward call view functions (`x.flatten(1)`, `torch.flatten(x, 1)`) and conversions (`x.float()`,
`w.to(x.device)`) because a view that has to copy, or a conversion that converts, dispatches a
copy, which the runtime guard's allow-list refuses."""

from __future__ import annotations

from collections import Counter

import pytest
import torch

from cuda_agent.sandbox.guard.runtime import ALLOWED_OPS, _OpRecorder

STRIDED = torch.arange(24.0).reshape(4, 6).t()  # not contiguous: flattening it must copy


def _refused(fn) -> list[str]:
    ops: Counter = Counter()
    with _OpRecorder(ops):
        fn()
    return [op for op in ops if op not in ALLOWED_OPS]


@pytest.mark.parametrize(
    "fn",
    [
        lambda: torch.permute(STRIDED, (1, 0)),
        lambda: torch.transpose(STRIDED, 0, 1),
        lambda: torch.unsqueeze(STRIDED, 0).squeeze(0),
        lambda: torch.chunk(STRIDED, 2),
        lambda: torch.narrow(STRIDED, 0, 1, 2),
        lambda: torch.flatten(STRIDED.t()),
        lambda: torch.reshape(STRIDED.t(), (-1,)),
    ],
)
def test_views_dispatch_only_allowed_ops(fn):
    assert _refused(fn) == []


@pytest.mark.parametrize(
    "fn",
    [lambda: torch.flatten(STRIDED), lambda: torch.reshape(STRIDED, (-1,)), STRIDED.contiguous],
)
def test_a_view_that_has_to_copy_dispatches_a_refused_op(fn):
    assert _refused(fn) == ["aten::clone"]


@pytest.mark.parametrize(
    "fn",
    [
        STRIDED.float,
        lambda: STRIDED.to(STRIDED.device),
        lambda: STRIDED.to(device="cpu", dtype=torch.float32),
        lambda: STRIDED.to(STRIDED),
    ],
)
def test_a_conversion_that_changes_nothing_dispatches_nothing(fn):
    ops: Counter = Counter()
    with _OpRecorder(ops):
        fn()
    assert ops == Counter()


@pytest.mark.parametrize(
    "fn",
    [STRIDED.half, STRIDED.double, lambda: STRIDED.to(torch.bfloat16), STRIDED.int().float],
)
def test_a_conversion_that_converts_dispatches_a_refused_op(fn):
    assert _refused(fn) == ["aten::_to_copy"]


@pytest.mark.parametrize(
    "fn",
    [
        lambda: torch.full((3,), -float("inf")),
        lambda: torch.ones(3),
        lambda: torch.full_like(STRIDED, 2.0),
        lambda: torch.ones_like(STRIDED),
        lambda: STRIDED.new_full((2,), 1.0),
        lambda: STRIDED.new_ones(2),
    ],
)
def test_a_constant_fill_is_allocation(fn):
    assert _refused(fn) == []
