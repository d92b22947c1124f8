// Binding of the bias-and-ReLU kernel over the convolution's NCDHW output.
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>

#include "binding_registry.h"

extern "C" void launch_bias_relu(const float* x, const float* bias, float* y, int64_t n,
                                 int64_t spatial, int64_t channels, cudaStream_t stream);

torch::Tensor bias_relu(torch::Tensor x, torch::Tensor bias) {
    TORCH_CHECK(x.is_cuda() && x.dim() == 5, "bias_relu: x must be a 5-D CUDA tensor");
    TORCH_CHECK(bias.numel() == x.size(1), "bias_relu: one bias per channel");
    torch::Tensor xc = x.contiguous();
    torch::Tensor y = torch::empty_like(xc);
    const int64_t spatial = xc.size(2) * xc.size(3) * xc.size(4);
    launch_bias_relu(xc.data_ptr<float>(), bias.contiguous().data_ptr<float>(),
                     y.data_ptr<float>(), xc.numel(), spatial, xc.size(1),
                     c10::cuda::getCurrentCUDAStream().stream());
    return y;
}

REGISTER_BINDING(bias_relu, bias_relu);
