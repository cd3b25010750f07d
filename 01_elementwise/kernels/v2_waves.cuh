// v2_waves: the grid sized from the device, and shared values computed on the host.
//
// What changed: blocks = min(ceil(n / 256), SMs x (max threads per SM / 256) x 32 waves), the
// rule OneFlow uses. Enough resident threads fill every SM many times over, so each SM always
// has loads in flight, and a small n still gets only the blocks it needs. The block size is a
// template constant and the stride is computed once on the host and passed in, so no thread
// recomputes gridDim.x * blockDim.x.
//
// Why it helps: more bytes in flight per SM (Little's law: bandwidth x latency must be covered
// by outstanding loads) than v1's single wave. Each access is still 4 or 2 bytes, which v3 fixes.
#pragma once

#include "kernels/elementwise.cuh"
#include "tut/check.hpp"

#include <cstdint>

namespace ch01 {

template <int kBlock, class Op, class R, class... In>
__global__ void __launch_bounds__(kBlock)
    v2_waves_kernel(Op op, std::int64_t n, std::int64_t stride, R* __restrict__ out, const In* __restrict__... in) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(kBlock) + threadIdx.x; i < n; i += stride)
    out[i] = op(in[i]...);
}

template <class Op, class R, class... In>
void v2_waves(cudaStream_t stream, std::int64_t n, R* out, const In*... in) {
  if (n == 0) return;
  constexpr int block = ew::kBlockSize;
  std::int64_t grid = 0;
  TUT_CUDA(ew::waves_grid_size(n, block, &grid));
  v2_waves_kernel<block, Op><<<static_cast<unsigned>(grid), block, 0, stream>>>(Op{}, n, grid * block, out, in...);
  TUT_CHECK_LAUNCH("v2_waves_kernel");
}

}  // namespace ch01
