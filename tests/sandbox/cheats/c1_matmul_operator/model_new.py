import cuda_extension
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x @ self.linear.weight.t() + self.linear.bias
        return cuda_extension.unary(h, 1.0)
