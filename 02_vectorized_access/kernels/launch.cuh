// The one grid rule every kernel in this chapter uses, so the versions differ only in their
// loop bodies: chapter 01's waves rule (SMs x resident blocks x 32 waves, capped by the work).
#pragma once

#include "tut/elementwise.cuh"
#include "tut/check.hpp"

#include <cstdint>

namespace ch02 {

inline constexpr int kBlock = 256;

struct Grid {
  unsigned blocks;
  std::int64_t stride;  // threads in the grid, computed once on the host
};

inline Grid grid_for(std::int64_t work_items) {
  std::int64_t blocks = 0;
  TUT_CUDA(tut::ew::waves_grid_size(work_items > 0 ? work_items : 1, kBlock, &blocks));
  return {static_cast<unsigned>(blocks), blocks * kBlock};
}

inline __device__ std::int64_t global_thread() {
  return blockIdx.x * static_cast<std::int64_t>(kBlock) + threadIdx.x;
}

}  // namespace ch02
