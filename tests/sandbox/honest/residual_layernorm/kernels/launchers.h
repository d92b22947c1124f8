// The launchers of kernels/residual_add.cu and kernels/layernorm.cu.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

extern "C" void launch_residual_add(const float* x, const float* r, float* s, int64_t n,
                                    cudaStream_t stream);
extern "C" void launch_layernorm(const float* s, const float* w, const float* b, float* y,
                                 int64_t rows, int64_t cols, float eps, cudaStream_t stream);
