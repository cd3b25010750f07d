// The pack kernel the sweep had before kernels/sweep.cuh took its present shape: one 16-byte pack
// per thread, one tile per block, four chains. Kept for `sweep_shapes` (sweep_shapes.cu), which
// times it beside the present shapes; the benchmark uses kernels/sweep.cuh only. The FMA chains and
// the operations are kernels/sweep.cuh's; only the shape differs.
#pragma once

#include "kernels/sweep.cuh"

#include <cstdint>

namespace ch07_previous {

using ch07::kBlock;
using ch07::apply;

// The main kernel: one 16-byte pack per thread (4 floats, or 4 pairs of halves), one tile of
// kBlock packs per block, as chapter 01's v4_tiles: 16 bytes in flight per thread at the memory end,
// four independent chains at the compute end. x and y must be 16-byte aligned; `packs` whole packs.
template <int kFlops, int kUnroll, class T, class Op>
__global__ void __launch_bounds__(kBlock) sweep_pack_kernel(std::int64_t packs, const T* __restrict__ x,
                                                            T* __restrict__ y, Op op) {
  struct alignas(16) Pack {
    T v[16 / sizeof(T)];
  };
  constexpr int kPer = 16 / sizeof(T);
  const std::int64_t p = blockIdx.x * static_cast<std::int64_t>(kBlock) + threadIdx.x;
  if (p >= packs) return;
  Pack in = reinterpret_cast<const Pack*>(x)[p];
  apply<kFlops, kUnroll, kPer>(in.v, op);
  reinterpret_cast<Pack*>(y)[p] = in;
}

}  // namespace ch07_previous
