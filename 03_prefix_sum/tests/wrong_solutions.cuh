// Known-wrong block-wise scans the grader must reject (tests/test_gpu.cu).
#pragma once

#include "kernels/segments.cuh"

namespace ch03::wrong {

// The source's kernel_0 without any bounds check: every thread of the last block copies and adds,
// so when n is not a multiple of the segment it writes sums past the end of y. (The source itself
// guards the additions but not the copy y[gtid] = x[gtid]; that copy moves the input's guard bytes
// onto the output's, which no comparison can see: memcheck's job, not the grader's.)
__global__ void unguarded_v0_kernel(const int* x, int* y, std::int64_t n, std::int64_t segment) {
  const int tid = threadIdx.x;
  const std::int64_t g = blockIdx.x * segment + tid;
  y[g] = x[g];
  __syncthreads();
  for (int offset = 1; offset <= static_cast<int>(blockDim.x) / 2; offset <<= 1) {
    int before = 0;
    if (tid >= offset) before = y[g - offset];
    __syncthreads();
    if (tid >= offset) y[g] += before;
    __syncthreads();
  }
}

inline void unguarded_v0(cudaStream_t stream, std::int64_t n, std::int64_t segment, int* y, const int* x) {
  if (n == 0) return;
  unguarded_v0_kernel<<<segment_grid(n, segment), static_cast<int>(segment), 0, stream>>>(x, y, n, segment);
  TUT_CHECK_LAUNCH("unguarded_v0_kernel");
}

// A block scan that forgets the warp totals: each warp scans its own 32 elements only, right for
// segments of at most 32 and wrong beyond.
__global__ void warps_only_kernel(const int* x, int* y, std::int64_t n, std::int64_t segment) {
  const int tid = threadIdx.x, lane = tid & 31;
  const std::int64_t start = blockIdx.x * segment;
  const bool mine = tid < min64(segment, n - start);
  int v = mine ? x[start + tid] : 0;
  for (int offset = 1; offset < 32; offset <<= 1) {
    const int before = __shfl_up_sync(0xffffffffu, v, offset);
    if (lane >= offset) v += before;
  }
  if (mine) y[start + tid] = v;
}

inline void warps_only(cudaStream_t stream, std::int64_t n, std::int64_t segment, int* y, const int* x) {
  if (n == 0) return;
  warps_only_kernel<<<segment_grid(n, segment), segment_threads(segment, 1), 0, stream>>>(x, y, n, segment);
  TUT_CHECK_LAUNCH("warps_only_kernel");
}

}  // namespace ch03::wrong
