// Tensor-to-pointer binding: checks, allocation of the output, launch on PyTorch's current stream.
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>

#include "binding_registry.h"

extern "C" void elementwise_chain_launch(const float* x, float* out, long n, float scale,
                                         float shift, cudaStream_t stream);

torch::Tensor elementwise_chain(torch::Tensor x, double scale, double shift) {
    TORCH_CHECK(x.is_cuda(), "x must be a CUDA tensor");
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "x must be float32");
    TORCH_CHECK(x.is_contiguous(), "x must be contiguous");
    auto out = torch::empty_like(x);
    elementwise_chain_launch(x.data_ptr<float>(), out.data_ptr<float>(), x.numel(), (float)scale,
                             (float)shift, c10::cuda::getCurrentCUDAStream());
    return out;
}

REGISTER_BINDING(elementwise_chain, elementwise_chain);
