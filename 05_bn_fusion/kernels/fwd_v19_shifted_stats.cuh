// fwd v19_shifted_stats: v17 with its statistics summed as deviations from a running shift, folded
// into Welford statistics every few values, instead of a Welford update for every value.
//
// Why. On the H200, at 64x64x112x112 NHWC, v17's statistics kernel read 103 MB of half x in 41.4 us
// (DRAM 52.9 % busy) and v18's trial, its loads issued a batch ahead, changed nothing (README, "A
// trial that lost"). The phase timeline of the same statistics in v4 (results/NVIDIA_H200.
// blocks_phases.txt, half, 3 blocks an SM, 4 packs in flight) ends the read of x 32 to 35 us after
// the start: 3.0 TB/s, where float's reads 4.1 TB/s (results/NVIDIA_H200.phases.txt). A thread of
// half adds 8 values a 16-byte pack against float's 4, and each Welford update is a reciprocal a
// pack and four dependent operations a value. At the read-only stream's rate an SM sub-partition
// has to take in 512 bytes (one warp's pack) every 120 cycles or so, and in half that pack is 8 x 4
// operations and 8 conversions, besides the reciprocal and the loads' address arithmetic.
//
// How. ShiftedStreams (below): a value enters as d = x - K, with K the stream's mean so far: s1 +=
// d, s2 += d * d, three operations a value, no reciprocal. The sums fold into the stream's Welford
// statistics after the first value and then every 32 (ShiftedStreams says what that costs in
// precision), so the partials, the merge and the pass are v17's. The statistics are not v17's
// bits: they are rounded differently.
//
// Prediction (before any run): fewer instructions in the half statistics' loop, and that kernel at
// about float's DRAM rate, about 30 us instead of 41; the half forward at 64x64x112x112 NHWC level
// with cuDNN's fused one. In float the statistics read near the stream's rate already: little change.
#pragma once

#include "kernels/fwd_v17_split_pass.cuh"

namespace ch05 {

// A thread's V streams as sums of deviations. WelfordStreams' add costs a reciprocal a pack and four
// dependent operations a value. Here a value enters as d = x - K: s1 += d, s2 += d * d, three
// operations and no reciprocal. K is the stream's mean so far: the sums fold into the stream's
// (n, mean, M2) by Chan's merge after the first value and then every kFold, and K moves to the
// new mean. Precision: the fold's M2 is s2 - s1^2 / n_b, in which n_b (mean_b - K)^2 cancels; K
// is the mean of the n_a values before, so that term is at most (1 + n_b / n_a) times the merged
// M2: at most log2(33), about 5 of float's 24 bits, in the second fold (n_a = 1), a bit at most
// from the third on. The first fold holds one value, with K = 0: s1 = x, s2 = x * x rounded, and
// s1 * s1 rounded is the same number, so its M2 is exactly 0 (the product is rounded on its own,
// never contracted into an fma).
inline constexpr int kShiftedFold = 32;

template <int kV, class T, int kFold = kShiftedFold>
struct ShiftedStreams {
  static constexpr int V = kV;
  using Stat = Welford;
  using Data = uint4;
  const T* x;
  float cnt = 0, mean[V] = {}, m2[V] = {};  // the folded values; mean is the shift K
  float s1[V] = {}, s2[V] = {};             // the values since, as sums of x - K and (x - K)^2
  int n = 0, next_fold = 1;                 // how many since; the fold comes when n reaches next_fold

  __device__ explicit ShiftedStreams(const T* px) : x(px) {}
  __device__ __forceinline__ Data load(std::int64_t e0) const { return load_raw<V, T>(x + e0); }
  __device__ __forceinline__ void add(const Data& q) {
    float v[V];
    unpack<V, T>(q, v);
#pragma unroll
    for (int k = 0; k < V; ++k) {
      const float dev = v[k] - mean[k];
      s1[k] += dev;
      s2[k] = fmaf(dev, dev, s2[k]);
    }
    if (++n == next_fold) fold();
  }
  // Stream k's statistics with the n values since the last fold merged in (Chan's merge; wb =
  // n / (cnt + n), rb = 1 / n, the same for every stream).
  __device__ __forceinline__ Welford folded(int k, float wb, float rb) const {
    const float m2_b = fmaxf(0.0f, s2[k] - __fmul_rn(s1[k], __fmul_rn(s1[k], rb)));
    const float dm = s1[k] * rb;  // the new values' mean less K, the old mean
    return {cnt + static_cast<float>(n), fmaf(dm, wb, mean[k]), m2[k] + m2_b + dm * dm * cnt * wb};
  }
  __device__ void fold() {
    const float nb = static_cast<float>(n), wb = nb / (cnt + nb), rb = 1.0f / nb;
#pragma unroll
    for (int k = 0; k < V; ++k) {
      const Welford w = folded(k, wb, rb);
      mean[k] = w.mean;
      m2[k] = w.m2;
      s1[k] = s2[k] = 0.0f;
    }
    cnt += nb;
    n = 0;
    next_fold = kFold;
  }
  __device__ __forceinline__ Welford stream(int k) const {
    if (n == 0) return {cnt, mean[k], m2[k]};
    const float nb = static_cast<float>(n);
    return folded(k, nb / (cnt + nb), 1.0f / nb);
  }
};

template <int V, class T, int kBlocks = kV17Blocks, int kU = (V == 1 ? kUnrollFor<1> : kV17Unroll)>
__global__ void __launch_bounds__(kBlock, kBlocks)
    fwd_v19_stats_kernel(FwdArgs<T> a, ChannelParams p, Welford* partials, V3Plan plan) {
  __shared__ Welford smem[kBlock * V];
  v17_stats<V, T, kBlocks, kU, ShiftedStreams<V, T>>(a, p, partials, plan, smem);
}

template <class T, bool kAdd>
void fwd_v19_shifted_stats(cudaStream_t st, const FwdArgs<T>& a, void* ws) {
  check_shape(a.s, "fwd_v19_shifted_stats");
  constexpr int V = kPack<T>;
  with_packs<V>(stats_packs_ok<T>(a.s, a.x), fwd_apply_packs_ok<T, kAdd>(a), [&](auto vs, auto va) {
    constexpr int Vs = decltype(vs)::value, Va = decltype(va)::value, kUs = Vs == 1 ? kUnrollFor<1> : kV17Unroll;
    v17_launch<T, kV17Blocks, Vs, Va, kV17Chunks, Welford>(st, a, ws, &fwd_v19_stats_kernel<Vs, T, kV17Blocks, kUs>,
                                                          &fwd_v17_pass_kernel<Va, T, kAdd, kV17Chunks, Va != 1>,
                                                          "fwd_v19_shifted_stats");
  });
}

template <class T, bool kAdd>
std::vector<const void*> fwd_v19_kernels() {
  constexpr int V = kPack<T>;
  return {TUT_KERNEL((fwd_v19_stats_kernel<V, T>)), TUT_KERNEL((fwd_v17_pass_kernel<V, T, kAdd, kV17Chunks, true>))};
}

}  // namespace ch05
