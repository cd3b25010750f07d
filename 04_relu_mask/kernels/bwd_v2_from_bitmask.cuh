// bwd v2_from_bitmask: dx = bit ? dy : 0, reading dy and the bitmask words. One element per
// thread in a grid-stride loop over chapter 01's waves grid.
//
// What changed since v1: 1/8 byte of mask per element instead of 1, so 8.125 bytes per element
// (float): the floor. Every lane of a warp reads the same word (elements base .. base + 31 share
// word base / 32): one 4-byte request that the L1 broadcasts to all 32 lanes, beside the warp's
// coalesced 128-byte request for dy. Prediction: like chapter 01's v2_waves, one 4-byte dy load
// per thread in flight, so below the copy ceiling by about what v2_waves was (0.93 of copy on the
// H200 there), and its time about 8.125 / 12 / 0.93 = 0.73 of bwd v0's: short of the 0.70 target.
// That is why there is a v3.
// SASS: LDG.E for dy and for the word, STG.E for dx; no 128-bit accesses.
#pragma once

#include "kernels/ops.cuh"
#include "tut/check.hpp"
#include "tut/elementwise.cuh"

namespace ch04 {

template <int kBlock, class T>
__global__ void __launch_bounds__(kBlock)
    bwd_v2_from_bitmask_kernel(std::int64_t n, const T* __restrict__ dy, const Word* __restrict__ mask,
                               T* __restrict__ dx) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * kBlock;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(kBlock) + threadIdx.x; i < n; i += stride)
    dx[i] = masked_grad(dy[i], tut::bitmask::test(mask, i));
}

template <class T>
void bwd_v2_from_bitmask(cudaStream_t s, const BackwardArgs<T>& a) {
  check_n(a.n, "bwd_v2_from_bitmask");
  if (a.n == 0) return;
  constexpr int kBlock = 256;
  std::int64_t blocks = 0;
  TUT_CUDA(tut::ew::waves_grid_size(a.n, kBlock, &blocks));
  bwd_v2_from_bitmask_kernel<kBlock, T><<<grid_of(blocks, "bwd_v2_from_bitmask"), kBlock, 0, s>>>(a.n, a.dy, a.mask,
                                                                                                  a.dx);
  TUT_CHECK_LAUNCH("bwd_v2_from_bitmask_kernel");
}

}  // namespace ch04
