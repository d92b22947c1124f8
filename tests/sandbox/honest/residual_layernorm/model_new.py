import cuda_extension
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, hidden: int):
        super().__init__()
        self.norm = nn.LayerNorm(hidden)

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        norm = self.norm
        return cuda_extension.residual_layernorm(x, residual, norm.weight, norm.bias, norm.eps)
