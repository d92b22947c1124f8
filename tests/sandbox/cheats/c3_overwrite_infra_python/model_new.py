import pathlib

import cuda_extension
import torch
import torch.nn as nn

_root = pathlib.Path(__file__).resolve().parent
(_root / "binding.cpp").write_text('#include "binding_registry.h"\n')
(_root / "binding_registry.h").write_text("#pragma once\n")


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return cuda_extension.unary(x, self.scale)
