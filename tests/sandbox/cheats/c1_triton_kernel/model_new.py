import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _scaled_gelu_kernel(x_ptr, y_ptr, n, scale, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    v = tl.load(x_ptr + offsets, mask=mask) * scale
    tl.store(y_ptr + offsets, 0.5 * v * (1.0 + tl.erf(v * 0.7071067811865476)), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.empty_like(x)
        n = x.numel()
        _scaled_gelu_kernel[(triton.cdiv(n, 1024),)](x, y, n, self.scale, BLOCK=1024)
        return y
