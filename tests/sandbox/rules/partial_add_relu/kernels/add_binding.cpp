// Binding of the add kernel: check both inputs, allocate the sum, launch.
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>

#include "binding_registry.h"

extern "C" void launch_add(const float* x, const float* y, float* z, int64_t n,
                           cudaStream_t stream);

torch::Tensor add(torch::Tensor x, torch::Tensor y) {
    TORCH_CHECK(x.is_cuda() && y.is_cuda(), "add: inputs must be CUDA tensors");
    TORCH_CHECK(x.sizes() == y.sizes(), "add: inputs must have one shape");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "add: inputs must be float32");
    torch::Tensor xc = x.contiguous();
    torch::Tensor yc = y.contiguous();
    torch::Tensor z = torch::empty_like(xc);
    launch_add(xc.data_ptr<float>(), yc.data_ptr<float>(), z.data_ptr<float>(), xc.numel(),
               c10::cuda::getCurrentCUDAStream().stream());
    return z;
}

REGISTER_BINDING(add, add);
