"""ReLU on uniform [0, 1) inputs, as KernelBench level 1 problem 19 draws them, at 4M elements:
`return x` passes the default draw, so only re-drawn (signed) inputs tell it from ReLU."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


def get_inputs():
    return [torch.rand(4096, 1024)]


def get_init_inputs():
    return []
