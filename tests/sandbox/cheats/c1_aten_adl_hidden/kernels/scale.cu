// y = alpha * x: the scaling alone (the GELU is left to PyTorch).
#include <cuda_runtime.h>

#include <cstdint>

__global__ void unary_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n,
                             float alpha) {
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += stride) {
        y[i] = x[i] * alpha;
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
