"""A causal self-attention block: QKV projection, masked softmax attention, output projection."""

import math

import torch
import torch.nn as nn

OPS = [
    "torch.nn.Linear",
    "torch.Tensor.view",
    "torch.Tensor.transpose",
    "torch.matmul",
    "torch.Tensor.masked_fill",
    "torch.softmax",
]


class Model(nn.Module):
    def __init__(self, d_model: int, n_heads: int, max_len: int):
        super().__init__()
        self.n_heads = n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        mask = torch.tril(torch.ones(max_len, max_len, dtype=torch.bool))
        self.register_buffer("mask", mask.view(1, 1, max_len, max_len))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        q = q.view(b, t, self.n_heads, c // self.n_heads).transpose(1, 2)
        k = k.view(b, t, self.n_heads, c // self.n_heads).transpose(1, 2)
        v = v.view(b, t, self.n_heads, c // self.n_heads).transpose(1, 2)
        att = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(k.size(-1))
        att = att.masked_fill(~self.mask[:, :, :t, :t], float("-inf"))
        att = torch.softmax(att, dim=-1)
        y = torch.matmul(att, v).transpose(1, 2).contiguous().view(b, t, c)
        return self.proj(y)


def get_inputs():
    return [torch.randn(8, 1024, 1024)]


def get_init_inputs():
    return [1024, 16, 1024]
