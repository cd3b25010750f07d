// fwd v19_warp_columns: v17 with the end of each block's walk merged in shuffles, with one barrier
// where v17's tree has one a level.
//
// Why. Nsight Compute's warp samples, instruction by instruction, on v17's statistics kernel at
// 64x64x112x112 NHWC in half on the H200 (results/NVIDIA_H200.stall_sites_v17.csv, README "A second
// trial that lost"): 435 of 4605 samples wait at the barrier a warp passes five times, the levels
// of the block's column tree (columns_to_partials: 32 rows of threads, each level half the threads
// merging 8 Welford values by Chan's merge while the others wait), and 339 at the grid barrier. In
// float, with 16 rows of threads, the tree holds 201 of 7037.
//
// How. columns_to_partials_warps (kernels/layout.cuh): where a warp holds whole rows of the block's
// columns (bx divides 32), the warp's 32 / bx rows merge in shuffles (2 levels in half at C = 64,
// 1 in float), lanes below bx write the warp's totals, and after one barrier bx * V threads each
// merge one (column, value) pair down the 8 warps. The walk, the merge after the grid barrier and
// the pass are v17's. The statistics are merged in another order than v17's: not v17's bits.
//
// Prediction (before any run): the tree's barrier samples mostly gone; the half statistics a few
// microseconds shorter at 64x64x112x112 NHWC (41 us in v17), the float ones about one.
//
// Measured on the H200 (results/NVIDIA_H200.ncu_v19.csv, stall_sites_v19.csv, v19_cases.*,
// v19_race.txt; README "Fewer barriers after the walk"): the half statistics 37.8 us against
// v17's 40.9, DRAM 57.9 % busy against 53.6 %, barrier samples 576 of 4232 against 897 of 4605;
// float 58.1 us against 60.3. The half forward at 64x64x112x112 NHWC 0.969 of v17's time (still
// 1.086 of cuDNN's fused one), 0.946 at 128x64x56x56, 0.894 at 16x32x112x112; NCHW unchanged.
#pragma once

#include "kernels/fwd_v17_split_pass.cuh"

namespace ch05 {

template <int V, class T, int kBlocks = kV17Blocks, int kU = (V == 1 ? kUnrollFor<1> : kV17Unroll)>
__global__ void __launch_bounds__(kBlock, kBlocks)
    fwd_v19_stats_kernel(FwdArgs<T> a, ChannelParams p, Welford* partials, V3Plan plan) {
  __shared__ Welford smem[kBlock * V];
  v17_stats<V, T, kBlocks, kU, true>(a, p, partials, plan, smem);
}

// v17's two launches with v19's statistics kernel. Vs: the statistics' elements per load; Va: the
// pass's. `who` names them in an error.
template <int Vs, int Va, class T, bool kAdd>
void fwd_v19_launch(cudaStream_t st, const FwdArgs<T>& a, void* ws, const char* who) {
  v17_launch<T, kV17Blocks, Vs, Va, kV17Chunks, Welford>(st, a, ws, &fwd_v19_stats_kernel<Vs, T>,
                                                        &fwd_v17_pass_kernel<Va, T, kAdd, kV17Chunks, Va != 1>, who);
}

template <class T, bool kAdd>
void fwd_v19_warp_columns(cudaStream_t st, const FwdArgs<T>& a, void* ws) {
  check_shape(a.s, "fwd_v19_warp_columns");
  constexpr int V = kPack<T>;
  with_packs<V>(stats_packs_ok<T>(a.s, a.x), fwd_apply_packs_ok<T, kAdd>(a), [&](auto vs, auto va) {
    fwd_v19_launch<decltype(vs)::value, decltype(va)::value, T, kAdd>(st, a, ws, "fwd_v19_warp_columns");
  });
}

template <class T, bool kAdd>
std::vector<const void*> fwd_v19_kernels() {
  constexpr int V = kPack<T>;
  return {TUT_KERNEL((fwd_v19_stats_kernel<V, T>)), TUT_KERNEL((fwd_v17_pass_kernel<V, T, kAdd, kV17Chunks, true>))};
}

}  // namespace ch05
