// copy_scalar, copy_int2, copy_int4: one kernel, three access widths.
//
// What changes: the type each thread moves per iteration, int (4 bytes), int2 (8) or int4 (16).
// Why wider helps: a warp moves 128, 256 or 512 bytes per load instruction, so the same bytes
// need a half or a quarter of the load/store instructions and of the loop overhead, with more
// bytes in flight per thread. What it costs: registers to hold the wider values, and fewer
// threads' worth of work, so less parallelism on small arrays.
// SASS: LDG.E / STG.E, LDG.E.64 / STG.E.64, LDG.E.128 / STG.E.128 (tests/test_sass.cpp).
//
// The tail: the textbook int2 copy handles the odd element in "the thread whose index is n/2",
// which only exists when the grid covers n/2 threads; with a grid-stride loop over a smaller
// grid nobody copies it. Here the n % width leftover elements go to the first threads, for any
// n and any grid.
//
// These kernels need both pointers aligned to the vector width; copy_int4_checked
// (kernels/alignment.cuh) is the launcher that is correct for any pointer.
#pragma once

#include "kernels/launch.cuh"

#include <algorithm>
#include <cstdint>

namespace ch02 {

template <class Vec>
__global__ void __launch_bounds__(kBlock)
    copy_kernel(const std::int32_t* __restrict__ in, std::int32_t* __restrict__ out, std::int64_t n_vec,
                std::int64_t n, std::int64_t stride) {
  constexpr int kWidth = sizeof(Vec) / sizeof(std::int32_t);
  const Vec* __restrict__ vin = reinterpret_cast<const Vec*>(in);
  Vec* __restrict__ vout = reinterpret_cast<Vec*>(out);
  const std::int64_t tid = global_thread();
  for (std::int64_t i = tid; i < n_vec; i += stride) vout[i] = vin[i];
  for (std::int64_t i = n_vec * kWidth + tid; i < n; i += stride) out[i] = in[i];
}

template <class Vec>
void copy_vectorized(cudaStream_t stream, std::int64_t n, std::int32_t* out, const std::int32_t* in) {
  if (n == 0) return;
  const std::int64_t n_vec = n / (sizeof(Vec) / sizeof(std::int32_t));
  const Grid g = grid_for(n_vec);
  copy_kernel<Vec><<<g.blocks, kBlock, 0, stream>>>(in, out, n_vec, n, g.stride);
  TUT_CHECK_LAUNCH("copy_kernel");
}

// copy_int4_tiles: one contiguous tile of kBlock x kLoads int4 per block, kLoads independent
// 16-byte loads in flight per thread before any store, and as many blocks as there are tiles.
//
// What changed from copy_int4: no long-lived grid-stride loop. Each block reads one 16 KiB
// stretch and retires; the hardware keeps every SM full of fresh blocks. Why it helps: four
// loads are outstanding per thread instead of one, and the blocks in flight at any moment touch a
// compact range of addresses instead of the grid's whole stride, which DRAM serves more
// efficiently. On the H100 this closes most of the last few percent to cudaMemcpyAsync.
// The partial last tile and the n % 4 elements are copied by the whole grid after the tiles.
inline constexpr int kTileLoads = 4;

__global__ void __launch_bounds__(kBlock)
    copy_int4_tiles_kernel(const std::int32_t* __restrict__ in, std::int32_t* __restrict__ out, std::int64_t n_vec,
                           std::int64_t n, std::int64_t n_tiles) {
  constexpr std::int64_t kTile = std::int64_t{kBlock} * kTileLoads;
  const int4* __restrict__ vin = reinterpret_cast<const int4*>(in);
  int4* __restrict__ vout = reinterpret_cast<int4*>(out);
  for (std::int64_t t = blockIdx.x; t < n_tiles; t += gridDim.x) {
    const std::int64_t base = t * kTile + threadIdx.x;
    int4 v[kTileLoads];
#pragma unroll
    for (int u = 0; u < kTileLoads; ++u) v[u] = vin[base + u * kBlock];
#pragma unroll
    for (int u = 0; u < kTileLoads; ++u) vout[base + u * kBlock] = v[u];
  }
  const std::int64_t tid = global_thread();
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * kBlock;
  for (std::int64_t i = n_tiles * kTile + tid; i < n_vec; i += stride) vout[i] = vin[i];
  for (std::int64_t i = n_vec * 4 + tid; i < n; i += stride) out[i] = in[i];
}

inline void copy_int4_tiles(cudaStream_t stream, std::int64_t n, std::int32_t* out, const std::int32_t* in) {
  if (n == 0) return;
  const std::int64_t n_vec = n / 4;
  const std::int64_t n_tiles = n_vec / (std::int64_t{kBlock} * kTileLoads);
  const std::int64_t blocks = std::min<std::int64_t>(std::max<std::int64_t>(n_tiles, 1), 0x7fffffff);
  copy_int4_tiles_kernel<<<static_cast<unsigned>(blocks), kBlock, 0, stream>>>(in, out, n_vec, n, n_tiles);
  TUT_CHECK_LAUNCH("copy_int4_tiles_kernel");
}

// The library's copy, as a peer row: what the driver's own device-to-device copy achieves.
inline void copy_memcpy(cudaStream_t stream, std::int64_t n, std::int32_t* out, const std::int32_t* in) {
  if (n == 0) return;
  TUT_CUDA(cudaMemcpyAsync(out, in, static_cast<std::size_t>(n) * sizeof(std::int32_t), cudaMemcpyDeviceToDevice,
                           stream));
}

}  // namespace ch02
