// LayerNorm(x + residual): the residual sum, then the normalisation, both our kernels.
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>

#include "binding_registry.h"
#include "launchers.h"

torch::Tensor residual_layernorm(torch::Tensor x, torch::Tensor residual, torch::Tensor weight,
                                 torch::Tensor bias, double eps) {
    for (const torch::Tensor& t : {x, residual, weight, bias}) {
        TORCH_CHECK(t.is_cuda() && t.scalar_type() == torch::kFloat32,
                    "residual_layernorm: inputs must be float32 CUDA tensors");
    }
    TORCH_CHECK(x.sizes() == residual.sizes(), "residual_layernorm: shapes differ");
    torch::Tensor xc = x.contiguous();
    torch::Tensor rc = residual.contiguous();
    const int64_t cols = xc.size(-1);
    TORCH_CHECK(weight.numel() == cols && bias.numel() == cols,
                "residual_layernorm: weight and bias must match the last dimension");
    torch::Tensor summed = torch::empty_like(xc);
    torch::Tensor y = torch::empty_like(xc);
    cudaStream_t stream = c10::cuda::getCurrentCUDAStream().stream();
    launch_residual_add(xc.data_ptr<float>(), rc.data_ptr<float>(), summed.data_ptr<float>(),
                        xc.numel(), stream);
    torch::Tensor wc = weight.contiguous();
    torch::Tensor bc = bias.contiguous();
    launch_layernorm(summed.data_ptr<float>(), wc.data_ptr<float>(), bc.data_ptr<float>(),
                     y.data_ptr<float>(), xc.numel() / cols, cols, static_cast<float>(eps),
                     stream);
    return y;
}

REGISTER_BINDING(residual_layernorm, residual_layernorm);
