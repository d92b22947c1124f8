"""Trusted comparison of candidate outputs with reference outputs."""

from __future__ import annotations

from dataclasses import dataclass

import torch


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
            bad = ~torch.isfinite(c)
            if bool(bad.any()):
                return Comparison(False, f"{name} has {int(bad.sum())} NaN/Inf values")
            diff = (c.float() - r.float()).abs()
            err = float(diff.max()) if diff.numel() else 0.0
            worst = max(worst, err)
            over = diff > atol + rtol * r.float().abs()
            if bool(over.any()):
                n = int(over.sum())
                return Comparison(
                    False,
                    f"{name}: {n} of {c.numel()} values outside atol={atol} rtol={rtol} "
                    f"(max abs error {err:.4g})",
                    err,
                )
        elif not torch.equal(c, r):
            return Comparison(False, f"{name} differs from the reference (integer/bool output)")
    return Comparison(True, max_abs_error=worst)
