// LayerNorm over the last dimension, one block per row: mean, variance, affine.
#include <cstdint>

#include "common.cuh"
#include "launchers.h"

__global__ void layernorm_kernel(const float* __restrict__ s, const float* __restrict__ w,
                                 const float* __restrict__ b, float* __restrict__ y,
                                 int64_t cols, float eps) {
    __shared__ float scratch[32];
    const float* row = s + static_cast<int64_t>(blockIdx.x) * cols;
    float* out = y + static_cast<int64_t>(blockIdx.x) * cols;
    const float inv_cols = 1.0f / static_cast<float>(cols);
    float sum = 0.0f;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) sum += row[c];
    const float mean = block_sum(sum, scratch) * inv_cols;
    float sq = 0.0f;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
        const float d = row[c] - mean;
        sq += d * d;
    }
    const float rstd = rsqrtf(block_sum(sq, scratch) * inv_cols + eps);
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
        out[c] = (row[c] - mean) * rstd * w[c] + b[c];
    }
}

extern "C" void launch_layernorm(const float* s, const float* w, const float* b, float* y,
                                 int64_t rows, int64_t cols, float eps, cudaStream_t stream) {
    if (rows == 0 || cols == 0) return;
    layernorm_kernel<<<static_cast<unsigned>(rows), 256, 0, stream>>>(s, w, b, y, cols, eps);
}
