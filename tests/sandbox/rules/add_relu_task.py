"""ReLU of a sum, for the partial-kernel fixtures: a kernel adds, PyTorch's ReLU follows."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.relu(a + b)


def get_inputs():
    return [torch.randn(2048, 1024), torch.randn(2048, 1024)]


def get_init_inputs():
    return []
