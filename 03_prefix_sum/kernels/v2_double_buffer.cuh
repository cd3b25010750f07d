// v2_double_buffer: two shared arrays, one barrier per step.
//
// What changed: step k reads one array and writes the other, so no thread can overwrite a value
// another thread has yet to read in the same step. The barrier between the reads and the writes
// goes; the one between steps stays. Compiled per segment as v1 is (kCompiledSegments): unrolled,
// the swap of the two arrays is resolved by the compiler, each step's addresses are constants.
// Why it should be faster: half the barriers. Each step also writes every element (copying those
// with nothing to add), a few more shared stores for far less waiting.
// What to look for: the barrier stall share and the instructions per element, against v1.
#pragma once

#include "kernels/segments.cuh"

namespace ch03 {

// SEG > 0: segments of exactly SEG elements, blocks of SEG threads. SEG = 0: `segment` elements.
template <int SEG, class T>
__global__ void v2_double_buffer_kernel(const T* __restrict__ x, T* __restrict__ y, std::int64_t n,
                                        std::int64_t segment) {
  __shared__ T buffers[2][SEG > 0 ? SEG : kMaxSegment];
  const int tid = threadIdx.x;
  const std::int64_t seg = segment_of<SEG>(segment);
  for_each_segment<SEG>(n, segment, [&](std::int64_t s) {
    const T* xs = x + s * seg;
    T* ys = y + s * seg;
    const std::int64_t rest = n - s * seg;  // elements from the segment's start to the end of x
    // A compiled form's block is its segment; the run-time form's has up to 31 threads more.
    const bool mine = tid < (SEG > 0 ? rest : min64(seg, rest));
    int from = 0;  // the array this step reads
    buffers[from][tid] = mine ? xs[tid] : T{};  // past the end: 0, which changes no sum
    __syncthreads();
    const auto step = [&](int offset) {
      const T* in = buffers[from];
      const T own = in[tid];
      buffers[from ^ 1][tid] = tid >= offset ? in[tid - offset] + own : own;
      __syncthreads();  // this step's writes before the next step reads them
      from ^= 1;
    };
    if constexpr (SEG > 0) {
#pragma unroll
      for (int offset = 1; offset < SEG; offset <<= 1) step(offset);
    } else {
      const int len = static_cast<int>(min64(seg, rest));
      for (int offset = 1; offset < len; offset <<= 1) step(offset);
    }
    if (mine) ys[tid] = buffers[from][tid];
  });
}

template <int SEG, class T>
void v2_double_buffer_form(cudaStream_t stream, std::int64_t n, std::int64_t segment, T* y, const T* x) {
  check_segment_form<SEG>(n, segment);
  if (n == 0) return;
  v2_double_buffer_kernel<SEG, T>
      <<<segment_grid(n, segment), segment_threads(segment, 1), 0, stream>>>(x, y, n, segment);
  TUT_CHECK_LAUNCH("v2_double_buffer_kernel");
}

template <class T>
void v2_double_buffer(cudaStream_t stream, std::int64_t n, std::int64_t segment, T* y, const T* x) {
  with_segment_form(segment, [&](auto seg) { v2_double_buffer_form<decltype(seg)::value>(stream, n, segment, y, x); });
}

}  // namespace ch03
