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
// These kernels need both pointers aligned to the vector width; copy_tiles_checked
// (kernels/alignment.cuh) is the launcher that is correct for any pointer.
#pragma once

#include "kernels/launch.cuh"

#include <algorithm>
#include <stdexcept>
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

// copy_int4_tiles_4k, copy_int4_tiles and copy_int4_tiles_1024: one contiguous tile of
// kThreads x kLoads int4 per block, kLoads independent 16-byte loads per thread issued before any
// store, and as many blocks as there are tiles.
//
// What changed from copy_int4: no long-lived grid-stride loop. Each block reads one tile (16 KiB
// for 256 threads x 4 loads, 32 KiB for 1024 threads x 2, 4 KiB for 256 threads x 1: the shape
// of PyTorch's element-wise kernels), writes it and retires; the block
// scheduler keeps every SM full of fresh blocks, and the blocks in flight at any moment cover a
// compact range of addresses instead of the grid's whole stride. Which tile shape is fastest
// differs between GPUs; the copy ceiling (common/src/timing.cu) times both shapes beside the
// driver's copy, and the lesson's table shows the winner on each GPU.
// The partial last tile and the n % 4 elements are copied by the whole grid after the tiles.
template <int kThreads, int kLoads>
__global__ void __launch_bounds__(kThreads)
    copy_tiles_kernel(const std::int32_t* __restrict__ in, std::int32_t* __restrict__ out, std::int64_t n_vec,
                      std::int64_t n, std::int64_t n_tiles) {
  constexpr std::int64_t kTile = std::int64_t{kThreads} * kLoads;
  const int4* __restrict__ vin = reinterpret_cast<const int4*>(in);
  int4* __restrict__ vout = reinterpret_cast<int4*>(out);
  if (blockIdx.x < n_tiles) {
    const std::int64_t base = blockIdx.x * kTile + threadIdx.x;
    int4 v[kLoads];
#pragma unroll
    for (int u = 0; u < kLoads; ++u) v[u] = vin[base + u * kThreads];
#pragma unroll
    for (int u = 0; u < kLoads; ++u) vout[base + u * kThreads] = v[u];
  }
  // Less than one tile is left: no point unrolling these loops.
  const std::int64_t tid = blockIdx.x * static_cast<std::int64_t>(kThreads) + threadIdx.x;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * kThreads;
#pragma unroll 1
  for (std::int64_t i = n_tiles * kTile + tid; i < n_vec; i += stride) vout[i] = vin[i];
#pragma unroll 1
  for (std::int64_t i = n_vec * 4 + tid; i < n; i += stride) out[i] = in[i];
}

template <int kThreads, int kLoads>
void copy_tiles(cudaStream_t stream, std::int64_t n, std::int32_t* out, const std::int32_t* in) {
  if (n == 0) return;
  const std::int64_t n_vec = n / 4;
  const std::int64_t n_tiles = n_vec / (std::int64_t{kThreads} * kLoads);
  if (n_tiles > 0x7fffffff) throw std::invalid_argument("copy_tiles: more tiles than a grid can have blocks");
  copy_tiles_kernel<kThreads, kLoads><<<static_cast<unsigned>(std::max<std::int64_t>(n_tiles, 1)), kThreads, 0, stream>>>(
      in, out, n_vec, n, n_tiles);
  TUT_CHECK_LAUNCH("copy_tiles_kernel");
}

inline void copy_int4_tiles_4k(cudaStream_t s, std::int64_t n, std::int32_t* out, const std::int32_t* in) {
  copy_tiles<256, 1>(s, n, out, in);
}
inline void copy_int4_tiles(cudaStream_t s, std::int64_t n, std::int32_t* out, const std::int32_t* in) {
  copy_tiles<256, 4>(s, n, out, in);
}
inline void copy_int4_tiles_1024(cudaStream_t s, std::int64_t n, std::int32_t* out, const std::int32_t* in) {
  copy_tiles<1024, 2>(s, n, out, in);
}

// The library's copy, as a peer row: what the driver's own device-to-device copy achieves.
inline void copy_memcpy(cudaStream_t stream, std::int64_t n, std::int32_t* out, const std::int32_t* in) {
  if (n == 0) return;
  TUT_CUDA(cudaMemcpyAsync(out, in, static_cast<std::size_t>(n) * sizeof(std::int32_t), cudaMemcpyDeviceToDevice,
                           stream));
}

}  // namespace ch02
