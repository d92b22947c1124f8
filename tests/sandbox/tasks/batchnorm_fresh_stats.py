"""BatchNorm over inputs far from zero mean: a sound check in training mode (batch statistics
normalise the output), the identity within tolerance in eval mode (fresh running statistics)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.bn = nn.BatchNorm2d(channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.bn(x)


def get_inputs():
    return [torch.rand(16, 8, 32, 32) * 4 + 2]


def get_init_inputs():
    return [8]
