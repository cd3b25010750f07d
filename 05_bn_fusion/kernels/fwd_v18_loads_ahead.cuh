// fwd v18_loads_ahead: v17 with its statistics' walk software-pipelined: a thread issues its next
// batch of loads before it adds the batch it holds.
//
// Why. On the H200, at 64x64x112x112 NHWC, v17's statistics kernel read 103 MB of half x in 41.2 us
// (2.5 TB/s, DRAM 53.1 % busy, issue slots 41.6 % busy), where in float it read 206 MB in 59.6 us
// (3.45 TB/s, 72.5 %) (results/NVIDIA_H200.ncu_v17.csv, caches flushed). Both load kU = 4 packs of
// 16 bytes a thread, then add them, then load the next 4 (layout.cuh, sequence): while a thread
// adds, none of its loads is in flight. A pack of half holds 8 values against float's 4, so a
// half thread spends twice as long adding each batch, and its loads sit idle twice as long. Neither
// bound is reached: the DRAM waits on loads nobody has issued yet.
//
// How. sequence_ahead (layout.cuh): the same packs in the same order, added in the same order, so
// the same partials and every output the same bits as v17's; the loads of batch b + 1 are issued
// before batch b is added, so a thread keeps 4 to 8 packs in flight. The pass is v17's.
//
// Prediction (before any run): the half statistics near float's DRAM rate, about 30 us instead of
// 41 at 64x64x112x112 NHWC, and the half forward there level with cuDNN's fused one (0.0890 ms
// against v17's 0.1002 in the H200's run of v17); in float a smaller gain.
#pragma once

#include "kernels/fwd_v17_split_pass.cuh"

namespace ch05 {

template <int V, class T, int kBlocks = kV17Blocks, int kU = (V == 1 ? kUnrollFor<1> : kV17Unroll)>
__global__ void __launch_bounds__(kBlock, kBlocks)
    fwd_v18_stats_kernel(FwdArgs<T> a, ChannelParams p, Welford* partials, V3Plan plan) {
  __shared__ Welford smem[kBlock * V];
  v17_stats<V, T, kBlocks, kU, true>(a, p, partials, plan, smem);
}

template <class T, bool kAdd>
void fwd_v18_loads_ahead(cudaStream_t st, const FwdArgs<T>& a, void* ws) {
  check_shape(a.s, "fwd_v18_loads_ahead");
  constexpr int V = kPack<T>;
  with_packs<V>(stats_packs_ok<T>(a.s, a.x), fwd_apply_packs_ok<T, kAdd>(a), [&](auto vs, auto va) {
    constexpr int Vs = decltype(vs)::value, Va = decltype(va)::value, kUs = Vs == 1 ? kUnrollFor<1> : kV17Unroll;
    v17_launch<T, kV17Blocks, Vs, Va, kV17Chunks, Welford>(st, a, ws, &fwd_v18_stats_kernel<Vs, T, kV17Blocks, kUs>,
                                                          &fwd_v17_pass_kernel<Va, T, kAdd, kV17Chunks, Va != 1>,
                                                          "fwd_v18_loads_ahead");
  });
}

template <class T, bool kAdd>
std::vector<const void*> fwd_v18_kernels() {
  constexpr int V = kPack<T>;
  return {TUT_KERNEL((fwd_v18_stats_kernel<V, T>)), TUT_KERNEL((fwd_v17_pass_kernel<V, T, kAdd, kV17Chunks, true>))};
}

}  // namespace ch05
