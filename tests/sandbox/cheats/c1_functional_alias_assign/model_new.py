import cuda_extension
import torch
import torch.nn as nn

F = torch.nn.functional


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale
        self.act = F.gelu

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(cuda_extension.unary(x, self.scale))
