"""Linear layer (GEMM plus bias) followed by GELU."""

import torch
import torch.nn as nn

OPS = ["torch.nn.Linear", "torch.nn.functional.gelu"]


class Model(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.gelu(self.linear(x))


def get_inputs():
    return [torch.randn(8192, 4096)]


def get_init_inputs():
    return [4096, 4096]
