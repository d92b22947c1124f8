// In place: y[r, c] = gelu(y[r, c] + bias[c]).
#include <cuda_runtime.h>

#include <cstdint>

__global__ void bias_gelu_kernel(float* y, const float* bias, int64_t total, int64_t cols) {
    const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < total) {
        const float v = y[i] + bias[i % cols];
        y[i] = 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
    }
}

extern "C" void launch_bias_gelu(float* y, const float* bias, int64_t rows, int64_t cols,
                                 cudaStream_t stream) {
    const int64_t total = rows * cols;
    if (total == 0) return;
    bias_gelu_kernel<<<static_cast<unsigned>((total + 255) / 256), 256, 0, stream>>>(
        y, bias, total, cols);
}
