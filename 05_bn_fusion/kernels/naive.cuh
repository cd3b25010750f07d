// The layout-unaware pieces versions 0 and 1 share: a framework's kernels without fusion and
// without a layout-specific reduction.
//
//   One block per channel for a statistic (PyTorch's NCHW scheme: its collect-statistics kernel
//   gives each channel a block). In NCHW the block's threads tile (n, hw): tx across a run of HW,
//   ty across n. In NHWC the same block reads every C-th element, one float per 32-byte sector.
//   Either way only C blocks run: C = 64 occupies under half of 132 SMs.
//   One element per thread for an element-wise pass, its channel found with a 64-bit division and
//   remainder, (e / inner) % C.
#pragma once

#include "kernels/common.cuh"

namespace ch05 {

inline constexpr int kNaiveBlock = 512;

// Threads across a run of HW: the power of two at or above HW, from 32 to 512.
__host__ __device__ inline int naive_bx(std::int64_t HW) {
  int bx = 32;
  while (bx < kNaiveBlock && bx < HW) bx *= 2;
  return bx;
}

// f(e) for every element e of channel c, spread over the block's threads.
template <class F>
__device__ __forceinline__ void for_each_of_channel(const Shape4& s, std::int64_t c, F&& f) {
  if (s.layout == Layout::nchw) {
    const int bx = naive_bx(s.HW), by = kNaiveBlock / bx;
    const int tx = static_cast<int>(threadIdx.x) % bx, ty = static_cast<int>(threadIdx.x) / bx;
    for (std::int64_t n = ty; n < s.N; n += by) {
      const std::int64_t base = (n * s.C + c) * s.HW;
      for (std::int64_t hw = tx; hw < s.HW; hw += bx) f(base + hw);
    }
  } else {
    for (std::int64_t j = threadIdx.x; j < s.per_channel(); j += kNaiveBlock) f(j * s.C + c);
  }
}

// The channel of element e, the plain way.
__device__ __forceinline__ int naive_channel(const Shape4& s, std::int64_t e) {
  return static_cast<int>((e / s.inner()) % s.C);
}

// Blocks of 256 for an element-wise pass over n elements: enough for 32 waves at most.
inline unsigned naive_grid(std::int64_t n) {
  std::int64_t blocks = 0;
  TUT_CUDA(tut::ew::waves_grid_size(std::max<std::int64_t>(n, 1), 256, &blocks));
  return grid_of(blocks, "naive_grid");
}

}  // namespace ch05
