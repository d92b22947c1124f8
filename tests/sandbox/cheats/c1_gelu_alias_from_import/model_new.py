import cuda_extension
import torch
import torch.nn as nn
from torch.nn.functional import gelu as activation


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return activation(cuda_extension.unary(x, self.scale))
