// bwd v1_from_byte_mask: dx = mask_byte ? dy : 0, reading fwd v0's byte mask.
//
// What changed since v0: the 4 bytes of y per element become 1 byte of mask: 4 + 1 + 4 = 9 bytes per
// element (float), 1.11 times the bitmask floor. Same kernel shape as v0 (tut::ew::launch_tiles; a
// pack is 4 floats and their 4 mask bytes, or 8 halves and 8 bytes). Prediction: about
// 8.125 / 9 = 0.90 of copy on this problem's scale, and 9 / 12 = 0.75 of v0's time.
// SASS: LDG.E.128 for dy, a 32-bit load for the four mask bytes (float), STG.E.128.
#pragma once

#include "kernels/ops.cuh"
#include "tut/check.hpp"
#include "tut/elementwise.cuh"

namespace ch04 {

template <class T>
struct GradFromByte {
  __device__ T operator()(T dy, std::uint8_t keep) const { return masked_grad(dy, keep != 0); }
};

template <class T>
void bwd_v1_from_byte_mask(cudaStream_t s, const BackwardArgs<T>& a) {
  check_n(a.n, "bwd_v1_from_byte_mask");
  if (a.n == 0) return;
  TUT_CUDA(tut::ew::launch_tiles(tut::ew::SimpleFactory<GradFromByte<T>>{}, s, a.n, a.dx, a.dy, a.byte_mask));
}

template <class T>
const void* bwd_v1_kernel() {
  return reinterpret_cast<const void*>(
      tut::ew::tiles_kernel<tut::ew::SimpleFactory<GradFromByte<T>>, T, T, std::uint8_t>());
}

}  // namespace ch04
