// Inference: BN with the running statistics, then ReLU. Nothing is reduced, so gamma, beta and the
// running mean and variance fold into one scale and one shift per channel,
//   scale = gamma / sqrt(running_var + eps),   shift = beta - running_mean * scale,
//   y = relu(x * scale + shift),
// one element-wise pass at 8 bytes per float element.
//
// v0_per_element recomputes scale and shift for every element (a square root and a division
// each); v1_folded computes them once per channel in a tiny kernel, then reads x and writes y in
// 16-byte packs. The fold trades accuracy where |running_mean| is large against the spread:
// x * scale and shift then nearly cancel. The reference is exact, and the tolerance counts that
// cancellation (reference.hpp).
#pragma once

#include "kernels/fwd_v2_layout_aware.cuh"
#include "kernels/naive.cuh"

namespace ch05 {

template <class T>
__global__ void __launch_bounds__(256) infer_v0_per_element_kernel(InferArgs<T> a) {
  const std::int64_t n = a.s.numel(), stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n; i += stride) {
    const int c = naive_channel(a.s, i);
    const float scale = a.gamma[c] / sqrtf(a.running_var[c] + a.eps);
    const float shift = a.beta[c] - a.running_mean[c] * scale;
    a.y[i] = from_float<T>(relu(fmaf(to_float(a.x[i]), scale, shift)));
  }
}

template <class T>
void infer_v0_per_element(cudaStream_t st, const InferArgs<T>& a, void*) {
  check_shape(a.s, "infer_v0_per_element");
  infer_v0_per_element_kernel<T><<<naive_grid(a.s.numel()), 256, 0, st>>>(a);
  TUT_CHECK_LAUNCH("infer_v0_per_element_kernel");
}

template <class T>
__global__ void infer_fold_kernel(InferArgs<T> a, ChannelParams p) {
  const std::int64_t c = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (c >= a.s.C) return;
  const float scale = a.gamma[c] / sqrtf(a.running_var[c] + a.eps);
  p.scale[c] = scale;
  p.shift[c] = a.beta[c] - a.running_mean[c] * scale;
}

template <int V, class T>
__global__ void __launch_bounds__(kBlock) infer_v1_apply_kernel(InferArgs<T> a, ChannelParams p, ChannelMap map) {
  const std::int64_t n = a.s.numel(), packs = n / V;
  const std::int64_t q = blockIdx.x * static_cast<std::int64_t>(kBlock) + threadIdx.x;
  if (q < packs) {
    const std::int64_t e0 = q * V;
    float xv[V], scale[V], shift[V], mean[V], yv[V];
    if constexpr (V == 1) xv[0] = to_float(a.x[e0]);
    else load_pack<V>(a.x + e0, xv);
    int c;
    std::int64_t pos;
    map.locate(e0, c, pos);
    params_of_pack<V>(p, map, c, pos, mean, scale, shift);  // p.mean is all zeros: x * scale + shift
#pragma unroll
    for (int k = 0; k < V; ++k) yv[k] = relu(fmaf(xv[k], scale[k], shift[k]));
    if constexpr (V == 1) a.y[e0] = from_float<T>(yv[0]);
    else store_pack<V>(a.y + e0, yv);
  }
  if (q < n - packs * V) {  // the elements after the last whole pack: the first threads
    const std::int64_t i = packs * V + q;
    int c;
    std::int64_t pos;
    map.locate(i, c, pos);
    a.y[i] = from_float<T>(relu(fmaf(to_float(a.x[i]), p.scale[c], p.shift[c])));
  }
}

template <class T>
std::size_t infer_v1_scratch_bytes(const Shape4& s) {
  return Scratch(s.C, 0, 0).total;
}

template <int V, class T>
void infer_v1_launch(cudaStream_t st, const InferArgs<T>& a, const ChannelParams& p) {
  const std::int64_t packs = a.s.numel() / V;
  const std::int64_t blocks = std::max<std::int64_t>(1, (packs + kBlock - 1) / kBlock);
  infer_v1_apply_kernel<V, T><<<grid_of(blocks, "infer_v1_folded"), kBlock, 0, st>>>(a, p, ChannelMap(a.s));
  TUT_CHECK_LAUNCH("infer_v1_apply_kernel");
}

template <class T>
void infer_v1_folded(cudaStream_t st, const InferArgs<T>& a, void* ws) {
  check_shape(a.s, "infer_v1_folded");
  const ChannelParams p = Scratch(a.s.C, 0, 0).params_at(ws);  // p.mean stays zero: the workspace is zeroed
  infer_fold_kernel<T><<<grid_of((a.s.C + 255) / 256, "infer_v1_folded"), 256, 0, st>>>(a, p);
  TUT_CHECK_LAUNCH("infer_fold_kernel");
  if (aligned16(a.x) && aligned16(a.y)) infer_v1_launch<kPack<T>, T>(st, a, p);
  else infer_v1_launch<1, T>(st, a, p);
}

template <class T>
std::vector<const void*> infer_v1_kernels() {
  return {TUT_KERNEL(infer_fold_kernel<T>), TUT_KERNEL(infer_v1_apply_kernel<kPack<T>, T>)};
}

}  // namespace ch05
