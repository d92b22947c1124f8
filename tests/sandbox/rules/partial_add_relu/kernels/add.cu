// z = x + y over float32 elements.
#include <cuda_runtime.h>

#include <cstdint>

__global__ void add_kernel(const float* __restrict__ x, const float* __restrict__ y,
                           float* __restrict__ z, int64_t n) {
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += stride) {
        z[i] = x[i] + y[i];
    }
}

extern "C" void launch_add(const float* x, const float* y, float* z, int64_t n,
                           cudaStream_t stream) {
    if (n == 0) return;
    const int threads = 256;
    const int64_t blocks = (n + threads - 1) / threads;
    const unsigned grid = static_cast<unsigned>(blocks < 65536 ? blocks : 65536);
    add_kernel<<<grid, threads, 0, stream>>>(x, y, z, n);
}
