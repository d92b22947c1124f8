"""Written the way KernelBench's own few-shot example is: a kernel and its wrapper in one CUDA
string, a one-line C++ declaration, functions=[...], verbose=True and empty extra flags."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

add_source = """
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void add_kernel(const float* a, const float* b, float* out, int size) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < size) {
        out[i] = a[i] + b[i];
    }
}

torch::Tensor add_cuda(torch::Tensor a, torch::Tensor b) {
    auto size = a.numel();
    auto out = torch::zeros_like(a);

    const int block_size = 256;
    const int num_blocks = (size + block_size - 1) / block_size;

    add_kernel<<<num_blocks, block_size>>>(
        a.data_ptr<float>(), b.data_ptr<float>(), out.data_ptr<float>(), size);

    return out;
}
"""

add_cpp_source = "torch::Tensor add_cuda(torch::Tensor a, torch::Tensor b);"

add_ext = load_inline(
    name="add_ext",
    cpp_sources=add_cpp_source,
    cuda_sources=add_source,
    functions=["add_cuda"],
    verbose=True,
    extra_cflags=[""],
    extra_ldflags=[""],
)


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.add = add_ext

    def forward(self, a, b):
        return self.add.add_cuda(a, b)
