from __future__ import annotations

import cuda_extension
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """The sum in a kernel of its own; the ReLU left to PyTorch."""

    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        total = cuda_extension.add(a, b)
        return torch.relu(total)
