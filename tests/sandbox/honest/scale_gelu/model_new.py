from __future__ import annotations

import cuda_extension
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """gelu(scale * x) in one pass instead of eager PyTorch's two."""

    def __init__(self, scale: float):
        super().__init__()
        self.scale = float(scale)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.contiguous().view(-1)
        out = cuda_extension.unary(flat, self.scale)
        return out.view(x.shape)
