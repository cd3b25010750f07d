// bwd v3_single_read: one cooperative kernel, as fwd v3: the two sums (phase 1, front to back),
// grid.sync(), a warp per channel writes dgamma, dbeta and dx's coefficients (phase 2),
// grid.sync(), the dx pass back to front (phase 3), so its first reads of dy, x and the mask hit
// the L2, writing dx (and dr) with evict-first stores.
// Bytes per float element when dy, x and the mask fit in the L2 together (at 16x32x112x112: 51 MB,
// about the H100's L2, so only partly): dy 4 + x 4 + mask 1/8 + dx 4 = 12.125 instead of 20.25.
// Prediction: at 16x32x112x112 most of the second read hits; at 64x64x112x112 about a fifth.
#pragma once

#include "kernels/bwd_v2_layout_aware.cuh"
#include "kernels/fwd_v3_single_read.cuh"

namespace ch05 {

template <int Vs, int Va, class T, bool kAdd>
__global__ void __launch_bounds__(kBlock)
    bwd_v3_single_read_kernel(BwdArgs<T> a, ChannelParams p, GradSums* partials, V3Plan plan, ChannelMap map) {
  __shared__ GradSums smem[kBlock * Vs];
  cg::grid_group grid = cg::this_grid();

  // 1. Partials, dy, x and the mask read front to back.
  v3_partials<GradStreams<Vs, T>>(
      a.s, plan, partials, smem,
      [&](std::int64_t c, std::int64_t j) {
        GradStreams<Vs, T> op(a.dy, a.x, a.mask);
        if (c >= 0) {
          const float mean = a.saved_mean[c];
#pragma unroll
          for (int k = 0; k < Vs; ++k) op.mu[k] = mean;
        } else {
          column_means(op, a, j);
        }
        return op;
      },
      [&](std::int64_t e, std::int64_t c) { return grad_of(a, e, c); });
  grid.sync();

  // 2. A warp per channel.
  const int lane = static_cast<int>(threadIdx.x % 32);
  const std::int64_t warp = static_cast<std::int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32;
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * kWarps;
  for (std::int64_t c = warp; c < a.s.C; c += warps) {
    const GradSums total = warp_merge_partials(partials, c, plan.slots);
    if (lane == 0) finish_backward_channel(a, p, static_cast<int>(c), total);
  }
  grid.sync();

  // 3. dx, back to front.
  const std::int64_t chunks = a.s.numel() / (32 * Va);
  if (warp == 0) bwd_apply_tail<T, kAdd>(a, p, map, chunks * 32 * Va, lane);
  for (std::int64_t k = chunks - 1 - warp; k >= 0; k -= warps) bwd_apply_chunk<Va, T, kAdd, true>(a, p, map, k, lane);
}

template <class T>
std::size_t bwd_v3_scratch_bytes(const Shape4& s) {
  return Scratch(s.C, v3_partial_bytes(s, kPack<T>, sizeof(GradSums)), 0).total;
}

template <int Vs, int Va, class T, bool kAdd>
void bwd_v3_launch(cudaStream_t st, BwdArgs<T> a, const Scratch& sc, void* ws) {
  const void* kernel = reinterpret_cast<const void*>(&bwd_v3_single_read_kernel<Vs, Va, T, kAdd>);
  const int grid = cooperative_grid(kernel, "bwd_v3_single_read");
  V3Plan plan = v3_plan(a.s, Vs, grid);
  ChannelParams p = sc.params_at(ws);
  GradSums* partials = sc.partials_at<GradSums>(ws);
  ChannelMap map(a.s);
  void* args[] = {&a, &p, &partials, &plan, &map};
  TUT_CUDA(cudaLaunchCooperativeKernel(kernel, grid, kBlock, args, 0, st));
}

template <class T, bool kAdd>
void bwd_v3_single_read(cudaStream_t st, const BwdArgs<T>& a, void* ws) {
  check_shape(a.s, "bwd_v3_single_read");
  constexpr int V = kPack<T>;
  const Scratch sc(a.s.C, v3_partial_bytes(a.s, V, sizeof(GradSums)), 0);
  with_packs<V>(bwd_stats_packs_ok<T>(a), bwd_apply_packs_ok<T, kAdd>(a), [&](auto vs, auto va) {
    bwd_v3_launch<decltype(vs)::value, decltype(va)::value, T, kAdd>(st, a, sc, ws);
  });
}

template <class T, bool kAdd>
std::vector<const void*> bwd_v3_kernels() {
  constexpr int V = kPack<T>;
  return {TUT_KERNEL(bwd_v3_single_read_kernel<V, V, T, kAdd>)};
}

}  // namespace ch05
