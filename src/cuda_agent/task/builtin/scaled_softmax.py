"""Softmax of logits divided by a temperature, over rows of 16384."""

import torch
import torch.nn as nn

OPS = ["torch.div", "torch.softmax"]


class Model(nn.Module):
    def __init__(self, temperature: float):
        super().__init__()
        self.temperature = temperature

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x / self.temperature, dim=-1)


def get_inputs():
    return [torch.randn(16384, 16384) * 4.0]


def get_init_inputs():
    return [0.7]
