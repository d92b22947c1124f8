"""RMSNorm (LLaMA style) written out in PyTorch ops."""

import torch
import torch.nn as nn

OPS = ["torch.pow", "torch.mean", "torch.add", "torch.rsqrt", "torch.mul"]


class Model(nn.Module):
    def __init__(self, hidden: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden) + 0.1 * torch.randn(hidden))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        variance = x.pow(2).mean(-1, keepdim=True)
        return x * torch.rsqrt(variance + self.eps) * self.weight


def get_inputs():
    return [torch.randn(16384, 8192)]


def get_init_inputs():
    return [8192]
