// RMSNorm of a float32 CUDA tensor over its last dimension.
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>

#include "binding_registry.h"

extern "C" void launch_rmsnorm(const float* x, const float* w, float* y, int64_t rows,
                               int64_t cols, float eps, cudaStream_t stream);

torch::Tensor rmsnorm(torch::Tensor x, torch::Tensor weight, double eps) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32,
                "rmsnorm: x must be a float32 CUDA tensor");
    TORCH_CHECK(weight.is_cuda() && weight.scalar_type() == torch::kFloat32,
                "rmsnorm: weight must be a float32 CUDA tensor");
    torch::Tensor xc = x.contiguous();
    torch::Tensor wc = weight.contiguous();
    const int64_t cols = xc.size(-1);
    TORCH_CHECK(wc.numel() == cols, "rmsnorm: weight must match the last dimension");
    torch::Tensor y = torch::empty_like(xc);
    launch_rmsnorm(xc.data_ptr<float>(), wc.data_ptr<float>(), y.data_ptr<float>(),
                   xc.numel() / cols, cols, static_cast<float>(eps),
                   c10::cuda::getCurrentCUDAStream().stream());
    return y;
}

REGISTER_BINDING(rmsnorm, rmsnorm);
