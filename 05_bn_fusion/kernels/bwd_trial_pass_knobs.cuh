// A trial, not a rung: bwd v19 with its dx pass under other settings, to see whether the half
// pass (59 % DRAM busy at 64x64x112x112 NHWC, 76 registers, 3 blocks per SM) is held by the
// bytes in flight per SM. kMinBlocks caps the registers so that that many blocks fit; kChunks is
// the chunks of 32 packs a warp loads before it waits.
#pragma once

#include "kernels/bwd_v19_warp_columns.cuh"

namespace ch05 {

template <int V, class T, bool kAdd, int kChunks, int kMinBlocks>
__global__ void __launch_bounds__(kBlock, kMinBlocks)
    bwd_trial_pass_kernel(BwdArgs<T> a, ChannelParams p, ChannelMap map, std::int64_t chunks, std::int64_t units) {
  bwd_v17_pass<V, T, kAdd, kChunks>(a, p, map, chunks, units);
}

template <class T, bool kAdd, int kChunks, int kMinBlocks>
void bwd_trial_pass(cudaStream_t st, const BwdArgs<T>& a, void* ws) {
  check_shape(a.s, "bwd_trial_pass");
  constexpr int V = kPack<T>;
  with_packs<V>(bwd_stats_packs_ok<T>(a), bwd_apply_packs_ok<T, kAdd>(a), [&](auto vs, auto va) {
    constexpr int Vs = decltype(vs)::value, Va = decltype(va)::value;
    v17_launch<T, kOwnBlocksBwd, Vs, Va, kChunks, GradSums>(st, a, ws, &bwd_v19_stats_kernel<Vs, T>,
                                                           &bwd_trial_pass_kernel<Va, T, kAdd, kChunks, kMinBlocks>,
                                                           "bwd_trial_pass");
  });
}

template <class T, bool kAdd, int kChunks, int kMinBlocks>
std::vector<const void*> bwd_trial_kernels() {
  constexpr int V = kPack<T>;
  return {TUT_KERNEL((bwd_v19_stats_kernel<V, T>)), TUT_KERNEL((bwd_trial_pass_kernel<V, T, kAdd, kChunks, kMinBlocks>))};
}

}  // namespace ch05
