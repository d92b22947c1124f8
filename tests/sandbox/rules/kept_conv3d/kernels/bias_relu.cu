// y = max(x + bias[c], 0) over an NCDHW float32 tensor, c = (i / spatial) % channels.
#include <cuda_runtime.h>

#include <cstdint>

__global__ void bias_relu_kernel(const float* __restrict__ x, const float* __restrict__ bias,
                                 float* __restrict__ y, int64_t n, int64_t spatial,
                                 int64_t channels) {
    const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += stride) {
        const float v = x[i] + bias[(i / spatial) % channels];
        y[i] = v > 0.0f ? v : 0.0f;
    }
}

extern "C" void launch_bias_relu(const float* x, const float* bias, float* y, int64_t n,
                                 int64_t spatial, int64_t channels, cudaStream_t stream) {
    if (n == 0) return;
    const int threads = 256;
    const int64_t blocks = (n + threads - 1) / threads;
    const unsigned grid = static_cast<unsigned>(blocks < 65536 ? blocks : 65536);
    bias_relu_kernel<<<grid, threads, 0, stream>>>(x, bias, y, n, spatial, channels);
}
