// Softmax over the last dimension: one block per row, max and sum reduced across the block.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

template <bool kMax>
__device__ __forceinline__ float warp_reduce(float v) {
    for (int offset = 16; offset > 0; offset >>= 1) {
        const float other = __shfl_xor_sync(0xffffffffu, v, offset);
        v = kMax ? fmaxf(v, other) : v + other;
    }
    return v;
}

// Every thread of the block gets the result; `scratch` holds one float per warp.
template <bool kMax>
__device__ float block_reduce(float v, float* scratch) {
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    const int warps = (blockDim.x + 31) >> 5;
    v = warp_reduce<kMax>(v);
    __syncthreads();  // scratch may still be read by the previous reduction
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = lane < warps ? scratch[lane] : (kMax ? -INFINITY : 0.0f);
    return warp_reduce<kMax>(v);
}

__global__ void softmax_rows_kernel(const float* __restrict__ x, float* __restrict__ y,
                                    int64_t cols) {
    __shared__ float scratch[32];
    const float* row = x + static_cast<int64_t>(blockIdx.x) * cols;
    float* out = y + static_cast<int64_t>(blockIdx.x) * cols;
    float m = -INFINITY;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, row[c]);
    m = block_reduce<true>(m, scratch);
    float s = 0.0f;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) s += expf(row[c] - m);
    const float inv = 1.0f / block_reduce<false>(s, scratch);
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) out[c] = expf(row[c] - m) * inv;
}

extern "C" void launch_softmax_rows(const float* x, float* y, int64_t rows, int64_t cols,
                                    cudaStream_t stream) {
    if (rows == 0 || cols == 0) return;
    softmax_rows_kernel<<<static_cast<unsigned>(rows), 256, 0, stream>>>(x, y, cols);
}
