"""A single file whose wrapper squares in a kernel and leaves the row mean to ATen (.mean())."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = """#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>

__global__ void square_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
    const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * x[i];
}

torch::Tensor mean_square(torch::Tensor x) {
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const int64_t n = xc.numel();
    const int threads = 256;
    square_kernel<<<(n + threads - 1) / threads, threads, 0,
                    c10::cuda::getCurrentCUDAStream()>>>(xc.data_ptr<float>(),
                                                         y.data_ptr<float>(), n);
    return y.mean(1);
}
"""

ext = load_inline(
    name="rules_mean_square",
    cpp_sources="torch::Tensor mean_square(torch::Tensor x);",
    cuda_sources=cuda_source,
    functions=["mean_square"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ext.mean_square(x)
