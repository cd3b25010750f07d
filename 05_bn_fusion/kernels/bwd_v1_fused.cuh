// bwd v1_fused: the ReLU gradient from the forward's bitmask, fused into the reduction and into
// the dx pass; g is never written.
//
// What changed since v0. g = kept ? dy : 0 is formed where it is used, from the mask bit (1/8 byte
// per element) instead of from y (4 bytes): kernel 1 sums g and g * (x - mean) reading dy, x and
// the mask; kernel 2 writes dx (and dr, in the Add form) reading them again. Bytes per float
// element: 8.125 + 12.125 = 20.25 (the two-pass model), against v0's 32.
// Prediction: the reduction is still one block per channel, so it stays the slow part.
#pragma once

#include "kernels/layout.cuh"
#include "kernels/naive.cuh"

namespace ch05 {

__device__ __forceinline__ bool mask_bit(const Word* mask, std::int64_t e) { return (mask[e >> 5] >> (e & 31)) & 1u; }

template <class T>
__global__ void __launch_bounds__(kNaiveBlock) bwd_v1_reduce_kernel(BwdArgs<T> a, ChannelParams p) {
  __shared__ GradSums red[kNaiveBlock / 32];
  const std::int64_t c = blockIdx.x;
  const float mean = a.saved_mean[c];
  GradSums sums{};
  for_each_of_channel(a.s, c, [&](std::int64_t e) {
    const float g = mask_bit(a.mask, e) ? to_float(a.dy[e]) : 0.0f;
    sums.g += g;
    sums.gx = fmaf(g, to_float(a.x[e]) - mean, sums.gx);
  });
  sums = block_reduce<kNaiveBlock>(sums, red);
  if (threadIdx.x == 0) finish_backward_channel(a, p, static_cast<int>(c), sums);
}

template <class T, bool kAdd>
__global__ void __launch_bounds__(256) bwd_v1_dx_kernel(BwdArgs<T> a, ChannelParams p) {
  const std::int64_t n = a.s.numel(), stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n; i += stride) {
    const int c = naive_channel(a.s, i);
    const float g = mask_bit(a.mask, i) ? to_float(a.dy[i]) : 0.0f;
    a.dx[i] = from_float<T>(fmaf(p.scale[c], g, fmaf(p.shift[c], to_float(a.x[i]) - p.mean[c], p.extra[c])));
    if constexpr (kAdd) a.dr[i] = from_float<T>(g);
  }
}

template <class T>
std::size_t bwd_v1_scratch_bytes(const Shape4& s) {
  return Scratch(s.C, 0, 0).total;
}

template <class T, bool kAdd>
void bwd_v1_fused(cudaStream_t st, const BwdArgs<T>& a, void* ws) {
  check_shape(a.s, "bwd_v1_fused");
  const ChannelParams p = Scratch(a.s.C, 0, 0).params_at(ws);
  bwd_v1_reduce_kernel<T><<<grid_of(a.s.C, "bwd_v1_fused"), kNaiveBlock, 0, st>>>(a, p);
  TUT_CHECK_LAUNCH("bwd_v1_reduce_kernel");
  bwd_v1_dx_kernel<T, kAdd><<<naive_grid(a.s.numel()), 256, 0, st>>>(a, p);
  TUT_CHECK_LAUNCH("bwd_v1_dx_kernel");
}

template <class T, bool kAdd>
std::vector<const void*> bwd_v1_kernels() {
  return {TUT_KERNEL(bwd_v1_reduce_kernel<T>), TUT_KERNEL(bwd_v1_dx_kernel<T, kAdd>)};
}

}  // namespace ch05
