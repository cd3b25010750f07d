// v6_reduce_then_scan: a device-wide scan from three kernels.
//
// A block-wise scan (v0-v5) is not a prefix sum: each segment starts again from 0. To finish it, a
// tile must add the sum of every element before it. Reduce-then-scan gets those sums first:
//   1. tile_reduce_kernel    every tile's total into partials[tile] (reads n elements)
//   2. scan_partials_kernel  one block turns partials into their exclusive scan, in place
//   3. tile_scan_kernel      every tile scanned again, plus partials[tile] (reads n, writes n)
// About 3n elements move instead of the 2n floor: expect at most about 2/3 of the copy rate.
// What to look for: the three kernels' times in the profile; the first reads n at copy speed, the
// third moves 2n.
#pragma once

#include "kernels/tiles.cuh"
#include "kernels/warp_scan.cuh"

namespace ch03 {

inline std::size_t v6_scratch_bytes(std::int64_t n, std::size_t element_bytes) {
  return static_cast<std::size_t>(std::max<std::int64_t>(1, tile_count(n))) * element_bytes;
}

template <bool VEC, class T>
__global__ __launch_bounds__(kTileThreads) void tile_reduce_kernel(const T* __restrict__ x, std::int64_t n,
                                                                   T* __restrict__ partials) {
  __shared__ BlockScanStorage<T> storage;
  const std::int64_t base = blockIdx.x * kTile;
  T v[kTileItems];
  load_rows<kRows, VEC>(x + base, min64(kTile, n - base), v);
  T mine{};
#pragma unroll
  for (int i = 0; i < kTileItems; ++i) mine = mine + v[i];
  T total;
  warp_offset_in_block(warp_sum(mine), total, storage);
  if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

// One block of 1024 threads walks the partials 4096 at a time, carrying the running sum.
template <class T>
__global__ __launch_bounds__(1024) void scan_partials_kernel(T* partials, std::int64_t tiles) {
  __shared__ BlockScanStorage<T> storage;
  constexpr int kItems = 4;
  T carry{};
  for (std::int64_t start = 0; start < tiles; start += 1024 * kItems) {
    const std::int64_t len = min64(1024 * kItems, tiles - start);
    T v[kItems];
    load_blocked<kItems, false>(partials + start, len, v);
    const T mine = thread_inclusive_scan(v);
    T total;
    const T before = block_exclusive_scan(mine, total, storage);
    add_offset(v, carry + before, true);
    store_blocked<kItems, false>(partials + start, len, v);
    carry = carry + total;
  }
}

template <bool VEC, bool EXCLUSIVE, class T>
__global__ __launch_bounds__(kTileThreads) void tile_scan_kernel(const T* __restrict__ x, T* __restrict__ y,
                                                                 std::int64_t n, const T* __restrict__ partials) {
  __shared__ BlockScanStorage<T> storage;
  const std::int64_t base = blockIdx.x * kTile;
  const std::int64_t len = min64(kTile, n - base);
  T v[kTileItems];
  load_rows<kRows, VEC>(x + base, len, v);
  const T warp_total = scan_rows<kRows, EXCLUSIVE>(v);
  T total;
  const T before = warp_offset_in_block(warp_total, total, storage);
  add_to_all(v, partials[blockIdx.x] + before);
  store_rows<kRows, VEC>(y + base, len, v);
}

template <class T>
void v6_reduce_then_scan(cudaStream_t stream, std::int64_t n, bool exclusive, T* y, const T* x, void* scratch,
                         std::size_t scratch_bytes) {
  check_scan(n);
  if (n == 0) return;
  check_scratch("v6_reduce_then_scan", scratch_bytes, v6_scratch_bytes(n, sizeof(T)));
  const std::int64_t tiles = tile_count(n);
  T* partials = static_cast<T*>(scratch);
  const auto grid = static_cast<unsigned>(tiles);
  with_tile_flags(x, y, exclusive, [&](auto vec, auto excl) {
    tile_reduce_kernel<decltype(vec)::value, T><<<grid, kTileThreads, 0, stream>>>(x, n, partials);
    TUT_CHECK_LAUNCH("tile_reduce_kernel");
    scan_partials_kernel<T><<<1, 1024, 0, stream>>>(partials, tiles);
    TUT_CHECK_LAUNCH("scan_partials_kernel");
    tile_scan_kernel<decltype(vec)::value, decltype(excl)::value, T><<<grid, kTileThreads, 0, stream>>>(x, y, n, partials);
    TUT_CHECK_LAUNCH("tile_scan_kernel");
  });
}

}  // namespace ch03
