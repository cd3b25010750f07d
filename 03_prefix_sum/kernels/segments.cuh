// How chapter 03's block-wise versions split an array into segments, and the checks every
// launcher makes before it launches. Shared by v0-v5 and the exercise.
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

}  // namespace ch03
