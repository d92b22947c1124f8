// y = gelu(alpha * x), correct but slow (every thread first spins ~100k cycles), and a sample of
// 64 input values spread over the whole input: the binding's fingerprint of an input set.
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

__global__ void sample_kernel(const float* __restrict__ x, float* __restrict__ out, int64_t n) {
    const int64_t i = threadIdx.x;
    out[i] = x[(i * (n / 64)) % n];
}

extern "C" void launch_unary(const float* x, float* y, int64_t n, float alpha,
                             cudaStream_t stream) {
    if (n == 0) return;
    const int threads = 256;
    const int64_t blocks = (n + threads - 1) / threads;
    const unsigned grid = static_cast<unsigned>(blocks < 262144 ? blocks : 262144);
    unary_kernel<<<grid, threads, 0, stream>>>(x, y, n, alpha);
}

extern "C" void launch_sample(const float* x, float* out, int64_t n, cudaStream_t stream) {
    if (n == 0) return;
    sample_kernel<<<1, 64, 0, stream>>>(x, out, n);
}
