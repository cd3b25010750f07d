// v1_grid_stride: a fixed grid of 1024 blocks, each thread looping with stride gridDim * blockDim.
//
// What changed: the grid no longer grows with n; each thread handles many elements. The loop
// gives the compiler something to work with: for float it unrolls the loop four times and issues
// the four loads before the first store, so a thread has 16 bytes in flight instead of 4 (the
// SASS test checks this). For half it does not unroll: two 2-byte loads per iteration, as in v0.
//
// What limits it: 1024 blocks of 256 threads are one wave on a 132-SM GPU (8 blocks fit per SM),
// and every block runs until the end of the kernel. Each SM has a fixed share of the work, SMs
// do not all get the same bandwidth, and the ones that finish early sit idle while the last ones
// finish: the profile's "SM balance" (the least busy SM's active cycles over the busiest's) is
// well under 1. v2 fixes this with many short blocks.
#pragma once

#include "tut/check.hpp"

#include <algorithm>
#include <cstdint>

namespace ch01 {

inline constexpr std::int64_t kGridStrideBlocks = 1024;

template <class Op, class R, class... In>
__global__ void v1_grid_stride_kernel(Op op, std::int64_t n, R* __restrict__ out, const In* __restrict__... in) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    out[i] = op(in[i]...);
}

template <class Op, class R, class... In>
void v1_grid_stride(cudaStream_t stream, std::int64_t n, R* out, const In*... in) {
  if (n == 0) return;
  constexpr int block = 256;
  const std::int64_t grid = std::min(kGridStrideBlocks, (n + block - 1) / block);
  v1_grid_stride_kernel<Op><<<static_cast<unsigned>(grid), block, 0, stream>>>(Op{}, n, out, in...);
  TUT_CHECK_LAUNCH("v1_grid_stride_kernel");
}

}  // namespace ch01
