// The tiles of the device-wide scans (v6, v7): blocks of 256 threads (v7: its data warps), each
// lane holding ROWS 16-byte packs (ROWS = 4: 16 elements per thread, 4096 per tile, 16 KiB of
// int32 or float).
//
// The layout is not v4's (thread t owning elements 16t ... 16t + 15). There, a warp's 16-byte load
// covers 2 KiB with lanes 64 bytes apart, and each store writes half of 32 different sectors; the
// first version of v6 and v7 built that way ran at 0.55 of copy on an H100, where CUB ran at 0.81.
// Here each warp owns 32 x 4 x ROWS consecutive elements, as ROWS rows of 128: in row k, lane l
// holds the four elements at 128k + 4l. Every load and store is a whole 512-byte row, like the copy kernel's.
// The price is a warp scan per row instead of one per thread: 20 shuffles for 16 elements.
//
//   load_rows / store_rows   one 16-byte pack per row per lane (scalar where the tile ends or the
//                            pointers are not 16-byte aligned)
//   scan_rows                each lane's packs scanned in registers, then each row across the
//                            warp, carried from row to row: the warp's 512 elements hold their
//                            inclusive (or exclusive) sums within the warp; returns the warp total
#pragma once

#include "kernels/blocked.cuh"
#include "kernels/segments.cuh"
#include "kernels/warp_scan.cuh"

#include <stdexcept>
#include <string>
#include <type_traits>

namespace ch03 {

inline constexpr int kTileThreads = 256;
inline constexpr int kRows = 4;  // v6's tiles; v7 picks its own (v7_decoupled_lookback.cuh)
inline constexpr int kTileItems = kRows * 4;
inline constexpr std::int64_t kTile = std::int64_t{kTileThreads} * kTileItems;

// Elements in a tile of THREADS threads (whole warps) with ROWS packs of 4 each.
template <int ROWS, int THREADS = kTileThreads>
__host__ __device__ constexpr std::int64_t tile_elements() {
  static_assert(THREADS % 32 == 0, "whole warps");
  return std::int64_t{THREADS} * ROWS * 4;
}

template <int ROWS = kRows, int THREADS = kTileThreads>
std::int64_t tile_count(std::int64_t n) {
  return ceil_div(n, tile_elements<ROWS, THREADS>());
}

template <int ROWS, bool VEC, class T>
__device__ __forceinline__ void load_rows(const T* tile, std::int64_t len, T (&v)[ROWS * kPack<T>]) {
  constexpr int P = kPack<T>;
  const int lane = threadIdx.x & 31;
  const std::int64_t warp_first = static_cast<std::int64_t>(threadIdx.x >> 5) * 32 * ROWS * P;
#pragma unroll
  for (int k = 0; k < ROWS; ++k) {
    const std::int64_t first = warp_first + (k * 32 + lane) * P;
    if (VEC && first + P <= len) {
      const auto p = *reinterpret_cast<const tut::ew::Packed<T, P>*>(tile + first);
#pragma unroll
      for (int j = 0; j < P; ++j) v[k * P + j] = p.elem[j];
    } else {
#pragma unroll
      for (int j = 0; j < P; ++j) v[k * P + j] = first + j < len ? tile[first + j] : T{};
    }
  }
}

template <int ROWS, bool VEC, class T>
__device__ __forceinline__ void store_rows(T* tile, std::int64_t len, const T (&v)[ROWS * kPack<T>]) {
  constexpr int P = kPack<T>;
  const int lane = threadIdx.x & 31;
  const std::int64_t warp_first = static_cast<std::int64_t>(threadIdx.x >> 5) * 32 * ROWS * P;
#pragma unroll
  for (int k = 0; k < ROWS; ++k) {
    const std::int64_t first = warp_first + (k * 32 + lane) * P;
    if (VEC && first + P <= len) {
      tut::ew::Packed<T, P> p;
#pragma unroll
      for (int j = 0; j < P; ++j) p.elem[j] = v[k * P + j];
      *reinterpret_cast<tut::ew::Packed<T, P>*>(tile + first) = p;
    } else {
#pragma unroll
      for (int j = 0; j < P; ++j)
        if (first + j < len) tile[first + j] = v[k * P + j];
    }
  }
}

template <int ROWS, bool EXCLUSIVE, class T>
__device__ __forceinline__ T scan_rows(T (&v)[ROWS * kPack<T>]) {
  constexpr int P = kPack<T>;
  const int lane = threadIdx.x & 31;
  T carried{};  // the rows before this one
#pragma unroll
  for (int k = 0; k < ROWS; ++k) {
    T pack[P];
#pragma unroll
    for (int j = 0; j < P; ++j) pack[j] = v[k * P + j];
    const T mine = thread_inclusive_scan(pack);
    const T inclusive = warp_inclusive_scan(mine);
    T before = __shfl_up_sync(kFullWarp, inclusive, 1);
    if (lane == 0) before = T{};
    add_offset(pack, carried + before, EXCLUSIVE);
#pragma unroll
    for (int j = 0; j < P; ++j) v[k * P + j] = pack[j];
    carried = carried + __shfl_sync(kFullWarp, inclusive, 31);
  }
  return carried;
}

template <int N, class T>
__device__ __forceinline__ void add_to_all(T (&v)[N], T offset) {
#pragma unroll
  for (int i = 0; i < N; ++i) v[i] = offset + v[i];
}

inline void check_scan(std::int64_t n) {
  if (n < 0 || n > kMaxElements) throw std::invalid_argument("n must be in [0, 2^36], got " + std::to_string(n));
}

inline void check_scratch(const char* version, std::size_t have, std::size_t need) {
  if (have < need)
    throw std::invalid_argument(std::string(version) + " needs " + std::to_string(need) +
                                " bytes of scratch memory, got " + std::to_string(have));
}

// Calls fn(vec, exclusive) with the two flags as std::bool_constant, so a generic lambda can use
// them as template arguments: the packed path when both pointers are 16-byte aligned (every tile
// then starts aligned).
template <class T, class Fn>
void with_tile_flags(const T* x, const T* y, bool exclusive, Fn&& fn) {
  const bool vec = tut::ew::all_aligned<kPack<T>>(x, y);
  using yes = std::true_type;
  using no = std::false_type;
  if (vec && exclusive) fn(yes{}, yes{});
  else if (vec) fn(yes{}, no{});
  else if (exclusive) fn(no{}, yes{});
  else fn(no{}, no{});
}

}  // namespace ch03
