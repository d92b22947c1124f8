"""Softmax over rows of 4096 standard-normal logits. Every output is below 0.01, so under the
default tolerance all-zeros or a constant pass the default draw: a degenerate check the null-kernel
battery must detect (and re-draw inputs for)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=-1)


def get_inputs():
    return [torch.randn(1024, 4096)]


def get_init_inputs():
    return []
