"""Trusted comparison of candidate outputs with reference outputs."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import torch

_CHUNK = 1 << 26  # elements compared at once


@dataclass(frozen=True)
class Comparison:
    ok: bool
    reason: str = ""
    max_abs_error: float | None = None


def as_tensors(out) -> list[torch.Tensor]:
    """A forward's result as a flat list of tensors (a tensor, or a tuple/list of them)."""
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, list | tuple):
        return [t for item in out for t in as_tensors(item)]
    if isinstance(out, int | float | bool):
        return [torch.tensor(out)]
    raise TypeError(f"forward returned {type(out).__name__}, expected tensors")


def compare(ref, cand, atol: float, rtol: float) -> Comparison:
    """Same count, shapes and dtypes; finite; |cand - ref| <= atol + rtol * |ref| everywhere."""
    try:
        ref_t, cand_t = as_tensors(ref), as_tensors(cand)
    except TypeError as err:
        return Comparison(False, str(err))
    if len(ref_t) != len(cand_t):
        return Comparison(False, f"returned {len(cand_t)} tensors, the reference {len(ref_t)}")
    worst = 0.0
    for i, (r, c) in enumerate(zip(ref_t, cand_t, strict=True)):
        name = "output" if len(ref_t) == 1 else f"output {i}"
        if tuple(c.shape) != tuple(r.shape):
            return Comparison(
                False, f"{name} has shape {tuple(c.shape)}, expected {tuple(r.shape)}"
            )
        if c.dtype != r.dtype:
            return Comparison(False, f"{name} has dtype {c.dtype}, expected {r.dtype}")
        if c.device != r.device:
            c = c.to(r.device)
        if c.is_floating_point() or c.is_complex():
            nonfinite, err, over = _elementwise(r, c, atol, rtol)
            if nonfinite:
                return Comparison(False, f"{name} has {nonfinite} NaN/Inf values")
            worst = max(worst, err)
            if over:
                return Comparison(
                    False,
                    f"{name}: {over} of {c.numel()} values outside atol={atol} rtol={rtol} "
                    f"(max abs error {err:.4g})",
                    err,
                )
        elif not torch.equal(c, r):
            return Comparison(False, f"{name} differs from the reference (integer/bool output)")
    return Comparison(True, max_abs_error=worst)


def tensor_pieces(t: torch.Tensor, chunk: int) -> Iterator[torch.Tensor]:
    """`t` flattened, as consecutive pieces of at most `chunk` elements: views where its layout
    allows, else copies of one piece at a time, never of the whole. Tensors of one shape are cut
    at the same places, whatever their strides, so two can be compared piece by piece."""
    if t.numel() <= chunk or t.dim() <= 1:
        yield from t.reshape(-1).split(chunk)
        return
    rows = chunk // t[0].numel()
    if rows:
        yield from (p.reshape(-1) for p in t.split(rows))
    else:
        for row in t:
            yield from tensor_pieces(row, chunk)


def _elementwise(r: torch.Tensor, c: torch.Tensor, atol: float, rtol: float):
    """(NaN/Inf count in c, max |c - r|, count outside the tolerance), a piece at a time so
    that comparing a multi-GB output needs a few hundred MB of temporaries, not several copies."""
    nonfinite, worst, over = 0, 0.0, 0
    for rc, cc in zip(tensor_pieces(r, _CHUNK), tensor_pieces(c, _CHUNK), strict=True):
        nonfinite += int((~torch.isfinite(cc)).sum())
        if nonfinite:
            continue
        diff = (cc.float() - rc.float()).abs()
        worst = max(worst, float(diff.max()))
        over += int((diff > atol + rtol * rc.float().abs()).sum())
    return nonfinite, worst, over
