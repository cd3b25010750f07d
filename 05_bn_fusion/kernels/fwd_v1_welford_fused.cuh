// fwd v1_welford_fused: the statistics in one pass (Welford per thread, Chan's merge across the
// block), then one fused pass: normalize, affine, (add), ReLU and the mask.
//
// What changed since v0. The mean and the variance come from one read of x instead of two: each
// thread keeps a running count, mean and M2 (Welford), updating them per value,
//   n += 1;  d = x - mean;  mean += d / n;  M2 += d * (x - mean),
// and the block merges its threads' triples pairwise (Chan et al.: kernels/common.cuh's merge).
// The normalize, the add and the ReLU are one kernel, so z never reaches memory. Bytes per float
// element: x 4 (statistics) + x 4 + y 4 + mask 1/8 = 12.125, half of v0's 24.125.
// Why not sum x and x^2 in one pass? var = E[x^2] - E[x]^2 subtracts two numbers near mean^2: for
// x = 1000 +- 3 they agree to 5 of float's 7 digits, and the variance (3) is lost
// (tests/test_cpu.cu shows it; reference.hpp's naive_float_stats). Welford never forms x^2.
// Prediction: the fused pass near the copy rate; the statistics kernel, still one block per
// channel, as slow as v0's first kernel. Expect v0's time minus its second statistics pass and
// two of its element-wise passes.
// Evidence: the registers and grid of each kernel; the statistics kernel's achieved occupancy.
// The mask trap (chapter 04): the loop variable of the fused pass is the warp's first element, so
// every ballot has all 32 lanes.
#pragma once

#include "kernels/layout.cuh"
#include "kernels/naive.cuh"

namespace ch05 {

template <class T>
__global__ void __launch_bounds__(kNaiveBlock) fwd_v1_stats_kernel(FwdArgs<T> a, ChannelParams p) {
  __shared__ Welford red[kNaiveBlock / 32];
  const std::int64_t c = blockIdx.x;
  Welford w{};
  for_each_of_channel(a.s, c, [&](std::int64_t e) {
    const float v = to_float(a.x[e]);
    w.n += 1.0f;
    const float d = v - w.mean;
    w.mean += d / w.n;
    w.m2 = fmaf(d, v - w.mean, w.m2);
  });
  w = block_reduce<kNaiveBlock>(w, red);
  if (threadIdx.x == 0) finish_forward_channel(a, p, static_cast<int>(c), w);
}

template <class T, bool kAdd>
__global__ void __launch_bounds__(256) fwd_v1_apply_kernel(FwdArgs<T> a, ChannelParams p) {
  const std::int64_t n = a.s.numel();
  const int lane = static_cast<int>(threadIdx.x % 32);
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t base = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x - lane; base < n;
       base += stride) {
    const std::int64_t i = base + lane;
    bool keep = false;
    if (i < n) {
      const int c = naive_channel(a.s, i);
      float s = fmaf(to_float(a.x[i]) - p.mean[c], p.scale[c], p.shift[c]);
      if constexpr (kAdd) s += to_float(a.r[i]);
      s = round_to<T>(s);
      a.y[i] = from_float<T>(relu(s));
      keep = kept(s);
    }
    const Word word = __ballot_sync(kFullWarp, keep);
    if (lane == 0) a.mask[base / 32] = word;
  }
}

template <class T>
std::size_t fwd_v1_scratch_bytes(const Shape4& s) {
  return Scratch(s.C, 0, 0).total;
}

template <class T, bool kAdd>
void fwd_v1_welford_fused(cudaStream_t st, const FwdArgs<T>& a, void* ws) {
  check_shape(a.s, "fwd_v1_welford_fused");
  const ChannelParams p = Scratch(a.s.C, 0, 0).params_at(ws);
  fwd_v1_stats_kernel<T><<<grid_of(a.s.C, "fwd_v1_welford_fused"), kNaiveBlock, 0, st>>>(a, p);
  TUT_CHECK_LAUNCH("fwd_v1_stats_kernel");
  fwd_v1_apply_kernel<T, kAdd><<<naive_grid(a.s.numel()), 256, 0, st>>>(a, p);
  TUT_CHECK_LAUNCH("fwd_v1_apply_kernel");
}

template <class T, bool kAdd>
std::vector<const void*> fwd_v1_kernels() {
  return {TUT_KERNEL(fwd_v1_stats_kernel<T>), TUT_KERNEL(fwd_v1_apply_kernel<T, kAdd>)};
}

}  // namespace ch05
