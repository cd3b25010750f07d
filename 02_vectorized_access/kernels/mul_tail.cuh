// What the five half-multiply kernels share: the pack type, the scalar tail, and the launcher.
// Every kernel gets the same grid and the same tail, so only the main loop differs.
#pragma once

#include "tut/elementwise.cuh"
#include "kernels/launch.cuh"

#include <cuda_fp16.h>

#include <cstdint>

namespace ch02 {

inline constexpr int kPack = 8;  // 8 halves = 16 bytes
using Pack = tut::ew::Packed<__half, kPack>;

// The n % 8 elements after the last whole pack, by the first threads.
__device__ __forceinline__ void mul_tail(const __half* x, const __half* y, __half* z, std::int64_t begin,
                                         std::int64_t n, std::int64_t tid, std::int64_t stride) {
  for (std::int64_t i = begin + tid; i < n; i += stride) z[i] = __hmul(x[i], y[i]);
}

using MulKernel = void (*)(const __half*, const __half*, __half*, std::int64_t n_pack, std::int64_t n,
                           std::int64_t stride);

inline void launch_mul(MulKernel kernel, cudaStream_t stream, std::int64_t n, __half* z, const __half* x,
                       const __half* y) {
  if (n == 0) return;
  const std::int64_t n_pack = n / kPack;
  const Grid g = grid_for(n_pack);
  kernel<<<g.blocks, kBlock, 0, stream>>>(x, y, z, n_pack, n, g.stride);
  TUT_CHECK_LAUNCH("half multiply kernel");
}

}  // namespace ch02
