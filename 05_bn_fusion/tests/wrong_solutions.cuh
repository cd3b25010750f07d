// Normalize passes the grader must reject, each after version 2's (correct) statistics, as the
// exercise's is. One element per thread and a warp ballot, as v1's pass, with one flaw each:
//
//   channel_as_nchw        the channel of element e taken as (e / HW) % C in both layouts: right in
//                          NCHW, wrong in NHWC.
//   mask_from_x            the bit set where x > mean, the pre-normalization test, not s > 0: y is
//                          right, the mask disagrees with it wherever beta or r moves s across 0.
//   whole_warps_only       lanes past the end leave before the ballot: every word but the last is
//                          right, and the last is never stored (unless n is a multiple of 32).
//   beta_after_relu        y = relu((x - mean) * scale) + beta: the affine's shift after the ReLU.
//   naive_statistics       (a statistics flaw, not a pass flaw) var = E[x^2] - E[x]^2 in float32, in
//                          one pass: right at mean 0, wrong at mean 1000 (tests/test_gpu.cu).
#pragma once

#include "kernels/fwd_v2_layout_aware.cuh"
#include "kernels/naive.cuh"

namespace ch05::wrong {

enum class Flaw { channel_as_nchw, mask_from_x, whole_warps_only, beta_after_relu };

template <Flaw kFlaw>
__global__ void __launch_bounds__(256) flawed_apply_kernel(FwdArgs<float> a, ChannelParams p) {
  const std::int64_t n = a.s.numel();
  const int lane = static_cast<int>(threadIdx.x % 32);
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t base = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x - lane; base < n;
       base += stride) {
    const std::int64_t i = base + lane;
    if (kFlaw == Flaw::whole_warps_only && base + 32 > n) return;
    bool keep = false;
    if (i < n) {
      const int c = kFlaw == Flaw::channel_as_nchw ? static_cast<int>((i / a.s.HW) % a.s.C) : naive_channel(a.s, i);
      const float x = a.x[i];
      float s = (x - p.mean[c]) * p.scale[c];
      if (kFlaw != Flaw::beta_after_relu) s += p.shift[c];
      const float y = kFlaw == Flaw::beta_after_relu ? relu(s) + p.shift[c] : relu(s);
      a.y[i] = y;
      keep = kFlaw == Flaw::mask_from_x ? x > p.mean[c] : kept(s);
    }
    const Word word = __ballot_sync(kFullWarp, keep);
    if (lane == 0) a.mask[base / 32] = word;
  }
}

template <Flaw kFlaw>
void flawed(cudaStream_t st, const FwdArgs<float>& a, void* ws) {
  constexpr int V = kPack<float>;
  const Scratch sc(a.s.C, fwd_v2_partial_bytes(a.s, V), 0);
  if (stats_packs_ok<float>(a.s, a.x)) fwd_v2_stats<V, float>(st, a, sc, ws);
  else fwd_v2_stats<1, float>(st, a, sc, ws);
  flawed_apply_kernel<kFlaw><<<naive_grid(a.s.numel()), 256, 0, st>>>(a, sc.params_at(ws));
  TUT_CHECK_LAUNCH("flawed_apply_kernel");
}

// One pass of sums of x and x^2 per channel (one block each), var = E[x^2] - E[x]^2, then v2's pass.
__global__ void __launch_bounds__(kNaiveBlock) naive_stats_kernel(FwdArgs<float> a, ChannelParams p) {
  __shared__ GradSums red[kNaiveBlock / 32];
  const std::int64_t c = blockIdx.x;
  GradSums s{};
  for_each_of_channel(a.s, c, [&](std::int64_t e) {
    const float x = a.x[e];
    s.g += x;
    s.gx = fmaf(x, x, s.gx);
  });
  s = block_reduce<kNaiveBlock>(s, red);
  if (threadIdx.x == 0) {
    const float M = static_cast<float>(a.s.per_channel()), mean = s.g / M;
    const float var = fmaxf(s.gx / M - mean * mean, 0.0f);
    finish_forward_channel(a, p, static_cast<int>(c), Welford{M, mean, var * M});
  }
}

inline void naive_statistics(cudaStream_t st, const FwdArgs<float>& a, void* ws) {
  const Scratch sc(a.s.C, 0, 0);
  naive_stats_kernel<<<grid_of(a.s.C, "naive_statistics"), kNaiveBlock, 0, st>>>(a, sc.params_at(ws));
  TUT_CHECK_LAUNCH("naive_stats_kernel");
  fwd_v2_apply<1, float, false>(st, a, sc.params_at(ws));
}

}  // namespace ch05::wrong
