// In place: y[r, c] = gelu(y[r, c] + bias[c]) over a row-major rows x cols matrix.
#include <cuda_runtime.h>

#include <cstdint>

__global__ void bias_gelu_kernel(float* __restrict__ y, const float* __restrict__ bias,
                                 int64_t total, int64_t cols) {
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
         i += stride) {
        const float v = y[i] + bias[i % cols];
        y[i] = 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
    }
}

extern "C" void launch_bias_gelu(float* y, const float* bias, int64_t rows, int64_t cols,
                                 cudaStream_t stream) {
    const int64_t total = rows * cols;
    if (total == 0) return;
    const int threads = 256;
    const int64_t blocks = (total + threads - 1) / threads;
    const unsigned grid = static_cast<unsigned>(blocks < 262144 ? blocks : 262144);
    bias_gelu_kernel<<<grid, threads, 0, stream>>>(y, bias, total, cols);
}
