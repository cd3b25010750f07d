// fwd v0_unfused: what a framework runs for BN then ReLU when nothing is fused. Four kernels, every
// intermediate through memory:
//   1. mean per channel: a sum over x (one block per channel);
//   2. variance per channel: a sum of (x - mean)^2, the second pass of the two-pass algorithm, then
//      the saved statistics and the running statistics;
//   3. normalize: z = (x - mean) * gamma * invstd + beta, written to a scratch tensor;
//   4. ReLU (or Add + ReLU) on z, writing y and the mask with a warp ballot (chapter 04's v2).
// Bytes per float element: x 4 + x 4 (statistics), x 4 + z 4, z 4 + y 4 + mask 1/8 = 24.125 (the
// Add form reads r too: 28.125), against the floor's 8.125 (12.125).
// Prediction: kernels 1 and 2 run C blocks (64 of the H100's 132 SMs at 64x64x112x112) and are
// slow; kernels 3 and 4 run near the copy rate. Expect well under a third of the floor's speed.
// Evidence: the statistics kernels' grid (C blocks) and achieved occupancy in the profile.
#pragma once

#include "kernels/layout.cuh"
#include "kernels/naive.cuh"

namespace ch05 {

template <class T>
__global__ void __launch_bounds__(kNaiveBlock) fwd_v0_mean_kernel(FwdArgs<T> a, ChannelParams p) {
  __shared__ Sum red[kNaiveBlock / 32];
  const std::int64_t c = blockIdx.x;
  Sum sum{};
  for_each_of_channel(a.s, c, [&](std::int64_t e) { sum.v += to_float(a.x[e]); });
  sum = block_reduce<kNaiveBlock>(sum, red);
  if (threadIdx.x == 0) p.mean[c] = sum.v / static_cast<float>(a.s.per_channel());
}

template <class T>
__global__ void __launch_bounds__(kNaiveBlock) fwd_v0_var_kernel(FwdArgs<T> a, ChannelParams p) {
  __shared__ Sum red[kNaiveBlock / 32];
  const std::int64_t c = blockIdx.x;
  const float mean = p.mean[c];
  Sum sq{};
  for_each_of_channel(a.s, c, [&](std::int64_t e) {
    const float d = to_float(a.x[e]) - mean;
    sq.v = fmaf(d, d, sq.v);
  });
  sq = block_reduce<kNaiveBlock>(sq, red);
  if (threadIdx.x == 0)
    finish_forward_channel(a, p, static_cast<int>(c), Welford{static_cast<float>(a.s.per_channel()), mean, sq.v});
}

template <class T>
__global__ void __launch_bounds__(256) fwd_v0_normalize_kernel(FwdArgs<T> a, ChannelParams p, T* __restrict__ z) {
  const std::int64_t n = a.s.numel(), stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n; i += stride) {
    const int c = naive_channel(a.s, i);
    z[i] = from_float<T>(fmaf(to_float(a.x[i]) - p.mean[c], p.scale[c], p.shift[c]));
  }
}

// Chapter 04's v2: the loop variable is the warp's first element, the same in all 32 lanes, so
// every ballot has the whole warp; lanes past n vote false.
template <class T, bool kAdd>
__global__ void __launch_bounds__(256)
    fwd_v0_relu_mask_kernel(std::int64_t n, const T* __restrict__ z, const T* __restrict__ r, T* __restrict__ y,
                            Word* __restrict__ mask) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t base = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x - lane; base < n;
       base += stride) {
    const std::int64_t i = base + lane;
    bool keep = false;
    if (i < n) {
      float s = to_float(z[i]);
      if constexpr (kAdd) s += to_float(r[i]);
      s = round_to<T>(s);
      y[i] = from_float<T>(relu(s));
      keep = kept(s);
    }
    const Word word = __ballot_sync(kFullWarp, keep);
    if (lane == 0) mask[base / 32] = word;
  }
}

template <class T>
std::size_t fwd_v0_scratch_bytes(const Shape4& s) {
  return Scratch(s.C, 0, static_cast<std::size_t>(s.numel()) * sizeof(T)).total;
}

template <class T, bool kAdd>
void fwd_v0_unfused(cudaStream_t st, const FwdArgs<T>& a, void* ws) {
  check_shape(a.s, "fwd_v0_unfused");
  const Scratch sc(a.s.C, 0, static_cast<std::size_t>(a.s.numel()) * sizeof(T));
  const ChannelParams p = sc.params_at(ws);
  T* z = static_cast<T*>(sc.buffer_at(ws));
  const unsigned channels = grid_of(a.s.C, "fwd_v0_unfused");
  fwd_v0_mean_kernel<T><<<channels, kNaiveBlock, 0, st>>>(a, p);
  TUT_CHECK_LAUNCH("fwd_v0_mean_kernel");
  fwd_v0_var_kernel<T><<<channels, kNaiveBlock, 0, st>>>(a, p);
  TUT_CHECK_LAUNCH("fwd_v0_var_kernel");
  const unsigned blocks = naive_grid(a.s.numel());
  fwd_v0_normalize_kernel<T><<<blocks, 256, 0, st>>>(a, p, z);
  TUT_CHECK_LAUNCH("fwd_v0_normalize_kernel");
  fwd_v0_relu_mask_kernel<T, kAdd><<<blocks, 256, 0, st>>>(a.s.numel(), z, a.r, a.y, a.mask);
  TUT_CHECK_LAUNCH("fwd_v0_relu_mask_kernel");
}

template <class T, bool kAdd>
std::vector<const void*> fwd_v0_kernels() {
  return {TUT_KERNEL(fwd_v0_mean_kernel<T>), TUT_KERNEL(fwd_v0_var_kernel<T>), TUT_KERNEL(fwd_v0_normalize_kernel<T>),
          TUT_KERNEL(fwd_v0_relu_mask_kernel<T, kAdd>)};
}

}  // namespace ch05
