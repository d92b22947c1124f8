import cuda_extension
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = cuda_extension.unary(x.mul(self.scale), 1.0)
        return y.clamp_(min=-1e30)
