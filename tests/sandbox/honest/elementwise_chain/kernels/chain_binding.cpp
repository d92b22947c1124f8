// clamp(gelu(x * scale + shift), -0.5, 2.0) for a float32 CUDA tensor.
#include <torch/extension.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "binding_registry.h"

extern "C" void launch_chain(const float* x, float* y, int64_t n, float scale, float shift,
                             cudaStream_t stream);

torch::Tensor elementwise_chain(torch::Tensor x, double scale, double shift) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32,
                "elementwise_chain: x must be a float32 CUDA tensor");
    c10::cuda::CUDAGuard guard(x.device());
    torch::Tensor xc = x.contiguous();
    torch::Tensor y = torch::empty_like(xc);
    launch_chain(xc.data_ptr<float>(), y.data_ptr<float>(), xc.numel(),
                 static_cast<float>(scale), static_cast<float>(shift),
                 c10::cuda::getCurrentCUDAStream().stream());
    return y;
}

REGISTER_BINDING(elementwise_chain, elementwise_chain, py::arg("x"), py::arg("scale"),
                 py::arg("shift"));
