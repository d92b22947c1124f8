// Honest kernels for KernelBench's level-1 elementwise, reduction and normalisation problems, in
// several shapes of launch: one kernel; several kernels (a copy, then the op in place; or
// statistics, then the op); and a fill first (torch::zeros, an ATen fill kernel, or
// cudaMemsetAsync). One source for every problem, so that each harness builds it once.
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>

namespace {

enum Shape { ONE = 0, COPY_THEN_INPLACE = 1, ZEROS_FIRST = 2, MEMSET_FIRST = 3 };
enum Act {
    RELU = 0, LEAKY_RELU, SIGMOID, TANH, SWISH, GELU, SELU, HARDSIGMOID, SOFTPLUS, SOFTSIGN,
    ELU, HARDTANH, SCALE
};
enum Reduce { SUM = 0, MEAN, MAX, MIN, ARGMAX, ARGMIN };
enum RowOp { SOFTMAX = 0, LOG_SOFTMAX, L1_NORM, L2_NORM };

constexpr int kThreads = 256;

cudaStream_t stream() { return c10::cuda::getCurrentCUDAStream(); }

int64_t grid_for(int64_t n) { return std::min<int64_t>((n + kThreads - 1) / kThreads, 65535 * 8); }

__device__ __forceinline__ float activate(float v, int op, float a) {
    switch (op) {
        case RELU: return v <= 0.f ? 0.f : v;
        case LEAKY_RELU: return v > 0.f ? v : v * a;
        case SIGMOID: return 1.f / (1.f + expf(-v));
        case TANH: return tanhf(v);
        case SWISH: return v / (1.f + expf(-v));
        case GELU: return 0.5f * v * (1.f + erff(v * 0.70710678118654752f));
        case SELU: {
            const float scale = 1.0507009873554804934f, alpha = 1.6732632423543772848f;
            return v > 0.f ? scale * v : scale * alpha * expm1f(v);
        }
        case HARDSIGMOID: return fminf(fmaxf(v / 6.f + 0.5f, 0.f), 1.f);
        case SOFTPLUS: return v > 20.f ? v : log1pf(expf(v));
        case SOFTSIGN: return v / (1.f + fabsf(v));
        case ELU: return v > 0.f ? v : a * expm1f(v);
        case HARDTANH: return fminf(fmaxf(v, -1.f), 1.f);
        default: return v * a;  // SCALE
    }
}

__global__ void activate_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n,
                                int op, float a) {
    const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step)
        y[i] = activate(x[i], op, a);
}

__global__ void copy_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
    const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step)
        y[i] = x[i];
}

__global__ void activate_inplace_kernel(float* __restrict__ y, int64_t n, int op, float a) {
    const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step)
        y[i] = activate(y[i], op, a);
}

// x viewed as [outer, r, inner]; one thread per (outer, inner) walks r, so a warp reads
// consecutive addresses.
__global__ void reduce_mid_kernel(const float* __restrict__ x, float* __restrict__ y,
                                  int64_t* __restrict__ idx, int64_t outer, int64_t r,
                                  int64_t inner, int op, bool accumulate) {
    const int64_t n = outer * inner;
    const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < n; t += step) {
        const int64_t o = t / inner, i = t % inner;
        const float* p = x + o * r * inner + i;
        float best = p[0];
        int64_t where = 0;
        float sum = 0.f;
        for (int64_t k = 0; k < r; ++k) {
            const float v = p[k * inner];
            sum += v;
            // strict comparisons keep the first extreme, as torch returns it
            if ((op == MAX || op == ARGMAX) ? v > best : v < best) { best = v; where = k; }
        }
        if (op == ARGMAX || op == ARGMIN) idx[t] = accumulate ? idx[t] + where : where;
        else if (op == SUM) y[t] = accumulate ? y[t] + sum : sum;
        else if (op == MEAN) y[t] = sum / static_cast<float>(r);
        else y[t] = best;
    }
}

__global__ void scale_inplace_kernel(float* __restrict__ y, int64_t n, float s) {
    const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step)
        y[i] *= s;
}

__device__ float block_reduce(float v, bool take_max) {
    __shared__ float part[32];
    __shared__ float total;
    for (int off = 16; off > 0; off >>= 1) {
        const float o = __shfl_down_sync(0xffffffffu, v, off);
        v = take_max ? fmaxf(v, o) : v + o;
    }
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (lane == 0) part[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < blockDim.x / 32 ? part[lane] : (take_max ? -INFINITY : 0.f);
        for (int off = 16; off > 0; off >>= 1) {
            const float o = __shfl_down_sync(0xffffffffu, v, off);
            v = take_max ? fmaxf(v, o) : v + o;
        }
        if (lane == 0) total = v;
    }
    __syncthreads();
    const float out = total;
    __syncthreads();
    return out;
}

// One block per row: stats[row] = (shift, divisor) with y = f(x, shift, divisor).
__device__ float2 row_stats(const float* __restrict__ p, int64_t cols, int op) {
    if (op == SOFTMAX || op == LOG_SOFTMAX) {
        float m = -INFINITY;
        for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, p[c]);
        m = block_reduce(m, true);
        float s = 0.f;
        for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) s += expf(p[c] - m);
        return make_float2(m, block_reduce(s, false));
    }
    float s = 0.f;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
        s += op == L1_NORM ? fabsf(p[c]) : p[c] * p[c];
    s = block_reduce(s, false);
    return make_float2(0.f, op == L1_NORM ? s / static_cast<float>(cols) : sqrtf(s));
}

__device__ void row_apply(const float* __restrict__ p, float* __restrict__ q, int64_t cols,
                          int op, float2 st) {
    const float log_sum = op == LOG_SOFTMAX ? logf(st.y) : 0.f;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
        const float v = p[c];
        q[c] = op == SOFTMAX ? expf(v - st.x) / st.y
             : op == LOG_SOFTMAX ? v - st.x - log_sum
             : v / st.y;
    }
}

__global__ void row_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t cols,
                           int op) {
    const float* p = x + static_cast<int64_t>(blockIdx.x) * cols;
    row_apply(p, y + static_cast<int64_t>(blockIdx.x) * cols, cols, op, row_stats(p, cols, op));
}

__global__ void row_stats_kernel(const float* __restrict__ x, float2* __restrict__ stats,
                                 int64_t cols, int op) {
    const float2 st = row_stats(x + static_cast<int64_t>(blockIdx.x) * cols, cols, op);
    if (threadIdx.x == 0) stats[blockIdx.x] = st;
}

__global__ void row_apply_kernel(const float* __restrict__ x, float* __restrict__ y,
                                 const float2* __restrict__ stats, int64_t cols, int op) {
    const int64_t row = blockIdx.x;
    row_apply(x + row * cols, y + row * cols, cols, op, stats[row]);
}

// x viewed as [b, f, inner]: y = x / sqrt(mean over f of x^2 + eps), one thread per (b, inner).
__global__ void rms_norm_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t b,
                                int64_t f, int64_t inner, float eps) {
    const int64_t n = b * inner;
    const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < n; t += step) {
        const int64_t o = t / inner, i = t % inner;
        const float* p = x + o * f * inner + i;
        float s = 0.f;
        for (int64_t k = 0; k < f; ++k) s += p[k * inner] * p[k * inner];
        const float inv = rsqrtf(s / static_cast<float>(f) + eps);
        float* q = y + o * f * inner + i;
        for (int64_t k = 0; k < f; ++k) q[k * inner] = p[k * inner] * inv;
    }
}

__global__ void sum_squares_kernel(const float* __restrict__ x, int64_t n, double* __restrict__ acc) {
    float s = 0.f;
    const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step)
        s += x[i] * x[i];
    s = block_reduce(s, false);
    if (threadIdx.x == 0) atomicAdd(acc, static_cast<double>(s));
}

__global__ void divide_by_root_kernel(const float* __restrict__ x, float* __restrict__ y,
                                      int64_t n, const double* __restrict__ acc) {
    const float inv = static_cast<float>(1.0 / sqrt(*acc));
    const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
    for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step)
        y[i] = x[i] * inv;
}

void check_input(const torch::Tensor& x) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32, "x: a CUDA float32 tensor");
    TORCH_CHECK(x.is_contiguous(), "x must be contiguous");
}

}  // namespace

torch::Tensor elementwise(torch::Tensor x, int64_t op, double a, int64_t shape) {
    check_input(x);
    const int64_t n = x.numel();
    auto y = shape == ZEROS_FIRST ? torch::zeros_like(x) : torch::empty_like(x);
    if (n == 0) return y;
    const float* src = x.data_ptr<float>();
    float* dst = y.data_ptr<float>();
    if (shape == MEMSET_FIRST) cudaMemsetAsync(dst, 0, n * sizeof(float), stream());
    if (shape == COPY_THEN_INPLACE) {
        copy_kernel<<<grid_for(n), kThreads, 0, stream()>>>(src, dst, n);
        activate_inplace_kernel<<<grid_for(n), kThreads, 0, stream()>>>(dst, n, op, a);
    } else {
        activate_kernel<<<grid_for(n), kThreads, 0, stream()>>>(src, dst, n, op, a);
    }
    return y;
}

torch::Tensor reduce_dim1(torch::Tensor x, int64_t op, int64_t shape, bool keepdim) {
    check_input(x);
    TORCH_CHECK(x.dim() >= 2, "x needs a dimension 1 to reduce");
    const int64_t outer = x.size(0), r = x.size(1), inner = x.numel() / (outer * r);
    std::vector<int64_t> sizes(x.sizes().begin(), x.sizes().end());
    if (keepdim) sizes[1] = 1;
    else sizes.erase(sizes.begin() + 1);
    const bool index = op == ARGMAX || op == ARGMIN;
    auto options = x.options().dtype(index ? torch::kInt64 : torch::kFloat32);
    auto y = shape == ZEROS_FIRST ? torch::zeros(sizes, options) : torch::empty(sizes, options);
    const int64_t n = outer * inner;
    if (n == 0) return y;
    if (shape == MEMSET_FIRST) cudaMemsetAsync(y.data_ptr(), 0, y.nbytes(), stream());
    float* values = index ? nullptr : y.data_ptr<float>();
    int64_t* indices = index ? y.data_ptr<int64_t>() : nullptr;
    // a zeroed output is accumulated into, so the fill is part of the result
    const bool accumulate = shape == ZEROS_FIRST;
    const bool split = op == MEAN && shape == COPY_THEN_INPLACE;  // the sum, then its scale
    reduce_mid_kernel<<<grid_for(n), kThreads, 0, stream()>>>(
        x.data_ptr<float>(), values, indices, outer, r, inner, split ? SUM : op, accumulate);
    if (split)
        scale_inplace_kernel<<<grid_for(n), kThreads, 0, stream()>>>(values, n, 1.f / r);
    return y;
}

torch::Tensor rows(torch::Tensor x, int64_t op, int64_t shape) {
    check_input(x);
    TORCH_CHECK(x.dim() == 2, "x: [rows, cols]");
    const int64_t nrows = x.size(0), cols = x.size(1);
    auto y = torch::empty_like(x);
    if (x.numel() == 0) return y;
    if (shape == COPY_THEN_INPLACE) {  // statistics, then the op: two kernels
        auto stats = torch::empty({nrows, 2}, x.options());
        auto* st = reinterpret_cast<float2*>(stats.data_ptr<float>());
        row_stats_kernel<<<nrows, kThreads, 0, stream()>>>(x.data_ptr<float>(), st, cols, op);
        row_apply_kernel<<<nrows, kThreads, 0, stream()>>>(x.data_ptr<float>(),
                                                           y.data_ptr<float>(), st, cols, op);
    } else {
        row_kernel<<<nrows, kThreads, 0, stream()>>>(x.data_ptr<float>(), y.data_ptr<float>(),
                                                     cols, op);
    }
    return y;
}

torch::Tensor rms_norm(torch::Tensor x, double eps) {
    check_input(x);
    const int64_t b = x.size(0), f = x.size(1), inner = x.numel() / (b * f);
    auto y = torch::empty_like(x);
    if (x.numel() == 0) return y;
    rms_norm_kernel<<<grid_for(b * inner), kThreads, 0, stream()>>>(
        x.data_ptr<float>(), y.data_ptr<float>(), b, f, inner, eps);
    return y;
}

torch::Tensor frobenius_norm(torch::Tensor x) {
    check_input(x);
    const int64_t n = x.numel();
    auto y = torch::empty_like(x);
    auto acc = torch::zeros({1}, x.options().dtype(torch::kFloat64));  // a fill, then two kernels
    if (n == 0) return y;
    sum_squares_kernel<<<std::min<int64_t>(grid_for(n), 4096), kThreads, 0, stream()>>>(
        x.data_ptr<float>(), n, acc.data_ptr<double>());
    divide_by_root_kernel<<<grid_for(n), kThreads, 0, stream()>>>(
        x.data_ptr<float>(), y.data_ptr<float>(), n, acc.data_ptr<double>());
    return y;
}
