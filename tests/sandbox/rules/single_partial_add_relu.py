"""A single file whose kernel adds and whose forward leaves the ReLU to PyTorch."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = """#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>

__global__ void add_kernel(const float* __restrict__ x, const float* __restrict__ y,
                           float* __restrict__ z, int64_t n) {
    const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) z[i] = x[i] + y[i];
}

torch::Tensor add(torch::Tensor x, torch::Tensor y) {
    TORCH_CHECK(x.is_cuda() && y.is_cuda(), "add: inputs must be CUDA tensors");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "add: inputs must be float32");
    auto xc = x.contiguous();
    auto yc = y.contiguous();
    auto z = torch::empty_like(xc);
    const int64_t n = xc.numel();
    if (n == 0) return z;
    const int threads = 256;
    const int64_t blocks = (n + threads - 1) / threads;
    add_kernel<<<blocks, threads, 0, c10::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), yc.data_ptr<float>(), z.data_ptr<float>(), n);
    return z;
}
"""

cpp_source = "torch::Tensor add(torch::Tensor x, torch::Tensor y);"

add_ext = load_inline(
    name="rules_partial_add",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["add"],
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.relu(add_ext.add(a, b))
