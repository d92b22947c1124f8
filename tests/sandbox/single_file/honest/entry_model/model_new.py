"""KernelBench's newer layout: the file's class is named Model, as the reference's is, and there
is no ModelNew; it is scored as the entry point (with a note saying so)."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = """#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>

// y = gelu(alpha * x), exact (erf) GELU as torch computes it
__global__ void scale_gelu_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n,
                                  float alpha) {
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += stride) {
        const float v = x[i] * alpha;
        y[i] = 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
    }
}

torch::Tensor scale_gelu(torch::Tensor x, double alpha) {
    TORCH_CHECK(x.is_cuda(), "x must be a CUDA tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "x must be float32");
    auto xc = x.contiguous();
    auto y = torch::empty_like(xc);
    const int64_t n = xc.numel();
    if (n == 0) return y;
    const int threads = 256;
    const int64_t blocks = std::min<int64_t>((n + threads - 1) / threads, 262144);
    scale_gelu_kernel<<<blocks, threads, 0, c10::cuda::getCurrentCUDAStream()>>>(
        xc.data_ptr<float>(), y.data_ptr<float>(), n, static_cast<float>(alpha));
    return y;
}
"""

cpp_source = """torch::Tensor scale_gelu(torch::Tensor x, double alpha);"""

scale_gelu_ext = load_inline(
    name="scale_gelu_ext",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["scale_gelu"],
)


class Model(nn.Module):
    def __init__(self, scale: float):
        super(Model, self).__init__()
        self.scale = float(scale)
        self.ext = scale_gelu_ext

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ext.scale_gelu(x, self.scale)
