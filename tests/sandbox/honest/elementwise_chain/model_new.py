import math
from dataclasses import dataclass

import cuda_extension
import torch
import torch.nn as nn


@dataclass(frozen=True)
class Affine:
    scale: float
    shift: float


class ModelNew(nn.Module):
    def __init__(self, scale: float, shift: float):
        super().__init__()
        if not (math.isfinite(scale) and math.isfinite(shift)):
            raise ValueError("scale and shift must be finite")
        self.affine = Affine(float(scale), float(shift))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return cuda_extension.elementwise_chain(x, self.affine.scale, self.affine.shift)
