// EXERCISE (chapter 04): the ballot forward of AddReLU on float32. Read exercises/README.md first.
//
// Fill in add_relu_ballot_kernel and, if you need to, the launcher. Build with -Dexercises=true and
// the GPU tests grade this version like every other one of add_relu_mask_f32 (y and the mask bit
// for bit, sizes 0 to 2^28 + 5, inputs with NaN, ±inf and ±0, operands offset by 1-7 elements,
// nothing written outside [0, n) or past the mask's last word), the SASS test looks for VOTE in
// your kernel, and the benchmark adds your row.
#pragma once

#include "kernels/ops.cuh"
#include "tut/check.hpp"

#include <cuda_runtime.h>

#include <cstdint>

namespace exercise {

__global__ void add_relu_ballot_kernel(std::int64_t n, const float* __restrict__ x, const float* __restrict__ r,
                                       float* __restrict__ y, std::uint32_t* __restrict__ mask) {
  // TODO: y[i] = relu(x[i] + r[i]) and bit i % 32 of mask[i / 32] set iff x[i] + r[i] is kept
  // (reference.hpp: > 0 or NaN). Use __ballot_sync, and make sure all 32 lanes of a warp reach it.
  // Until you do, this kernel writes nothing and the grader reports the poison it left behind.
  (void)n;
  (void)x;
  (void)r;
  (void)y;
  (void)mask;
}

inline void add_relu_ballot(cudaStream_t stream, const ch04::ForwardArgs<float>& a) {
  ch04::check_n(a.n, "add_relu_ballot");
  if (a.n == 0) return;
  // TODO: choose the grid for any n up to 2^36 (see kernels/fwd_v2_warp_ballot.cuh).
  add_relu_ballot_kernel<<<1, 256, 0, stream>>>(a.n, a.x, a.r, a.y, a.mask);
  TUT_CHECK_LAUNCH("add_relu_ballot_kernel");
}

}  // namespace exercise
