// v5_coarsened_vector: v4 with each thread's four elements moved as one 16-byte access.
//
// What changed: load_blocked / store_blocked take their VEC path: one LDG.E.128 and one STG.E.128
// per thread instead of four 32-bit accesses. A warp's load now covers 512 consecutive bytes with
// one instruction, all of them used.
// Why it might be faster: four times fewer load and store instructions, and whole sectors per
// request. The source reports that int4 loads hardly helped; the table says what they do here.
// When it cannot: a 16-byte access needs a 16-byte aligned address, so the packed kernel runs only
// when x and y are aligned and the segment is a multiple of 4 elements (every segment then starts
// aligned). Otherwise the launcher runs v4's kernel, which is always correct.
#pragma once

#include "kernels/v4_coarsened.cuh"

namespace ch03 {

template <class T>
void v5_coarsened_vector(cudaStream_t stream, std::int64_t n, std::int64_t segment, T* y, const T* x) {
  check_segmented(n, segment);
  if (n == 0) return;
  static_assert(kCoarsenItems % kPack<T> == 0, "a thread's items must be whole packs");
  const bool packed = segment % kPack<T> == 0 && tut::ew::all_aligned<kPack<T>>(x, static_cast<const T*>(y));
  const unsigned grid = segment_grid(n, segment);
  const int block = segment_threads(segment, kCoarsenItems);
  if (packed)
    coarsened_segment_kernel<kCoarsenItems, true, T><<<grid, block, 0, stream>>>(x, y, n, segment);
  else
    coarsened_segment_kernel<kCoarsenItems, false, T><<<grid, block, 0, stream>>>(x, y, n, segment);
  TUT_CHECK_LAUNCH("coarsened_segment_kernel");
}

}  // namespace ch03
