"""3x3 convolution with bias, then ReLU, on a batch of feature maps."""

import torch
import torch.nn as nn

OPS = ["torch.nn.Conv2d", "torch.relu"]


class Model(nn.Module):
    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size=3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.conv(x))


def get_inputs():
    return [torch.randn(32, 64, 128, 128)]


def get_init_inputs():
    return [64, 128]
