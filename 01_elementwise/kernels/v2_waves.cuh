// v2_waves: the grid sized from the device, and shared values computed on the host.
//
// What changed: blocks = min(ceil(n / 256), SMs x (max threads per SM / 256) x 32 waves), the
// rule OneFlow uses (tut::ew::waves_grid_size). The loop is v1's; each block now covers a
// thirty-second of v1's share and then retires, and the block scheduler hands the next block to
// whichever SM has room. SMs that get more bandwidth simply run more blocks, so all of them stay
// busy until the end: the profile's "SM balance" rises to about 1. A small n still gets only the
// blocks it needs. The block size is a template constant and the stride is computed once on the
// host, so no thread recomputes what every thread shares.
//
// What it does not change: the loop body. The float loop is unrolled four times, as in v1; the
// half loop is still not unrolled, one 2-byte load per input in flight, which v3 fixes.
#pragma once

#include "tut/check.hpp"
#include "tut/elementwise.cuh"

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
  constexpr int block = tut::ew::kBlockSize;
  std::int64_t grid = 0;
  TUT_CUDA(tut::ew::waves_grid_size(n, block, &grid));
  v2_waves_kernel<block, Op><<<static_cast<unsigned>(grid), block, 0, stream>>>(Op{}, n, grid * block, out, in...);
  TUT_CHECK_LAUNCH("v2_waves_kernel");
}

}  // namespace ch01
