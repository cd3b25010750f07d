// v0_global: Hillis-Steele in global memory. The baseline.
//
// What it does: the block copies its segment from x to y, then runs log2(segment) steps; in step
// `offset` every element adds the one `offset` places before it (within the segment). Each step
// reads before anyone writes, so it needs two barriers: one between the reads and the writes, one
// before the next step's reads.
// Why it is slow: every step reads and writes the whole segment in global memory (L1/L2), so a
// 1024-element segment moves 10 x 2 x 4 bytes per element through the memory pipeline for 8 that
// the problem needs, and each step waits at two barriers.
// What to look for: the profile's LSU pipe and barrier stalls, and DRAM far below copy.
//
// The source (kernel_0) writes y[gtid] = x[gtid] for every thread of the last block, past n when n
// is not a multiple of the segment; here a thread only touches its element when it exists.
#pragma once

#include "kernels/segments.cuh"

namespace ch03 {

template <class T>
__global__ void v0_global_kernel(const T* __restrict__ x, T* y, std::int64_t n, std::int64_t segment) {
  const int tid = threadIdx.x;
  const std::int64_t segments = ceil_div(n, segment);
  for (std::int64_t s = blockIdx.x; s < segments; s += gridDim.x) {
    const std::int64_t start = s * segment;
    const std::int64_t len = min64(segment, n - start);  // the same for the whole block
    const bool mine = tid < len;
    const std::int64_t g = start + tid;
    if (mine) y[g] = x[g];
    __syncthreads();
    for (std::int64_t offset = 1; offset < len; offset <<= 1) {
      T before{};
      if (mine && tid >= offset) before = y[g - offset];
      __syncthreads();  // every read of this step before any write
      if (mine && tid >= offset) y[g] += before;
      __syncthreads();  // every write before the next step reads
    }
  }
}

template <class T>
void v0_global(cudaStream_t stream, std::int64_t n, std::int64_t segment, T* y, const T* x) {
  check_segmented(n, segment);
  if (n == 0) return;
  v0_global_kernel<T><<<segment_grid(n, segment), segment_threads(segment, 1), 0, stream>>>(x, y, n, segment);
  TUT_CHECK_LAUNCH("v0_global_kernel");
}

}  // namespace ch03
