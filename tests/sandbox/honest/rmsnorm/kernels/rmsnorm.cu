// RMSNorm over the last dimension: y = x * rsqrt(mean(x^2) + eps) * w, one block per row.
#include <cuda_runtime.h>

#include <cstdint>

__device__ __forceinline__ float warp_sum(float v) {
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

__global__ void rmsnorm_kernel(const float* __restrict__ x, const float* __restrict__ w,
                               float* __restrict__ y, int64_t cols, float eps) {
    __shared__ float scratch[32];
    const float* row = x + static_cast<int64_t>(blockIdx.x) * cols;
    float* out = y + static_cast<int64_t>(blockIdx.x) * cols;
    float sq = 0.0f;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) sq += row[c] * row[c];
    sq = warp_sum(sq);
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    if (lane == 0) scratch[warp] = sq;
    __syncthreads();
    const int warps = (blockDim.x + 31) >> 5;
    const float total = warp_sum(lane < warps ? scratch[lane] : 0.0f);
    const float rstd = rsqrtf(total / static_cast<float>(cols) + eps);
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) out[c] = row[c] * rstd * w[c];
}

extern "C" void launch_rmsnorm(const float* x, const float* w, float* y, int64_t rows,
                               int64_t cols, float eps, cudaStream_t stream) {
    if (rows == 0 || cols == 0) return;
    rmsnorm_kernel<<<static_cast<unsigned>(rows), 256, 0, stream>>>(x, w, y, cols, eps);
}
