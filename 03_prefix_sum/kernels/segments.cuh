// How chapter 03's block-wise versions split an array into segments, and the checks every
// launcher makes before it launches, and the segments v1-v3 are compiled for. Shared by v0-v5 and
// the exercise.
//
// A segment is scanned by one block. v0-v3 give each thread one element, so a segment is at most
// one block of 1024 threads; v4 and v5 give each thread several. The block is rounded up to whole
// warps: the threads past the segment's end hold the identity (0) and write nothing. The grid has
// one block per segment, up to the 2^31 - 1 blocks a launch allows; each block loops over segments
// `gridDim.x` apart, so any n up to 2^36 works.
#pragma once

#include "tut/check.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace ch03 {

inline constexpr std::int64_t kMaxSegment = 1024;
inline constexpr std::int64_t kMaxElements = std::int64_t{1} << 36;

__host__ __device__ constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
__host__ __device__ constexpr std::int64_t min64(std::int64_t a, std::int64_t b) { return a < b ? a : b; }

// Throws std::invalid_argument for an n or segment the block-wise versions cannot take.
inline void check_segmented(std::int64_t n, std::int64_t segment) {
  if (n < 0 || n > kMaxElements)
    throw std::invalid_argument("n must be in [0, 2^36], got " + std::to_string(n));
  if (segment < 1 || segment > kMaxSegment)
    throw std::invalid_argument("a segment must hold 1 to " + std::to_string(kMaxSegment) + " elements, got " +
                                std::to_string(segment));
}

// Threads per block when each holds `per_thread` elements of a segment: whole warps.
inline int segment_threads(std::int64_t segment, int per_thread) {
  return static_cast<int>(ceil_div(ceil_div(segment, per_thread), 32) * 32);
}

inline unsigned segment_grid(std::int64_t n, std::int64_t segment) {
  return static_cast<unsigned>(std::min<std::int64_t>(ceil_div(n, segment), 0x7fffffff));
}

// v1-v3 are compiled twice over: once for each of these segments, with the segment a template
// constant (SEG), and once with SEG = 0, which reads the segment at run time and takes any other
// length from 1 to 1024. With SEG known, the step loop unrolls (its offsets become immediates and
// its bound a constant), a block scans exactly one segment (no loop over segments, no 64-bit
// division to count them), and the shared arrays have their exact size.
inline constexpr int kCompiledSegments[] = {128, 256, 512, 1024};

// Calls f(std::integral_constant<int, SEG>{}) with SEG = segment when the segment is one of
// kCompiledSegments, and SEG = 0 (the run-time form) otherwise.
template <class F>
void with_segment_form(std::int64_t segment, F&& f) {
  static_assert(sizeof(kCompiledSegments) / sizeof(int) == 4, "one case per compiled segment below");
  switch (segment) {
    case 128: return f(std::integral_constant<int, 128>{});
    case 256: return f(std::integral_constant<int, 256>{});
    case 512: return f(std::integral_constant<int, 512>{});
    case 1024: return f(std::integral_constant<int, 1024>{});
    default: return f(std::integral_constant<int, 0>{});
  }
}

// check_segmented, and for a compiled form, that the segment is the one it was compiled for.
template <int SEG>
void check_segment_form(std::int64_t n, std::int64_t segment) {
  check_segmented(n, segment);
  if (SEG > 0 && segment != SEG)
    throw std::invalid_argument("a kernel compiled for segments of " + std::to_string(SEG) + " got " +
                                std::to_string(segment));
}

// Calls body(s) for each segment s the calling block scans. A compiled form's grid has a block for
// every segment (n <= 2^36 is at most 2^29 segments of 128), so the block scans one, blockIdx.x, and
// counts nothing; the run-time form's segment of 1 can make 2^36 segments, more than a grid holds,
// so each block loops over segments gridDim.x apart.
template <int SEG, class Body>
__device__ __forceinline__ void for_each_segment(std::int64_t n, std::int64_t segment, Body&& body) {
  static_assert(kMaxElements / (SEG > 0 ? SEG : kMaxElements) <= 0x7fffffff,
                "a compiled form needs a block per segment");
  if constexpr (SEG > 0) {
    body(static_cast<std::int64_t>(blockIdx.x));
  } else {
    const std::int64_t segments = ceil_div(n, segment);
    for (std::int64_t s = blockIdx.x; s < segments; s += gridDim.x) body(s);
  }
}

// The segment a kernel of form SEG scans: the constant, or the run-time argument.
template <int SEG>
__host__ __device__ constexpr std::int64_t segment_of(std::int64_t runtime_segment) {
  static_assert(SEG >= 0 && SEG <= kMaxSegment, "a segment holds 1 to 1024 elements");
  return SEG > 0 ? SEG : runtime_segment;
}

}  // namespace ch03
