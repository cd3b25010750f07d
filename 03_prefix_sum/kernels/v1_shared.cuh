// v1_shared: the same steps in shared memory, with the segment known at compile time.
//
// What changed: the segment is loaded into a shared array once, the log2(segment) steps read and
// write it there, and the result is stored once. Global traffic drops to the floor (one read, one
// write per element); the steps and their two barriers stay. And the kernel is compiled for the
// common segments (kCompiledSegments in segments.cuh: 128 ... 1024) with the segment as a template
// constant, as the source's kernels are: the step loop unrolls, each step's offset is an immediate
// in the shared-memory address, and the loop's counter, compare and branch go. Any other segment
// runs SEG = 0, the same code with the loop bound read at run time.
// Why it should be faster: a shared-memory access costs a wavefront in the SM instead of a trip
// through L1 to L2. And the run-time loop spends most of each step's instructions on its own
// bookkeeping (tests/test_sass.cpp counts both forms); with the SM's issue slots the limit, fewer
// instructions per step is time.
// What to look for: warp instructions per element and the barrier stall share, against v0; the
// step loop's back-edge in the SASS of SEG = 0 and none in the compiled forms.
//
// The source declares `extern __shared__ int buffer[threadsPerBlock]`. An extern shared array is
// the dynamically sized one, and a size makes no sense there: nvcc 13 warns (#20044) that it treats
// the declaration as a static array, which is what this file writes plainly. The chapter builds
// with that warning as an error (meson.build), so the mistake cannot come back.
#pragma once

#include "kernels/segments.cuh"

namespace ch03 {

// SEG > 0: segments of exactly SEG elements, blocks of SEG threads. SEG = 0: `segment` elements.
template <int SEG, class T>
__global__ void v1_shared_kernel(const T* __restrict__ x, T* __restrict__ y, std::int64_t n, std::int64_t segment) {
  __shared__ T buffer[SEG > 0 ? SEG : kMaxSegment];
  const int tid = threadIdx.x;
  const std::int64_t seg = segment_of<SEG>(segment);
  for_each_segment<SEG>(n, segment, [&](std::int64_t s) {
    // 64-bit to the segment's start; within it, at most 1024 elements, 32-bit indices.
    const T* xs = x + s * seg;
    T* ys = y + s * seg;
    const std::int64_t rest = n - s * seg;  // elements from the segment's start to the end of x
    // A compiled form's block is its segment; the run-time form's has up to 31 threads more.
    const bool mine = tid < (SEG > 0 ? rest : min64(seg, rest));
    buffer[tid] = mine ? xs[tid] : T{};  // past the end: 0, which changes no sum
    __syncthreads();
    const auto step = [&](int offset) {
      const bool adds = tid >= offset;
      T before;  // read and used under the same condition
      if (adds) before = buffer[tid - offset];
      __syncthreads();  // every read of this step before any write
      if (adds) buffer[tid] += before;
      __syncthreads();  // every write before the next step reads
    };
    if constexpr (SEG > 0) {
      // A short last segment takes every step too: past its length the steps add zeros.
#pragma unroll
      for (int offset = 1; offset < SEG; offset <<= 1) step(offset);
    } else {
      const int len = static_cast<int>(min64(seg, rest));
      for (int offset = 1; offset < len; offset <<= 1) step(offset);
    }
    if (mine) ys[tid] = buffer[tid];
  });
}

template <int SEG, class T>
void v1_shared_form(cudaStream_t stream, std::int64_t n, std::int64_t segment, T* y, const T* x) {
  check_segment_form<SEG>(n, segment);
  if (n == 0) return;
  v1_shared_kernel<SEG, T><<<segment_grid(n, segment), segment_threads(segment, 1), 0, stream>>>(x, y, n, segment);
  TUT_CHECK_LAUNCH("v1_shared_kernel");
}

template <class T>
void v1_shared(cudaStream_t stream, std::int64_t n, std::int64_t segment, T* y, const T* x) {
  with_segment_form(segment, [&](auto seg) { v1_shared_form<decltype(seg)::value>(stream, n, segment, y, x); });
}

}  // namespace ch03
