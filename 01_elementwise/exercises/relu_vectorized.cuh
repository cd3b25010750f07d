// EXERCISE (chapter 01): a vectorized ReLU. Read exercises/README.md first.
//
// Fill in relu_vectorized_kernel and, if you need to, the launcher. Build with
// -Dexercises=true and the GPU tests grade this version like every other one (sizes 0 to 2^26+3,
// inputs with NaN, inf and -0, pointers offset by 1-7 elements, nothing written outside [0, n)),
// the SASS test checks for 128-bit loads and stores, and the benchmark adds your row.
#pragma once

#include "tut/check.hpp"

#include <cuda_runtime.h>

#include <cstdint>

namespace exercise {

__global__ void relu_vectorized_kernel(const float* __restrict__ x, float* __restrict__ y, std::int64_t n) {
  // TODO: process float4 packs with a grid-stride loop, then the n % 4 tail.
  // Until you do, this kernel writes nothing and the grader reports every element as wrong.
  (void)x;
  (void)y;
  (void)n;
}

inline void relu_vectorized(cudaStream_t stream, std::int64_t n, float* y, const float* x) {
  if (n == 0) return;
  // TODO: choose the grid (see kernels/v2_waves.cuh), and handle pointers that are not 16-byte
  // aligned (see kernels/elementwise.cuh). The grader passes offsets of 1-7 floats.
  relu_vectorized_kernel<<<1, 256, 0, stream>>>(x, y, n);
  TUT_CHECK_LAUNCH("relu_vectorized_kernel");
}

}  // namespace exercise
