// bwd v0_unfused: what a framework runs for the backward of ReLU then BN when nothing is fused.
// Three kernels:
//   1. ReLU backward from y: g = y > 0 (or NaN) ? dy : 0, written to memory (PyTorch's
//      threshold_backward). In the Add form g is the residual's gradient dr, an output anyway;
//   2. the two sums per channel, sum g and sum g * (x - mean), one block per channel, then dgamma,
//      dbeta and dx's coefficients;
//   3. dx = A * g + B * (x - mean) + K, reading g and x again.
// Bytes per float element: dy 4 + y 4 + g 4, g 4 + x 4, g 4 + x 4 + dx 4 = 32, against the two-pass
// model's 20.25 and the floor's 12.125.
// Prediction: kernel 2 runs C blocks, as slow as the forward's statistics in v0; kernels 1 and 3
// near the copy rate.
#pragma once

#include "kernels/layout.cuh"
#include "kernels/naive.cuh"

namespace ch05 {

template <class T>
__global__ void __launch_bounds__(256)
    bwd_v0_relu_grad_kernel(std::int64_t n, const T* __restrict__ dy, const T* __restrict__ y, T* __restrict__ g) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n; i += stride)
    g[i] = kept(to_float(y[i])) ? dy[i] : from_float<T>(0.0f);
}

template <class T>
__global__ void __launch_bounds__(kNaiveBlock)
    bwd_v0_reduce_kernel(BwdArgs<T> a, const T* __restrict__ g, ChannelParams p) {
  __shared__ GradSums red[kNaiveBlock / 32];
  const std::int64_t c = blockIdx.x;
  const float mean = a.saved_mean[c];
  GradSums sums{};
  for_each_of_channel(a.s, c, [&](std::int64_t e) {
    const float gv = to_float(g[e]);
    sums.g += gv;
    sums.gx = fmaf(gv, to_float(a.x[e]) - mean, sums.gx);
  });
  sums = block_reduce<kNaiveBlock>(sums, red);
  if (threadIdx.x == 0) finish_backward_channel(a, p, static_cast<int>(c), sums);
}

template <class T>
__global__ void __launch_bounds__(256) bwd_v0_dx_kernel(BwdArgs<T> a, const T* __restrict__ g, ChannelParams p) {
  const std::int64_t n = a.s.numel(), stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n; i += stride) {
    const int c = naive_channel(a.s, i);
    const float dx = fmaf(p.scale[c], to_float(g[i]), fmaf(p.shift[c], to_float(a.x[i]) - p.mean[c], p.extra[c]));
    a.dx[i] = from_float<T>(dx);
  }
}

template <class T, bool kAdd>
std::size_t bwd_v0_scratch_bytes(const Shape4& s) {
  return Scratch(s.C, 0, kAdd ? 0 : static_cast<std::size_t>(s.numel()) * sizeof(T)).total;
}

template <class T, bool kAdd>
void bwd_v0_unfused(cudaStream_t st, const BwdArgs<T>& a, void* ws) {
  check_shape(a.s, "bwd_v0_unfused");
  const Scratch sc(a.s.C, 0, kAdd ? 0 : static_cast<std::size_t>(a.s.numel()) * sizeof(T));
  const ChannelParams p = sc.params_at(ws);
  T* g = kAdd ? a.dr : static_cast<T*>(sc.buffer_at(ws));  // the Add form's dr is g
  const unsigned blocks = naive_grid(a.s.numel());
  bwd_v0_relu_grad_kernel<T><<<blocks, 256, 0, st>>>(a.s.numel(), a.dy, a.y, g);
  TUT_CHECK_LAUNCH("bwd_v0_relu_grad_kernel");
  bwd_v0_reduce_kernel<T><<<grid_of(a.s.C, "bwd_v0_unfused"), kNaiveBlock, 0, st>>>(a, g, p);
  TUT_CHECK_LAUNCH("bwd_v0_reduce_kernel");
  bwd_v0_dx_kernel<T><<<blocks, 256, 0, st>>>(a, g, p);
  TUT_CHECK_LAUNCH("bwd_v0_dx_kernel");
}

template <class T>
std::vector<const void*> bwd_v0_kernels() {
  return {TUT_KERNEL(bwd_v0_relu_grad_kernel<T>), TUT_KERNEL(bwd_v0_reduce_kernel<T>), TUT_KERNEL(bwd_v0_dx_kernel<T>)};
}

}  // namespace ch05
