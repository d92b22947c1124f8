// The GEMM by torch's cuBLAS wrapper (ATen, not cuBLAS), the epilogue by our kernel.
#include <torch/extension.h>
#include <ATen/cuda/CUDABlas.h>
#include <c10/cuda/CUDAStream.h>

#include "binding_registry.h"

extern "C" void launch_bias_gelu(float* y, const float* bias, int64_t rows, int64_t cols,
                                 cudaStream_t stream);

torch::Tensor linear_gelu(torch::Tensor x, torch::Tensor weight, torch::Tensor bias) {
    const int64_t m = x.size(0), k = x.size(1), n = weight.size(0);
    torch::Tensor y = torch::empty({m, n}, x.options());
    at::cuda::blas::gemm<float>('t', 'n', n, m, k, 1.0f, weight.data_ptr<float>(), k,
                                x.data_ptr<float>(), k, 0.0f, y.data_ptr<float>(), n);
    launch_bias_gelu(y.data_ptr<float>(), bias.data_ptr<float>(), m, n,
                     c10::cuda::getCurrentCUDAStream().stream());
    return y;
}

REGISTER_BINDING(linear_gelu, linear_gelu);
