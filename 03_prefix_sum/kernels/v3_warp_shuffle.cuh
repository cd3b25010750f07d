// v3_warp_shuffle: warp scans with __shfl_up_sync, then a scan of the warp totals.
//
// What changed: the log2(segment) shared-memory steps become five shuffle steps inside each warp
// and one scan of the (at most 32) warp totals: kernels/warp_scan.cuh. Two barriers per segment
// instead of one per step.
// Why it should be faster: a 1024-element segment took v2 ten steps, each a shared store, two
// shared loads and a barrier for every element; now each element costs five shuffles, and the block
// waits twice.
// What to look for: SHFL.UP in the SASS (a test checks it), and the shared-memory wavefronts and
// barrier stalls falling in the profile.
//
// The source (kernel_3) reads input[gtid] before checking gtid < n: the last block reads past the
// end of x when n is not a multiple of the segment. compute-sanitizer's memcheck reports that
// (tests/source_bugs.cu reproduces it); here a thread past the end holds 0 and reads nothing.
#pragma once

#include "kernels/segments.cuh"
#include "kernels/warp_scan.cuh"

namespace ch03 {

template <class T>
__global__ void v3_warp_shuffle_kernel(const T* __restrict__ x, T* __restrict__ y, std::int64_t n,
                                       std::int64_t segment) {
  __shared__ BlockScanStorage<T> storage;
  const int tid = threadIdx.x;
  const std::int64_t segments = ceil_div(n, segment);
  for (std::int64_t s = blockIdx.x; s < segments; s += gridDim.x) {
    const std::int64_t start = s * segment;
    const bool mine = tid < min64(segment, n - start);
    const T v = mine ? x[start + tid] : T{};
    T total;
    const T before = block_exclusive_scan(v, total, storage);
    if (mine) y[start + tid] = before + v;
  }
}

template <class T>
void v3_warp_shuffle(cudaStream_t stream, std::int64_t n, std::int64_t segment, T* y, const T* x) {
  check_segmented(n, segment);
  if (n == 0) return;
  v3_warp_shuffle_kernel<T>
      <<<segment_grid(n, segment), segment_threads(segment, 1), 0, stream>>>(x, y, n, segment);
  TUT_CHECK_LAUNCH("v3_warp_shuffle_kernel");
}

}  // namespace ch03
