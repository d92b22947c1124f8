import cuda_extension
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, hidden: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden) + 0.1 * torch.randn(hidden))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[-1] != self.weight.shape[0]:
            raise ValueError(f"last dimension {x.shape[-1]} != hidden {self.weight.shape[0]}")
        return cuda_extension.rmsnorm(x, self.weight, self.eps)
