// EXERCISE (chapter 02): z = a * x + y on half, vectorized, for any alignment and any n.
// Read exercises/README.md first.
//
// Build with -Dexercises=true: the GPU tests then grade this launcher at every size and at
// pointer offsets 0-7 for each of the four arrays' starting points, and the SASS test checks that
// fma_f16_kernel loads and stores 128 bits at a time. The benchmark adds your row under fma_f16,
// next to chapter 01's generic template.
#pragma once

#include "tut/check.hpp"

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace exercise {

__global__ void fma_f16_kernel(const __half* __restrict__ a, const __half* __restrict__ x, const __half* __restrict__ y,
                               __half* __restrict__ z, std::int64_t n) {
  // TODO: 16-byte packs of eight halves (use __hfma or __hfma2), a grid-stride loop, the tail.
  // Until you do, this kernel writes nothing and the grader reports every element as wrong.
  (void)a;
  (void)x;
  (void)y;
  (void)z;
  (void)n;
}

inline void fma_f16(cudaStream_t stream, std::int64_t n, __half* z, const __half* a, const __half* x, const __half* y) {
  if (n == 0) return;
  // TODO: size the grid, and take a scalar path when any of the four pointers is not 16-byte
  // aligned (kernels/alignment.cuh shows how).
  fma_f16_kernel<<<1, 256, 0, stream>>>(a, x, y, z, n);
  TUT_CHECK_LAUNCH("fma_f16_kernel");
}

}  // namespace exercise
