// fwd v2_warp_ballot: the source's third scheme, made correct for any n. One element per thread;
// the warp's 32 "kept" predicates become one word with __ballot_sync, and lane 0 stores it.
//
// What changed since v1: lane t handles element base + t, so every load and store of x and y is
// coalesced again (4 sectors per request for float, 2 for half), and the mask word costs one
// ballot (VOTE.ANY in SASS) and one 4-byte store per warp. Prediction: the floor's bytes at a
// coalesced pattern, one 4-byte load per thread in flight, like chapter 01's v2_waves; expect its
// fraction of copy, a little below because the word stores are separate 4-byte requests.
//
// The multiple-of-32 trap. The source loops `CUDA_1D_KERNEL_LOOP(i, n)` and calls
// `__ballot_sync(__activemask(), x[i] > 0)`; lane 0 stores the result at mask[i / 32]. That is only
// right when
//   - the block size is a multiple of 32, so a warp's lanes hold 32 consecutive indices starting at
//     a multiple of 32 (with 48-thread blocks, warp 1 of block 0 holds elements 32..47 and warp 0 of
//     block 1 holds 48..79: lane 0 of the latter stores bits of elements 48..79 as word 1, and
//     word 1's real bits 0..15 are overwritten);
//   - the grid-stride step is a multiple of 32, for the same reason on every later iteration;
//   - the lanes that vote are the lanes that ought to. __activemask() says which lanes happen to be
//     executing together at that instant; it does not make the warp converge. After the bounds
//     check, or after any earlier divergence, lanes may arrive at the ballot in separate groups
//     (independent thread scheduling, sm_70 on): each group's ballot then sees only its own bits,
//     and only the group holding lane 0 has its word stored.
// Here the loop variable is the warp's first element `base`, the same in all 32 lanes, so the whole
// warp iterates together; lanes past n vote false instead of leaving, so every ballot has all 32
// lanes (mask 0xffffffff, which is a promise that they all arrive) and the last word's padding bits
// are 0. The block size is a template constant checked to be a multiple of 32, and so is the stride.
#pragma once

#include "kernels/ops.cuh"
#include "tut/check.hpp"
#include "tut/elementwise.cuh"

namespace ch04 {

template <int kBlock, class T, bool kAdd>
__global__ void __launch_bounds__(kBlock)
    fwd_v2_warp_ballot_kernel(std::int64_t n, const T* __restrict__ x, const T* __restrict__ r, T* __restrict__ y,
                              Word* __restrict__ mask) {
  static_assert(kBlock % 32 == 0, "a warp must hold 32 consecutive elements starting at a multiple of 32");
  const int lane = static_cast<int>(threadIdx.x % 32);
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * kBlock;  // a multiple of 32
  for (std::int64_t base = blockIdx.x * static_cast<std::int64_t>(kBlock) + threadIdx.x - lane; base < n;
       base += stride) {
    const std::int64_t i = base + lane;
    bool keep = false;
    if (i < n) {
      const T s = preactivation_at<kAdd>(x, r, i);
      y[i] = relu(s);
      keep = kept(s);
    }
    const Word word = __ballot_sync(kFullWarp, keep);  // all 32 lanes are here: `base` is warp-uniform
    if (lane == 0) mask[base / 32] = word;
  }
}

template <class T, bool kAdd>
void fwd_v2_warp_ballot(cudaStream_t s, const ForwardArgs<T>& a) {
  check_n(a.n, "fwd_v2_warp_ballot");
  if (a.n == 0) return;
  constexpr int kBlock = 256;
  std::int64_t blocks = 0;
  TUT_CUDA(tut::ew::waves_grid_size(a.n, kBlock, &blocks));
  fwd_v2_warp_ballot_kernel<kBlock, T, kAdd><<<grid_of(blocks, "fwd_v2_warp_ballot"), kBlock, 0, s>>>(a.n, a.x, a.r,
                                                                                                     a.y, a.mask);
  TUT_CHECK_LAUNCH("fwd_v2_warp_ballot_kernel");
}

}  // namespace ch04
