"""A small multi-layer model: three Linear layers with ReLU between them."""

import torch
import torch.nn as nn

OPS = ["torch.nn.Linear", "torch.nn.ReLU"]


class Model(nn.Module):
    def __init__(self, sizes: list[int]):
        super().__init__()
        layers = []
        for i in range(len(sizes) - 1):
            layers.append(nn.Linear(sizes[i], sizes[i + 1]))
            if i < len(sizes) - 2:
                layers.append(nn.ReLU())
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def get_inputs():
    return [torch.randn(4096, 2048)]


def get_init_inputs():
    return [[2048, 4096, 4096, 1024]]
