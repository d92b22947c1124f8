// Binding for a float32 elementwise kernel y = f(x; alpha): check, allocate, launch.
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>

#include "binding_registry.h"

extern "C" void launch_unary(const float* x, float* y, int64_t n, float alpha,
                             cudaStream_t stream);

torch::Tensor unary(torch::Tensor x, double alpha) {
    TORCH_CHECK(x.is_cuda(), "unary: x must be a CUDA tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "unary: x must be float32");
    torch::Tensor xc = x.contiguous();
    torch::Tensor y = torch::empty_like(xc);
    launch_unary(xc.data_ptr<float>(), y.data_ptr<float>(), xc.numel(),
                 static_cast<float>(alpha), c10::cuda::getCurrentCUDAStream().stream());
    return y;
}

REGISTER_BINDING(unary, unary);
