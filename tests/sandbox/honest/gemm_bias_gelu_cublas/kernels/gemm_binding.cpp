// y = gelu(x @ weight^T + bias): the GEMM by cuBLAS on torch's handle (bound to the current
// stream), the epilogue by our kernel. Needs cublas_v2.h and -lcublas.
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAStream.h>
#include <cublas_v2.h>

#include <vector>

#include "binding_registry.h"

extern "C" void launch_bias_gelu(float* y, const float* bias, int64_t rows, int64_t cols,
                                 cudaStream_t stream);

torch::Tensor gemm_bias_gelu(torch::Tensor x, torch::Tensor weight, torch::Tensor bias) {
    for (const torch::Tensor& t : {x, weight, bias}) {
        TORCH_CHECK(t.is_cuda() && t.scalar_type() == torch::kFloat32,
                    "gemm_bias_gelu: inputs must be float32 CUDA tensors");
    }
    torch::Tensor xc = x.contiguous();
    torch::Tensor wc = weight.contiguous();
    torch::Tensor bc = bias.contiguous();
    const int64_t k = xc.size(-1);
    const int64_t m = xc.numel() / k;
    const int64_t n = wc.size(0);
    TORCH_CHECK(wc.size(1) == k && bc.numel() == n, "gemm_bias_gelu: shapes do not match");
    std::vector<int64_t> shape(xc.sizes().begin(), xc.sizes().end());
    shape.back() = n;
    torch::Tensor y = torch::empty(shape, xc.options());
    // Row-major y[m,n] = x[m,k] w[n,k]^T, read column-major: y^T[n,m] = op_T(w) x^T.
    const float one = 1.0f;
    const float zero = 0.0f;
    cublasHandle_t handle = at::cuda::getCurrentCUDABlasHandle();
    const cublasStatus_t status = cublasSgemm(
        handle, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m),
        static_cast<int>(k), &one, wc.data_ptr<float>(), static_cast<int>(k),
        xc.data_ptr<float>(), static_cast<int>(k), &zero, y.data_ptr<float>(),
        static_cast<int>(n));
    TORCH_CHECK(status == CUBLAS_STATUS_SUCCESS, "gemm_bias_gelu: cublasSgemm failed");
    launch_bias_gelu(y.data_ptr<float>(), bc.data_ptr<float>(), m, n,
                     c10::cuda::getCurrentCUDAStream().stream());
    return y;
}

REGISTER_BINDING(gemm_bias_gelu, gemm_bias_gelu);
