// EXERCISE (chapter 06): v1's idea for a window size of your choice, with padding. Read
// exercises/README.md first.
//
// Choose kKernel, then fill in unrolled_padded_kernel. Build with -Dexercises=true: the GPU tests
// grade this version like every other one of maxpool3d_f32 on cases with a kKernel^3 window
// (strides 1, 2, kKernel and kKernel + 1; padding 0 up to kKernel / 2; ceil_mode; odd sizes; every
// index format; inputs with NaN, +-inf, +-0 and many ties), and the benchmark adds your row. Other
// cases are refused (`refuses` below), so they are not graded.
#pragma once

#include "kernels/pool.cuh"

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

namespace exercise {

// Your window: kKernel x kKernel x kKernel, 2 to 8. The grader builds its cases from this number.
inline constexpr int kKernel = 5;

__global__ void unrolled_padded_kernel(ch06::ForwardArgs<float> a, ch06::OutDecoder dec) {
  // TODO: one output per thread (a grid-stride loop over a.w.out_numel(); dec(o) gives its
  // position). Its window starts at (od * s - p, oh * s - p, ow * s - p) and has kKernel cells per
  // axis; a cell outside the input is padding and counts as -inf. Unroll the loops over the
  // window with kKernel known at compile time, and test each cell with a predicate rather than a
  // branch. Start from -inf and the first cell inside the input, and let a value replace the
  // best so far when it is larger or NaN (ch06::replaces). Store with ch06::store_result.
  // Until you do, this kernel writes nothing and the grader reports the poison it left behind.
  (void)a;
  (void)dec;
}

inline std::string refuses(const ch06::Window& w) {
  if (w.k[0] != kKernel || w.k[1] != kKernel || w.k[2] != kKernel)
    return "the exercise's window is " + std::to_string(kKernel) + "^3";
  if (w.layout != ch06::Layout::ncdhw || w.dilated() || !ch06::plane_fits_32_bits(w))
    return "the exercise reads NCDHW, undilated, planes under 2^31 elements";
  return {};
}

inline void unrolled_padded(cudaStream_t stream, const ch06::ForwardArgs<float>& a) {
  static_assert(kKernel >= 2 && kKernel <= 8, "choose a window of 2 to 8 cells per axis");
  ch06::check_forward(a, "unrolled_padded");
  if (const std::string why = refuses(a.w); !why.empty()) throw tut::Unsupported(why);
  constexpr int kBlock = 256;
  unrolled_padded_kernel<<<ch06::grid_for(a.w.out_numel(), kBlock, "unrolled_padded"), kBlock, 0, stream>>>(
      a, ch06::OutDecoder(a.w));
  TUT_CHECK_LAUNCH("unrolled_padded_kernel");
}

}  // namespace exercise
