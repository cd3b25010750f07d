// Known-wrong ReLU kernels. The grader must reject each one; if it ever accepts one, the grader
// (not the kernel) is broken.
#pragma once

#include "tut/check.hpp"

#include <cstdint>

namespace ch01::wrong {

// Vectorized, but forgets the n % 4 tail: right whenever n is a multiple of 4.
__global__ void drops_tail_kernel(const float4* __restrict__ x, float4* __restrict__ y, std::int64_t n4) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n4;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const float4 v = x[i];
    y[i] = make_float4(v.x < 0 ? 0 : v.x, v.y < 0 ? 0 : v.y, v.z < 0 ? 0 : v.z, v.w < 0 ? 0 : v.w);
  }
}
inline void drops_tail(cudaStream_t s, std::int64_t n, float* y, const float* x) {
  if (n < 4) return;
  drops_tail_kernel<<<256, 256, 0, s>>>(reinterpret_cast<const float4*>(x), reinterpret_cast<float4*>(y), n / 4);
  TUT_CHECK_LAUNCH("drops_tail_kernel");
}

// fmaxf(x, 0) returns 0 for NaN: wrong only where the input is NaN.
__global__ void fmax_kernel(const float* __restrict__ x, float* __restrict__ y, std::int64_t n) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) y[i] = fmaxf(x[i], 0.0f);
}
inline void swallows_nan(cudaStream_t s, std::int64_t n, float* y, const float* x) {
  if (n == 0) return;
  fmax_kernel<<<static_cast<unsigned>((n + 255) / 256), 256, 0, s>>>(x, y, n);
  TUT_CHECK_LAUNCH("fmax_kernel");
}

// y = x > 0 ? x : 0: right for every value but -0, which becomes +0.
__global__ void positive_kernel(const float* __restrict__ x, float* __restrict__ y, std::int64_t n) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) y[i] = x[i] > 0.0f || x[i] != x[i] ? x[i] : 0.0f;
}
inline void loses_negative_zero(cudaStream_t s, std::int64_t n, float* y, const float* x) {
  if (n == 0) return;
  positive_kernel<<<static_cast<unsigned>((n + 255) / 256), 256, 0, s>>>(x, y, n);
  TUT_CHECK_LAUNCH("positive_kernel");
}

// Rounds the grid up to whole packs of 4 and writes the whole last pack: one to three elements
// past n. Inside the allocation, so only the guard check can see it.
__global__ void overrun_kernel(const float* __restrict__ x, float* __restrict__ y, std::int64_t n_rounded) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i < n_rounded) y[i] = x[i] < 0 ? 0.0f : x[i];
}
inline void writes_past_end(cudaStream_t s, std::int64_t n, float* y, const float* x) {
  if (n == 0) return;
  const std::int64_t rounded = (n + 3) / 4 * 4;
  overrun_kernel<<<static_cast<unsigned>((rounded + 255) / 256), 256, 0, s>>>(x, y, rounded);
  TUT_CHECK_LAUNCH("overrun_kernel");
}

}  // namespace ch01::wrong
