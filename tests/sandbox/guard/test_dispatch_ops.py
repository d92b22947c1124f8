"""What the dispatcher trace records for views, on the CPU: the static guard lets forward call
view functions (`x.flatten(1)`, `torch.flatten(x, 1)`) because a view that has to copy
dispatches a copy, which the runtime guard's allow-list refuses."""

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
