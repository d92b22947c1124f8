// Softmax over the last dimension of a float32 CUDA tensor.
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>

#include "binding_registry.h"

extern "C" void launch_softmax_rows(const float* x, float* y, int64_t rows, int64_t cols,
                                    cudaStream_t stream);

torch::Tensor softmax_rows(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32,
                "softmax_rows: x must be a float32 CUDA tensor");
    TORCH_CHECK(x.dim() >= 1, "softmax_rows: x needs a last dimension");
    torch::Tensor xc = x.contiguous();
    torch::Tensor y = torch::empty_like(xc);
    const int64_t cols = xc.size(-1);
    const int64_t rows = cols == 0 ? 0 : xc.numel() / cols;
    launch_softmax_rows(xc.data_ptr<float>(), y.data_ptr<float>(), rows, cols,
                        c10::cuda::getCurrentCUDAStream().stream());
    return y;
}

REGISTER_BINDING(softmax_rows, softmax_rows);
