"""The SwiGLU feed-forward of LLaMA-style transformers: silu(x W1) * (x W3), then W2."""

import torch
import torch.nn as nn

OPS = ["torch.nn.Linear", "torch.nn.functional.silu", "torch.mul"]


class Model(nn.Module):
    def __init__(self, hidden: int, inner: int):
        super().__init__()
        self.w1 = nn.Linear(hidden, inner, bias=False)
        self.w3 = nn.Linear(hidden, inner, bias=False)
        self.w2 = nn.Linear(inner, hidden, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(torch.nn.functional.silu(self.w1(x)) * self.w3(x))


def get_inputs():
    return [torch.randn(4096, 2048)]


def get_init_inputs():
    return [2048, 5632]
