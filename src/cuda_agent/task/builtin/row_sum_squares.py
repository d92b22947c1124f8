"""Sum of squares along the last dimension: a reduction eager PyTorch does in two kernels."""

import torch
import torch.nn as nn

OPS = ["torch.mul", "torch.sum"]


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sum(x * x, dim=-1)


def get_inputs():
    return [torch.randn(16384, 32768)]


def get_init_inputs():
    return []
