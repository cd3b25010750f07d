// v1_grid_stride: a fixed grid of 1024 blocks, each thread looping with stride gridDim * blockDim.
//
// What changed: the grid no longer grows with n. Each thread handles many elements, so block
// launch and retirement costs are paid 1024 times instead of n/256 times, and any n works with
// the same launch.
//
// Why it may not be faster: a fixed 1024 x 256 threads is a guess. On a GPU with many SMs it is
// about one wave, so each SM has few independent loads in flight and cannot hide DRAM latency;
// on a small GPU it is more than needed. v2 sizes the grid from the device instead.
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
