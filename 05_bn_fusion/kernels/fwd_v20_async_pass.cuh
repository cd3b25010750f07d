// fwd v20_async_pass: v19's statistics, then the pass of bwd v20: resident warps that keep several
// chunks of x (and r) in flight through shared memory (cp.async), not in registers.
//
// Why. In v19 at 64x64x112x112 NHWC on the H200 (results/NVIDIA_H200.ncu_v19.csv), the half pass
// (v17's) takes 60.4 us with DRAM 64.1 % busy, where the float pass keeps it 78.5 % busy; 48.5 % of
// its warps' cycles wait for a load (long scoreboard, v17's row of that file). Each warp loads its 4
// chunks (64 bytes a thread), waits, computes, stores and ends. The backward's dx pass had the same
// shape and the same gap, and bwd v20's ring took it from 70.3 % to 82.3 % of DRAM
// (results/NVIDIA_H200.ncu_bwd_v20.csv).
//
// How. bwd v20's walk: kV20Blocks blocks per SM, warp w of W on chunks C - 1 - w,
// C - 1 - w - W, ..., each thread with a ring of stages in shared memory holding its 16-byte pack
// of x (and of r in the Add form), filled by cp.async before the dependent launch's wait and
// refilled as each is used. 128 bytes a thread in flight: 8 stages of x, or 4 of x and r. Where a
// chunk's 32 packs cover whole rows of C (NHWC, 32 V a multiple of C), a lane's mean, scale and
// shift are loaded once. The arithmetic, y and the mask bytes are v17's (fwd_finish_pack). Where x,
// r or y is not 16-byte aligned, v19's pass.
// Bytes: as v17 (x twice, the start of the second read from the L2).
// Prediction (before any run): the half pass at 64x64x112x112 NHWC near the backward's 82 % of
// DRAM, about 47 us against 60.4, and the half forward under cuDNN's fused one there (v19: 1.086
// of its time); the float pass, at 78.5 % already, about the same.
//
// Measured on the H200 (results/NVIDIA_H200.ncu_fwd_v20.csv, stall_sites_fwd_v20.csv,
// fwd_v20_cases.*, fwd_v20_race.*; README "The forward's pass, resident too"): the half pass 54.5 us
// against v19's 60.6, DRAM 71.8 % busy against 64.0 %, in part; its warps now wait after the DEPBAR,
// at the stage's shared-memory read and for the memory-instruction queue. The half forward at
// 64x64x112x112 NHWC 0.899 of v17's time and 1.001 of cuDNN's fused one (0.708 at 128x256x28x28,
// 1.066 at 128x64x56x56), the half Add forward 0.872 of cuDNN's there. In float the prediction is
// wrong: the pass takes 109.4 us against 103.1, and the forward 1.011 to 1.075 of v17's time at the
// large NHWC shapes; in NCHW 1.072 (half) and 1.100 (float). v20 is the forward for half NHWC.
#pragma once

#include "kernels/bwd_v20_async_pass.cuh"  // kV20Blocks, <cuda_pipeline.h>
#include "kernels/fwd_v19_warp_columns.cuh"

namespace ch05 {

// Stages of the forward's ring: 128 bytes a thread in flight, as bwd v20's 4 stages of dy, x and
// the mask (144 bytes).
template <bool kAdd>
inline constexpr int kV20FwdStages = kAdd ? 4 : 8;

// The walk is bwd v20's pass kernel's, written out again as there: the same loop through a shared
// helper compiled to other SASS for the backward, whose measured form stays.
template <int V, class T, bool kAdd, int kStages>
__global__ void __launch_bounds__(kBlock, kV20Blocks)
    fwd_v20_pass_kernel(FwdArgs<T> a, ChannelParams p, ChannelMap map, std::int64_t chunks, std::int64_t) {
  static_assert(V * sizeof(T) == 16, "a stage holds 16-byte packs");
  __shared__ uint4 s_x[kStages][kBlock], s_r[kAdd ? kStages : 1][kAdd ? kBlock : 1];
  const int t = static_cast<int>(threadIdx.x), lane = t % 32;
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * kWarps;
  const std::int64_t w = static_cast<std::int64_t>(blockIdx.x) * kWarps + t / 32;
  const auto chunk = [&](std::int64_t j) { return chunks - 1 - w - j * warps; };  // the warp's j-th
  // The j-th chunk's copies into stage j % kStages, as one group (empty past the warp's last).
  const auto issue = [&](std::int64_t j) {
    const std::int64_t k = chunk(j);
    if (k >= 0) {
      const std::int64_t e0 = k * (32 * V) + lane * V;
      const int s = static_cast<int>(j % kStages);
      __pipeline_memcpy_async(&s_x[s][t], a.x + e0, sizeof(uint4));
      if constexpr (kAdd) __pipeline_memcpy_async(&s_r[s][t], a.r + e0, sizeof(uint4));
    }
    __pipeline_commit();
  };
  // 1. Before the wait: x and r, which the statistics kernel does not write.
#pragma unroll
  for (int j = 0; j < kStages; ++j) issue(j);
  pdl_wait();  // the statistics kernel has ended; the channels' parameters are visible
  // 2. A lane's channels are the same in every chunk where 32 V is a multiple of the row (C).
  float mean[V], scale[V], shift[V];
  const bool fixed = map.inner.d == 1 && (32 * V) % map.channels.d == 0;
  const auto params_at = [&](std::int64_t e0) {
    int c;
    std::int64_t pos;
    map.locate(e0, c, pos);
    params_of_pack<V>(p, map, c, pos, mean, scale, shift);
  };
  if (fixed) params_at(lane * V);
  // 3. Chunk after chunk: the oldest stage, then its refill.
  for (std::int64_t j = 0; chunk(j) >= 0; ++j) {
    __pipeline_wait_prior(kStages - 1);  // this thread's copies of chunk j have landed
    const std::int64_t k = chunk(j), e0 = k * (32 * V) + lane * V;
    const int s = static_cast<int>(j % kStages);
    float xv[V], rv[V];
    unpack<V, T>(s_x[s][t], xv);
    if constexpr (kAdd) unpack<V, T>(s_r[s][t], rv);
    if (!fixed) params_at(e0);
    fwd_finish_pack<V, T, kAdd, true>(a, k, e0, lane, xv, rv, mean, scale, shift);
    issue(j + kStages);  // stage s is read: refill it
  }
  if (w == 0) fwd_apply_tail<T, kAdd>(a, p, map, chunks * 32 * V, lane);
}

template <class T, bool kAdd>
void fwd_v20_async_pass(cudaStream_t st, const FwdArgs<T>& a, void* ws) {
  check_shape(a.s, "fwd_v20_async_pass");
  constexpr int V = kPack<T>;
  with_packs<V>(stats_packs_ok<T>(a.s, a.x), fwd_apply_packs_ok<T, kAdd>(a), [&](auto vs, auto va) {
    constexpr int Vs = decltype(vs)::value, Va = decltype(va)::value;
    if constexpr (Va == 1) {
      fwd_v19_launch<Vs, Va, T, kAdd>(st, a, ws, "fwd_v20_async_pass");
    } else {
      v17_launch<T, kV17Blocks, Vs, Va, 1, Welford>(st, a, ws, &fwd_v19_stats_kernel<Vs, T>,
                                                   &fwd_v20_pass_kernel<Va, T, kAdd, kV20FwdStages<kAdd>>,
                                                   "fwd_v20_async_pass",
                                                   std::int64_t{device_limits().sm_count} * kV20Blocks);
    }
  });
}

template <class T, bool kAdd>
std::vector<const void*> fwd_v20_kernels() {
  constexpr int V = kPack<T>;
  return {TUT_KERNEL((fwd_v19_stats_kernel<V, T>)), TUT_KERNEL((fwd_v20_pass_kernel<V, T, kAdd, kV20FwdStages<kAdd>>))};
}

}  // namespace ch05
