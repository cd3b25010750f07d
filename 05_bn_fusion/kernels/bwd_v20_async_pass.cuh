// bwd v20_async_pass: v19's sums, then a dx pass whose warps stay resident and keep several chunks
// of dy, x and the mask in flight through shared memory (cp.async), not in registers.
//
// Why. In bwd v19 at 64x64x112x112 NHWC on the H200 (results/NVIDIA_H200.ncu_bwd_v19.csv), the
// half dx pass keeps DRAM 71.0 % busy where the float one keeps it 89.3 % busy. Its warps wait for
// a load: of its 10,626 warp samples (results/NVIDIA_H200.stall_sites_bwd_v19.csv) 5,918 are a
// long scoreboard, 2,808 of them at the first use of the mask word a warp loaded before the
// dependent launch's wait and 1,659 at the first use of its dy. Each warp loads two chunks (64
// bytes a thread), waits, computes, stores and ends; at 76 registers 3 blocks fit on an SM: about
// 48 KB in flight per SM. The trial of other settings (results/NVIDIA_H200.bwd_v19_cases.json:
// registers capped for 4 blocks, or 3 and 4 chunks a warp) took the half backward to 0.937-0.970
// of v17's time at that shape, still behind cuDNN's fused one (0.898).
//
// How. The pass's grid is kV20Blocks blocks per SM (or fewer, where there are fewer chunks). Warp
// w of W takes chunks C - 1 - w, C - 1 - w - W, ... (back to front, as v17). Each thread keeps a
// ring of kV20Stages stages in shared memory, each its 16-byte pack of dy, its pack of x and its
// mask word, copied by cp.async (16 + 16 + 4 bytes): before the dependent launch's wait it fills
// every stage; then, chunk after chunk, it waits for the oldest stage, computes dx from it and
// refills that stage with the chunk kV20Stages further on. Only the thread that copied a stage
// reads it: no barrier. In NHWC, where a chunk's 32 packs cover whole rows of C (32 V a multiple
// of C: C = 64 in half), a lane's channels are the same in every chunk, so its mean, A, B and K
// are loaded once, not once a chunk. Where dy, x or dx are not 16-byte aligned, v17's pass.
// Bytes: as v17 (dy, x and the mask twice, the start of the second read from the L2).
// Prediction (before any run): 4 stages and 4 blocks per SM, 128 KB of dy and x in flight per SM
// against about 48 KB: the half pass at 64x64x112x112 NHWC near the float pass's 89 % of DRAM,
// about 72 us against 88 us; its long-scoreboard samples at the first use of a chunk mostly
// gone; the half backward at or under cuDNN's fused time. The float pass unchanged (at 89 %).
//
// Measured on the H200 (results/NVIDIA_H200.ncu_bwd_v20.csv, stall_sites_bwd_v20.csv,
// bwd_v20_cases.*, bwd_v20_race.*; README "A resident pass"): the half pass 75.0 us against v19's
// 88.9, DRAM 82.3 % busy against 70.3 %, L1 30.2 % against 75.2 %: in part. The half backward at
// 64x64x112x112 NHWC 0.916 of v17's time and 1.028 of cuDNN's fused one (0.888 at 128x256x28x28,
// 0.751 at 16x32x112x112, 1.074 at 128x64x56x56). In float the prediction is wrong: the pass takes
// 149.0 us against 140.1, its warps held by the memory-instruction queue 38.5 % of their cycles,
// and the backward 1.040 to 1.069 of v17's time at the large shapes; in NCHW 1.062 (half) and 1.073
// (float). v20 is the backward for half NHWC.
#pragma once

#include "kernels/bwd_v19_warp_columns.cuh"

#include <cuda_pipeline.h>

namespace ch05 {

inline constexpr int kV20Stages = 4;  // chunks a warp has in flight
inline constexpr int kV20Blocks = 4;  // blocks of the pass per SM

template <int V, class T, bool kAdd, int kStages>
__global__ void __launch_bounds__(kBlock, kV20Blocks)
    bwd_v20_pass_kernel(BwdArgs<T> a, ChannelParams p, ChannelMap map, std::int64_t chunks, std::int64_t) {
  static_assert(V * sizeof(T) == 16, "a stage holds 16-byte packs");
  __shared__ uint4 s_dy[kStages][kBlock], s_x[kStages][kBlock];
  __shared__ Word s_bits[kStages][kBlock];
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
      __pipeline_memcpy_async(&s_dy[s][t], a.dy + e0, sizeof(uint4));
      __pipeline_memcpy_async(&s_x[s][t], a.x + e0, sizeof(uint4));
      __pipeline_memcpy_async(&s_bits[s][t], a.mask + (e0 >> 5), sizeof(Word));
    }
    __pipeline_commit();
  };
  // 1. Before the wait: dy, x and the mask, which the sums kernel does not write.
#pragma unroll
  for (int j = 0; j < kStages; ++j) issue(j);
  pdl_wait();  // the sums kernel has ended; the channels' coefficients are visible
  // 2. A lane's channels are the same in every chunk where 32 V is a multiple of the row (C).
  float mean[V], A[V], B[V], K[V];
  const bool fixed = map.inner.d == 1 && (32 * V) % map.channels.d == 0;
  const auto params_at = [&](std::int64_t e0) {
    int c;
    std::int64_t pos;
    map.locate(e0, c, pos);
    bwd_params_of_pack<V>(p, map, c, pos, mean, A, B, K);
  };
  if (fixed) params_at(lane * V);
  // 3. Chunk after chunk: the oldest stage, then its refill.
  for (std::int64_t j = 0; chunk(j) >= 0; ++j) {
    __pipeline_wait_prior(kStages - 1);  // this thread's copies of chunk j have landed
    const std::int64_t e0 = chunk(j) * (32 * V) + lane * V;
    const int s = static_cast<int>(j % kStages);
    const uint4 qg = s_dy[s][t], qx = s_x[s][t];
    const Word bits = s_bits[s][t] >> (e0 & 31);
    if (!fixed) params_at(e0);
    bwd_finish_pack<V, T, kAdd>(a, e0, qg, qx, bits, mean, A, B, K);
    issue(j + kStages);  // stage s is read: refill it
  }
  if (w == 0) bwd_apply_tail<T, kAdd>(a, p, map, chunks * 32 * V, lane);
}

// bwd v19's launches with this pass (v17's where the packs are single elements).
template <class T, bool kAdd>
void bwd_v20_async_pass(cudaStream_t st, const BwdArgs<T>& a, void* ws) {
  check_shape(a.s, "bwd_v20_async_pass");
  constexpr int V = kPack<T>;
  with_packs<V>(bwd_stats_packs_ok<T>(a), bwd_apply_packs_ok<T, kAdd>(a), [&](auto vs, auto va) {
    constexpr int Vs = decltype(vs)::value, Va = decltype(va)::value;
    if constexpr (Va == 1) {
      bwd_v19_launch<Vs, Va, T, kAdd>(st, a, ws, "bwd_v20_async_pass");
    } else {
      v17_launch<T, kOwnBlocksBwd, Vs, Va, 1, GradSums>(st, a, ws, &bwd_v19_stats_kernel<Vs, T>,
                                                        &bwd_v20_pass_kernel<Va, T, kAdd, kV20Stages>, "bwd_v20_async_pass",
                                                        std::int64_t{device_limits().sm_count} * kV20Blocks);
    }
  });
}

template <class T, bool kAdd>
std::vector<const void*> bwd_v20_kernels() {
  constexpr int V = kPack<T>;
  return {TUT_KERNEL((bwd_v19_stats_kernel<V, T>)), TUT_KERNEL((bwd_v20_pass_kernel<V, T, kAdd, kV20Stages>))};
}

}  // namespace ch05
