from __future__ import annotations

import cuda_extension
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """PyTorch's Conv3d kept as it is; the bias and ReLU after it fused in one kernel."""

    def __init__(self, channels: int = 8):
        super().__init__()
        self.conv = nn.Conv3d(channels, channels, kernel_size=3, padding=1, bias=False)
        self.bias = nn.Parameter(torch.zeros(channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x)
        return cuda_extension.bias_relu(y, self.bias)
