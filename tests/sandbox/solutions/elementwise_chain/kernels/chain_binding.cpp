#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>

#include "binding_registry.h"

extern "C" cudaError_t chain_launch(const float* x, float* y, int64_t n, float scale, float shift,
                                    cudaStream_t stream);

torch::Tensor chain_forward(torch::Tensor x, double scale, double shift) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "x must be a float32 CUDA tensor");
    TORCH_CHECK(x.is_contiguous(), "x must be contiguous");
    TORCH_CHECK(reinterpret_cast<uintptr_t>(x.data_ptr()) % 16 == 0, "x must be 16-byte aligned");
    auto y = torch::empty_like(x);
    cudaError_t err = chain_launch(x.data_ptr<float>(), y.data_ptr<float>(), x.numel(),
                                   static_cast<float>(scale), static_cast<float>(shift),
                                   at::cuda::getCurrentCUDAStream());
    TORCH_CHECK(err == cudaSuccess, "chain kernel failed: ", cudaGetErrorString(err));
    return y;
}

REGISTER_BINDING(chain_forward, chain_forward);
