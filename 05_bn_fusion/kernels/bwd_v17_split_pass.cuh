// bwd v17_split_pass: the forward v17's split for the backward. bwd v4's sums (dy, x and the mask
// read front to back) and its merge stay one cooperative kernel; the dx pass becomes a plain grid of
// many small blocks, back to front, started by programmatic dependent launch, each warp's dy, x and
// mask words loaded before it waits for the channels' coefficients.
//
// What changed since v4. bwd v4's dx pass (phase 3) walks each thread's own phase-1 packs, a share
// fixed before the launch, as the forward v4's pass does; on the H200 the phase timeline of bwd v4
// at 64x64x112x112 NHWC float, 3 blocks per SM as it runs (results/NVIDIA_H200.phases.txt), has the
// blocks leave the second grid barrier within 0.3 us of one another (101.8 to 102.1 us from the
// start) and end 9.7 us apart (237.1 to 246.8 us). Here, as in fwd v17 (kernels/fwd_v17_split_pass.cuh):
//   The sums: bwd v4's phase 1 (bwd_own_stats) and merge (own_merge, finish_backward_channel) in
//   v4's grid, 3 blocks per SM; after the grid barrier every block lets the dx pass launch.
//   The dx pass: warp w of the grid takes kV17BwdChunks chunks of 32 packs from the back of x and
//   dy (the last the sums read, still in the L2), loads dy, x and each pack's mask bits, waits
//   (griddepcontrol.wait), then computes dx (and dr) as v4's pass does, stored evict-first.
// Bytes: as v4 (dy, x and the mask twice, the start of the second read from the L2).
// Prediction: the dx pass's end spread shrinks from 9.7 us to a block's time. v4 already runs at
// 0.98 of the copy ceiling on the two-pass model in float at 64x64x112x112 (results/NVIDIA_H200.json),
// so there the gain is small; in half (0.85) it is where cuDNN's fused backward leads.
// Evidence: the benchmark on the suite's shapes against v3 to v5 and cuDNN in one run.
#pragma once

#include "kernels/bwd_v4_own_packs.cuh"
#include "kernels/fwd_v17_split_pass.cuh"  // the dependent launch's helpers, fwd v17's plan

namespace ch05 {

// Chunks of 32 packs a warp of the dx pass loads before it computes the first: two packs of dy and
// two of x, 64 bytes a thread, as bwd v4's pass.
inline constexpr int kV17BwdChunks = 2;

// The sums: bwd v4's phase 1 and its merge, in bwd v4's grid. kWarpCols: the NHWC columns merged
// with fewer barriers (v19).
template <int V, class T, bool kWarpCols>
__device__ __forceinline__ void bwd_v17_stats(const BwdArgs<T>& a, const ChannelParams& p, GradSums* partials,
                                              const V3Plan& plan, GradSums* smem) {
  const NoCache<kOwnBlocksBwd> cache(nullptr, 0);
  cg::grid_group grid = cg::this_grid();
  bwd_own_stats<V, T, NoCache<kOwnBlocksBwd>, kWarpCols>(a, plan, partials, smem, cache);
  grid.sync();
  pdl_launch_dependents();  // every block is past its reads: the dx pass may start
  own_merge(partials, a.s.C, plan.slots, smem,
            [&](std::int64_t c, GradSums total) { finish_backward_channel(a, p, static_cast<int>(c), total); });
}

template <int V, class T>
__global__ void __launch_bounds__(kBlock, kOwnBlocksBwd)
    bwd_v17_stats_kernel(BwdArgs<T> a, ChannelParams p, GradSums* partials, V3Plan plan) {
  __shared__ GradSums smem[kBlock * V];
  bwd_v17_stats<V, T, false>(a, p, partials, plan, smem);
}

// The dx pass over `chunks` whole chunks of 32 packs of V elements, in `units` units of kChunks;
// warp w takes unit units - 1 - w; the elements after the last whole chunk go to warp 0.
template <int V, class T, bool kAdd, int kChunks>
__device__ __forceinline__ void bwd_v17_pass(const BwdArgs<T>& a, const ChannelParams& p, const ChannelMap& map,
                                             std::int64_t chunks, std::int64_t units) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const std::int64_t w = static_cast<std::int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32;
  const std::int64_t first = (units - 1 - w) * kChunks;
  // 1. Before the wait: dy, x and the mask, which the sums kernel does not write.
  uint4 qg[kChunks], qx[kChunks];
  Word bits[kChunks];
#pragma unroll
  for (int i = 0; i < kChunks; ++i) {
    const std::int64_t k = first + i, e0 = k * (32 * V) + lane * V;
    qg[i] = qx[i] = make_uint4(0, 0, 0, 0);
    bits[i] = 0;
    if (k >= 0 && k < chunks) {
      qg[i] = load_raw<V, T>(a.dy + e0);
      qx[i] = load_raw<V, T>(a.x + e0);
      bits[i] = a.mask[e0 >> 5] >> (e0 & 31);
    }
  }
  pdl_wait();  // the sums kernel has ended; the channels' coefficients are visible
  // 2. dx (and dr) of each pack, as bwd v4's pass computes them.
#pragma unroll
  for (int i = 0; i < kChunks; ++i) {
    const std::int64_t k = first + i, e0 = k * (32 * V) + lane * V;
    if (k < 0 || k >= chunks) continue;
    float mean[V], A[V], B[V], K[V];
    int c;
    std::int64_t pos;
    map.locate(e0, c, pos);
    bwd_params_of_pack<V>(p, map, c, pos, mean, A, B, K);
    bwd_finish_pack<V, T, kAdd>(a, e0, qg[i], qx[i], bits[i], mean, A, B, K);
  }
  if (w == 0) bwd_apply_tail<T, kAdd>(a, p, map, chunks * 32 * V, lane);
}

template <int V, class T, bool kAdd, int kChunks>
__global__ void __launch_bounds__(kBlock)
    bwd_v17_pass_kernel(BwdArgs<T> a, ChannelParams p, ChannelMap map, std::int64_t chunks, std::int64_t units) {
  bwd_v17_pass<V, T, kAdd, kChunks>(a, p, map, chunks, units);
}

// The two launches, as fwd v17's (v17_launch). Vs: the sums' elements per load; Va: the dx pass's.
template <int Vs, int Va, class T, bool kAdd, int kChunks>
void bwd_v17_launch(cudaStream_t st, const BwdArgs<T>& a, void* ws) {
  v17_launch<T, kOwnBlocksBwd, Vs, Va, kChunks, GradSums>(st, a, ws, &bwd_v17_stats_kernel<Vs, T>,
                                                          &bwd_v17_pass_kernel<Va, T, kAdd, kChunks>, "bwd_v17_split_pass");
}

template <class T, bool kAdd, int kChunks = kV17BwdChunks>
void bwd_v17_split_pass(cudaStream_t st, const BwdArgs<T>& a, void* ws) {
  check_shape(a.s, "bwd_v17_split_pass");
  constexpr int V = kPack<T>;
  with_packs<V>(bwd_stats_packs_ok<T>(a), bwd_apply_packs_ok<T, kAdd>(a), [&](auto vs, auto va) {
    bwd_v17_launch<decltype(vs)::value, decltype(va)::value, T, kAdd, kChunks>(st, a, ws);
  });
}

template <class T, bool kAdd, int kChunks = kV17BwdChunks>
std::vector<const void*> bwd_v17_kernels() {
  constexpr int V = kPack<T>;
  return {TUT_KERNEL((bwd_v17_stats_kernel<V, T>)), TUT_KERNEL((bwd_v17_pass_kernel<V, T, kAdd, kChunks>))};
}

}  // namespace ch05
