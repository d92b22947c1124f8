// y = gelu(alpha * x), correct but slow: every thread first spins ~100k cycles, so a call takes
// on the order of a millisecond on an H200, far slower than eager PyTorch.
#include <cuda_runtime.h>

#include <cstdint>

__global__ void unary_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n,
                             float alpha) {
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += stride) {
        const long long start = clock64();
        while (clock64() - start < 100000) {
        }
        const float v = x[i] * alpha;
        y[i] = 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
    }
}

extern "C" void launch_unary(const float* x, float* y, int64_t n, float alpha,
                             cudaStream_t stream) {
    if (n == 0) return;
    const int threads = 256;
    const int64_t blocks = (n + threads - 1) / threads;
    const unsigned grid = static_cast<unsigned>(blocks < 262144 ? blocks : 262144);
    unary_kernel<<<grid, threads, 0, stream>>>(x, y, n, alpha);
}
