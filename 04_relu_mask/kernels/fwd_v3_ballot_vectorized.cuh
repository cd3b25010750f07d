// fwd v3_ballot_vectorized: 16-byte packs. Each lane loads one pack of kPer = 16 / sizeof(T)
// consecutive elements (4 floats, 8 halves), so a warp holds 32 * kPer elements, exactly kPer mask
// words. kPer ballots, one per position in the pack, give the warp's bits; lanes 0 .. kPer-1 each
// assemble one word (tut/bitmask.cuh's word_from_ballots: the bits of ballot k are every kPer-th element, so
// they are spread out and interleaved) and store it. The kPer word stores of a warp are
// consecutive: one coalesced 16-byte (float) or 32-byte (half) request.
//
// What changed since v2: one LDG.128 and one STG.128 per lane instead of one 4-byte access, and a
// quarter (float) or an eighth (half) of the word-store requests. Shape: one warp chunk per warp,
// one 4 KiB (float) tile per block of 256 threads, no loop: chapter 01's v4_tiles, the shape that
// reached the copy ceiling there. Prediction: 16 bytes in flight per thread, the floor's bytes
// with every request coalesced; expect the copy ceiling on y and x, i.e. at or near 1.0 of copy.
//
// Any n: the warps whose chunk is whole take the packed path; the one warp whose chunk holds the
// last n % (32 * kPer) elements goes through them 32 at a time with v2's ballot (all 32 lanes
// vote, lanes past n vote false). Any alignment: a pack must be 16-byte aligned, so when x, r or y
// is not, the launcher runs v2 instead (the mask is indexed by element, so its words are the same
// either way; the word array itself only needs 4-byte alignment, which a uint32_t pointer has).
// SASS: LDG.E.128 and STG.E.128, kPer VOTE.ANY in the packed path.
#pragma once

#include "kernels/fwd_v2_warp_ballot.cuh"
#include "kernels/ops.cuh"
#include "tut/check.hpp"
#include "tut/elementwise.cuh"

namespace ch04 {

template <class T>
constexpr int kPackOf = 16 / static_cast<int>(sizeof(T));

template <int kBlock, class T, bool kAdd>
__global__ void __launch_bounds__(kBlock)
    fwd_v3_ballot_vectorized_kernel(std::int64_t n, const T* __restrict__ x, const T* __restrict__ r,
                                    T* __restrict__ y, Word* __restrict__ mask) {
  static_assert(kBlock % 32 == 0, "whole warps");
  constexpr int kPer = kPackOf<T>;
  constexpr std::int64_t kChunk = 32 * kPer;  // elements per warp; kPer words
  using Pack = tut::ew::Packed<T, kPer>;
  const int lane = static_cast<int>(threadIdx.x % 32);
  const std::int64_t warp = (blockIdx.x * static_cast<std::int64_t>(kBlock) + threadIdx.x) / 32;
  const std::int64_t full = n / kChunk;
  if (warp < full) {
    const std::int64_t first = warp * kChunk + lane * kPer;
    const Pack xs = *reinterpret_cast<const Pack*>(x + first);
    Pack rs = xs;  // unused for ReLU
    if constexpr (kAdd) rs = *reinterpret_cast<const Pack*>(r + first);
    Pack ys;
    Word ballots[kPer];
#pragma unroll
    for (int k = 0; k < kPer; ++k) {
      const T s = preactivation<kAdd>(xs.elem[k], rs.elem[k]);
      ys.elem[k] = relu(s);
      ballots[k] = __ballot_sync(kFullWarp, kept(s));
    }
    *reinterpret_cast<Pack*>(y + first) = ys;
    if (lane < kPer) mask[warp * kPer + lane] = tut::bitmask::word_from_ballots<kPer>(ballots, lane);
  } else if (warp == full) {
    // The partial chunk, if any: fewer than kChunk elements, starting at a word boundary.
    for (std::int64_t base = full * kChunk; base < n; base += 32) {
      const std::int64_t i = base + lane;
      bool keep = false;
      if (i < n) {
        const T s = preactivation_at<kAdd>(x, r, i);
        y[i] = relu(s);
        keep = kept(s);
      }
      const Word word = __ballot_sync(kFullWarp, keep);
      if (lane == 0) mask[base / 32] = word;
    }
  }
}

template <class T, bool kAdd>
void fwd_v3_ballot_vectorized(cudaStream_t s, const ForwardArgs<T>& a) {
  check_n(a.n, "fwd_v3_ballot_vectorized");
  if (a.n == 0) return;
  constexpr int kPer = kPackOf<T>;
  const bool aligned = kAdd ? tut::ew::all_aligned<kPer>(a.x, a.r, a.y) : tut::ew::all_aligned<kPer>(a.x, a.y);
  if (!aligned) return fwd_v2_warp_ballot<T, kAdd>(s, a);
  constexpr int kBlock = 256;
  constexpr std::int64_t kChunk = 32 * kPer;
  const std::int64_t warps = (a.n + kChunk - 1) / kChunk;  // the whole chunks, and the partial one if any
  const std::int64_t blocks = (warps + kBlock / 32 - 1) / (kBlock / 32);
  fwd_v3_ballot_vectorized_kernel<kBlock, T, kAdd><<<grid_of(blocks, "fwd_v3_ballot_vectorized"), kBlock, 0, s>>>(
      a.n, a.x, a.r, a.y, a.mask);
  TUT_CHECK_LAUNCH("fwd_v3_ballot_vectorized_kernel");
}

}  // namespace ch04
