// bwd v3_from_bitmask_vectorized: one 16-byte pack of dy per thread (4 floats, 8 halves) and the
// kPer bits it needs from one mask word; one pack per thread, one tile per block, no loop
// (chapter 01's v4_tiles shape).
//
// What changed since v2: 16 bytes of dy in flight per thread instead of 4, a quarter (float) or an
// eighth (half) of the load and store instructions, and 32 / kPer lanes share each word (a warp's
// word loads cover kPer consecutive words: one 16- or 32-byte request). Prediction: the bitmask
// floor's 8.125 bytes per element at the copy ceiling, so about 8.125 / 12 = 0.68 of bwd v0's
// time, under the 0.70 target, if this kernel reaches the ceiling as well as v0's does.
// Any n: the n % kPer elements after the last whole pack are done by the first threads, reading
// their bits one at a time. Any alignment: packs need dy and dx 16-byte aligned; otherwise the
// launcher runs v2. The word array is read with 4-byte loads, so its own offset never matters.
// SASS: LDG.E.128 and STG.E.128 for dy and dx, a 32-bit LDG for the word.
#pragma once

#include "kernels/bwd_v2_from_bitmask.cuh"
#include "kernels/ops.cuh"
#include "tut/check.hpp"
#include "tut/elementwise.cuh"

namespace ch04 {

template <int kBlock, class T>
__global__ void __launch_bounds__(kBlock)
    bwd_v3_from_bitmask_vectorized_kernel(std::int64_t n_pack, const T* __restrict__ dy, const Word* __restrict__ mask,
                                          T* __restrict__ dx, std::int64_t tail_first, std::int64_t n) {
  constexpr int kPer = 16 / static_cast<int>(sizeof(T));
  using Pack = tut::ew::Packed<T, kPer>;
  const std::int64_t p = blockIdx.x * static_cast<std::int64_t>(kBlock) + threadIdx.x;
  if (p < n_pack) {
    const std::int64_t first = p * kPer;  // a multiple of kPer, so its kPer bits sit in one word
    const Pack g = *reinterpret_cast<const Pack*>(dy + first);
    const Word bits = mask[tut::bitmask::word_of(first)] >> tut::bitmask::bit_of(first);
    Pack out;
#pragma unroll
    for (int k = 0; k < kPer; ++k) out.elem[k] = masked_grad(g.elem[k], (bits >> k) & 1u);
    *reinterpret_cast<Pack*>(dx + first) = out;
  }
  const std::int64_t i = tail_first + p;  // fewer than kPer elements past the last pack
  if (p < kPer && i < n) dx[i] = masked_grad(dy[i], tut::bitmask::test(mask, i));
}

template <class T>
void bwd_v3_from_bitmask_vectorized(cudaStream_t s, const BackwardArgs<T>& a) {
  check_n(a.n, "bwd_v3_from_bitmask_vectorized");
  if (a.n == 0) return;
  constexpr int kPer = 16 / static_cast<int>(sizeof(T));
  if (!tut::ew::all_aligned<kPer>(a.dy, static_cast<const T*>(a.dx))) return bwd_v2_from_bitmask<T>(s, a);
  constexpr int kBlock = 256;
  const std::int64_t n_pack = a.n / kPer;
  const std::int64_t blocks = (n_pack + kBlock - 1) / kBlock;
  bwd_v3_from_bitmask_vectorized_kernel<kBlock, T>
      <<<grid_of(blocks, "bwd_v3_from_bitmask_vectorized"), kBlock, 0, s>>>(n_pack, a.dy, a.mask, a.dx,
                                                                               n_pack * kPer, a.n);
  TUT_CHECK_LAUNCH("bwd_v3_from_bitmask_vectorized_kernel");
}

}  // namespace ch04
