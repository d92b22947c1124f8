"""GELU of a scaled activation over 4M elements: the small elementwise task most guard tests use."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.gelu(x * self.scale)


def get_inputs():
    return [torch.randn(4096, 1024)]


def get_init_inputs():
    return [1.5]
