// v3_warp_shuffle: warp scans with __shfl_up_sync, then a scan of the warp totals.
//
// What changed: the log2(segment) shared-memory steps become five shuffle steps inside each warp
// and one scan of the (at most 32) warp totals: kernels/warp_scan.cuh. Two barriers per segment
// instead of one per step. Compiled per segment as v1 and v2 are (kCompiledSegments): there is no
// step loop left to unroll, but the number of warps is a constant and the segment arithmetic shifts.
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

#include <type_traits>

namespace ch03 {

// SEG > 0: segments of exactly SEG elements, blocks of SEG threads. SEG = 0: `segment` elements.
template <int SEG, class T>
__global__ void v3_warp_shuffle_kernel(const T* __restrict__ x, T* __restrict__ y, std::int64_t n,
                                       std::int64_t segment) {
  using Barrier = std::conditional_t<(SEG > 0), WholeBlockOf<(SEG > 0 ? SEG : 32)>, WholeBlock>;
  __shared__ BlockScanStorage<T> storage;
  const int tid = threadIdx.x;
  const std::int64_t seg = segment_of<SEG>(segment);
  for_each_segment<SEG>(n, segment, [&](std::int64_t s) {
    const T* xs = x + s * seg;
    T* ys = y + s * seg;
    const std::int64_t rest = n - s * seg;
    // A compiled form's block is its segment; the run-time form's has up to 31 threads more.
    const bool mine = tid < (SEG > 0 ? rest : min64(seg, rest));
    const T v = mine ? xs[tid] : T{};
    T total;
    const T before = block_exclusive_scan<Barrier>(v, total, storage);
    if (mine) ys[tid] = before + v;
  });
}

template <int SEG, class T>
void v3_warp_shuffle_form(cudaStream_t stream, std::int64_t n, std::int64_t segment, T* y, const T* x) {
  check_segment_form<SEG>(n, segment);
  if (n == 0) return;
  v3_warp_shuffle_kernel<SEG, T>
      <<<segment_grid(n, segment), segment_threads(segment, 1), 0, stream>>>(x, y, n, segment);
  TUT_CHECK_LAUNCH("v3_warp_shuffle_kernel");
}

template <class T>
void v3_warp_shuffle(cudaStream_t stream, std::int64_t n, std::int64_t segment, T* y, const T* x) {
  with_segment_form(segment, [&](auto seg) { v3_warp_shuffle_form<decltype(seg)::value>(stream, n, segment, y, x); });
}

}  // namespace ch03
