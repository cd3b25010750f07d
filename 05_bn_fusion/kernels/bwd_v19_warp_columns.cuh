// bwd v19_warp_columns: the backward v17 with the end of each block's walk merged in shuffles, as
// the forward v19 (kernels/fwd_v19_warp_columns.cuh) does for its statistics.
//
// Why. The sums kernel of bwd v17 ends each item of its walk in the same column tree as the
// forward's statistics (columns_to_partials: one barrier a level, five levels in half at C = 64).
// Nsight Compute at 64x64x112x112 NHWC in half on the H200 (results/NVIDIA_H200.ncu_v17_bwd.csv)
// has that kernel's warps waiting at a barrier 11.3 % of their cycles, and DRAM 64.6 % busy.
//
// How. bwd v17's kernels, with its sums' walk handing each item's columns to
// columns_to_partials_warps (kernels/layout.cuh) instead of the tree: the warp's rows merged in
// shuffles, one barrier, then one thread per (column, value) pair down the 8 warps. A GradSums
// merge is two additions where a Welford merge is a Chan merge with a division, so each level
// the tree drops costs less than in the forward. The merge after the grid barrier and the dx pass
// are v17's. The sums are added in another order than v17's: not v17's bits.
//
// Prediction (before any run): the sums kernel's barrier share falls by about half, as the
// forward's did (897 to 576 samples of the tree and grid barrier), and the half sums at
// 64x64x112x112 NHWC a few microseconds shorter than v17's; the dx pass, which holds most of
// the half backward's time (105 us against 69 us for the sums), unchanged.
//
// Measured on the H200 (results/NVIDIA_H200.ncu_bwd_v19.csv, bwd_v19_cases.*; README "The
// backward's turn"): the half sums 59.6 us against v17's 64.1, warps at a barrier 7.25 % of their
// cycles against 10.66 % (0.68 of v17's share, not half), DRAM 74.9 % busy against 69.6 %. The half
// backward in NHWC 0.839 to 0.981 of v17's time at four shapes; float 0.966 to 1.003; NCHW 1.000.
#pragma once

#include "kernels/bwd_v17_split_pass.cuh"

namespace ch05 {

template <int V, class T>
__global__ void __launch_bounds__(kBlock, kOwnBlocksBwd)
    bwd_v19_stats_kernel(BwdArgs<T> a, ChannelParams p, GradSums* partials, V3Plan plan) {
  __shared__ GradSums smem[kBlock * V];
  bwd_v17_stats<V, T, true>(a, p, partials, plan, smem);
}

// The two launches: these sums, then v17's dx pass. `who` names them in an error.
template <int Vs, int Va, class T, bool kAdd>
void bwd_v19_launch(cudaStream_t st, const BwdArgs<T>& a, void* ws, const char* who) {
  v17_launch<T, kOwnBlocksBwd, Vs, Va, kV17BwdChunks, GradSums>(st, a, ws, &bwd_v19_stats_kernel<Vs, T>,
                                                                &bwd_v17_pass_kernel<Va, T, kAdd, kV17BwdChunks>, who);
}

template <class T, bool kAdd>
void bwd_v19_warp_columns(cudaStream_t st, const BwdArgs<T>& a, void* ws) {
  check_shape(a.s, "bwd_v19_warp_columns");
  constexpr int V = kPack<T>;
  with_packs<V>(bwd_stats_packs_ok<T>(a), bwd_apply_packs_ok<T, kAdd>(a), [&](auto vs, auto va) {
    bwd_v19_launch<decltype(vs)::value, decltype(va)::value, T, kAdd>(st, a, ws, "bwd_v19_warp_columns");
  });
}

template <class T, bool kAdd>
std::vector<const void*> bwd_v19_kernels() {
  constexpr int V = kPack<T>;
  return {TUT_KERNEL((bwd_v19_stats_kernel<V, T>)), TUT_KERNEL((bwd_v17_pass_kernel<V, T, kAdd, kV17BwdChunks>))};
}

}  // namespace ch05
