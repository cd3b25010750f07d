// bwd v0_from_y: the baseline, what PyTorch's relu backward does. threshold_backward(dy, y, 0)
// reads the forward's output y only to ask y <= 0, and computes dx = y <= 0 ? 0 : dy.
//
// Bytes (float32): dy 4 + y 4 read, dx 4 written = 12 per element, against the bitmask floor of
// 4 + 1/8 + 4 = 8.125. The kernel is chapter 01's best element-wise shape (tut::ew::launch_tiles),
// so at the copy ceiling it takes 12 / 8.125 = 1.48 times the floor's time: expect about 0.68 of
// copy on this problem's scale, and any bitmask version that reaches the ceiling to take about
// 8.125 / 12 = 0.68 of this row's time.
// SASS: two LDG.E.128 and one STG.E.128 per thread.
#pragma once

#include "kernels/ops.cuh"
#include "tut/check.hpp"
#include "tut/elementwise.cuh"

namespace ch04 {

template <class T>
struct GradFromY {
  __device__ T operator()(T dy, T y) const { return masked_grad(dy, kept(y)); }
};

template <class T>
void bwd_v0_from_y(cudaStream_t s, const BackwardArgs<T>& a) {
  check_n(a.n, "bwd_v0_from_y");
  if (a.n == 0) return;
  TUT_CUDA(tut::ew::launch_tiles(tut::ew::SimpleFactory<GradFromY<T>>{}, s, a.n, a.dx, a.dy, a.y));
}

template <class T>
const void* bwd_v0_kernel() {
  return reinterpret_cast<const void*>(tut::ew::tiles_kernel<tut::ew::SimpleFactory<GradFromY<T>>, T, T, T>());
}

}  // namespace ch04
