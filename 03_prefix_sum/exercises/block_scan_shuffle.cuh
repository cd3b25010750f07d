// Exercise 03: the warp-shuffle block scan (v3's core), written by you.
//
// Fill in block_scan_shuffle_kernel: an inclusive scan of each segment of `segment` elements
// (1 to 1024), one element per thread, with __shfl_up_sync inside each warp and a scan of the warp
// totals across the block. exercises/README.md says what is checked and how to grade it.
//
// Do not include kernels/warp_scan.cuh: the point is to write the warp scan and the block scan.
// The launcher below is done; it gives each block ceil(segment / 32) whole warps.
#pragma once

#include "kernels/segments.cuh"
#include "tut/check.hpp"

namespace exercise {

template <class T>
__global__ void block_scan_shuffle_kernel(const T* __restrict__ x, T* __restrict__ y, std::int64_t n,
                                          std::int64_t segment) {
  const std::int64_t segments = ch03::ceil_div(n, segment);
  for (std::int64_t s = blockIdx.x; s < segments; s += gridDim.x) {
    const std::int64_t start = s * segment;
    const bool mine = threadIdx.x < ch03::min64(segment, n - start);
    // TODO: replace this copy with the scan. Read x only where `mine`; every thread of the block
    // (past the segment's end too) must take part in the shuffles and the barriers.
    if (mine) y[start + threadIdx.x] = x[start + threadIdx.x];
  }
}

template <class T>
void block_scan_shuffle(cudaStream_t stream, std::int64_t n, std::int64_t segment, T* y, const T* x) {
  ch03::check_segmented(n, segment);
  if (n == 0) return;
  block_scan_shuffle_kernel<T>
      <<<ch03::segment_grid(n, segment), ch03::segment_threads(segment, 1), 0, stream>>>(x, y, n, segment);
  TUT_CHECK_LAUNCH("block_scan_shuffle_kernel");
}

}  // namespace exercise
