import cuda_extension
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, scale: float, shift: float):
        super().__init__()
        self.scale = scale
        self.shift = shift

    def forward(self, x):
        return cuda_extension.elementwise_chain(x, self.scale, self.shift)
