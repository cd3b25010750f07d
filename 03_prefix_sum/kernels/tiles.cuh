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

// The first element of this lane's pack in row k of its warp's rows.
template <int ROWS, int P>
__device__ __forceinline__ std::int64_t pack_first(int k) {
  const int lane = threadIdx.x & 31;
  return static_cast<std::int64_t>(threadIdx.x >> 5) * 32 * ROWS * P + (k * 32 + lane) * P;
}

template <int ROWS, bool VEC, class T>
__device__ __forceinline__ void load_rows(const T* tile, std::int64_t len, T (&v)[ROWS * kPack<T>]) {
  constexpr int P = kPack<T>;
#pragma unroll
  for (int k = 0; k < ROWS; ++k) {
    const std::int64_t first = pack_first<ROWS, P>(k);
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

// One lane's pack of one row: elements first ... first + P - 1 of the tile, those below len.
template <bool VEC, int P, class T>
__device__ __forceinline__ void store_pack(T* tile, std::int64_t len, std::int64_t first, const T (&pack)[P]) {
  if (VEC && first + P <= len) {
    tut::ew::Packed<T, P> p;
#pragma unroll
    for (int j = 0; j < P; ++j) p.elem[j] = pack[j];
    *reinterpret_cast<tut::ew::Packed<T, P>*>(tile + first) = p;
  } else {
#pragma unroll
    for (int j = 0; j < P; ++j)
      if (first + j < len) tile[first + j] = pack[j];
  }
}

template <int ROWS, bool VEC, class T>
__device__ __forceinline__ void store_rows(T* tile, std::int64_t len, const T (&v)[ROWS * kPack<T>]) {
  constexpr int P = kPack<T>;
#pragma unroll
  for (int k = 0; k < ROWS; ++k) {
    T pack[P];
#pragma unroll
    for (int j = 0; j < P; ++j) pack[j] = v[k * P + j];
    store_pack<VEC>(tile, len, pack_first<ROWS, P>(k), pack);
  }
}

// The row scan's step for one row: this lane's pack scanned in registers, the row across the warp,
// plus `carried` (the rows before it); `carried` then grows by the row's total.
template <bool EXCLUSIVE, int P, class T>
__device__ __forceinline__ void scan_row(T (&pack)[P], T& carried) {
  const int lane = threadIdx.x & 31;
  const T mine = thread_inclusive_scan(pack);
  const T inclusive = warp_inclusive_scan(mine);
  T before = __shfl_up_sync(kFullWarp, inclusive, 1);
  if (lane == 0) before = T{};
  add_offset(pack, carried + before, EXCLUSIVE);
  carried = carried + __shfl_sync(kFullWarp, inclusive, 31);
}

template <int ROWS, bool EXCLUSIVE, class T>
__device__ __forceinline__ T scan_rows(T (&v)[ROWS * kPack<T>]) {
  constexpr int P = kPack<T>;
  T carried{};  // the rows before this one
#pragma unroll
  for (int k = 0; k < ROWS; ++k) {
    T pack[P];
#pragma unroll
    for (int j = 0; j < P; ++j) pack[j] = v[k * P + j];
    scan_row<EXCLUSIVE>(pack, carried);
#pragma unroll
    for (int j = 0; j < P; ++j) v[k * P + j] = pack[j];
  }
  return carried;
}

// The same three steps with the tile parked in shared memory instead of registers (v7 with
// Config::smem_tile): each lane copies its own packs in with cp.async (16 bytes global to shared,
// no register on the way), scans them there one row at a time, and later reads them back to add
// the offset and store. A lane touches only its own packs, so no barrier is needed between the
// three; a warp's row is 512 consecutive bytes of shared memory, four wavefronts, no conflicts.
template <int ROWS, bool VEC, class T>
__device__ __forceinline__ void stage_rows(const T* tile, std::int64_t len, T* smem) {
  constexpr int P = kPack<T>;
#pragma unroll
  for (int k = 0; k < ROWS; ++k) {
    const std::int64_t first = pack_first<ROWS, P>(k);
    if (VEC && first + P <= len) {
      const auto dst = static_cast<unsigned>(__cvta_generic_to_shared(smem + first));
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(tile + first) : "memory");
    } else {
#pragma unroll
      for (int j = 0; j < P; ++j) smem[first + j] = first + j < len ? tile[first + j] : T{};
    }
  }
  asm volatile("cp.async.wait_all;" ::: "memory");
}

template <int ROWS, bool EXCLUSIVE, class T>
__device__ __forceinline__ T scan_rows_shared(T* smem) {
  constexpr int P = kPack<T>;
  T carried{};
#pragma unroll 4
  for (int k = 0; k < ROWS; ++k) {
    auto* at = reinterpret_cast<tut::ew::Packed<T, P>*>(smem + pack_first<ROWS, P>(k));
    tut::ew::Packed<T, P> p = *at;
    scan_row<EXCLUSIVE>(p.elem, carried);
    *at = p;
  }
  return carried;
}

template <int ROWS, bool VEC, class T>
__device__ __forceinline__ void store_rows_shared(T* tile, std::int64_t len, const T* smem, T offset) {
  constexpr int P = kPack<T>;
#pragma unroll 4
  for (int k = 0; k < ROWS; ++k) {
    const std::int64_t first = pack_first<ROWS, P>(k);
    const auto p = *reinterpret_cast<const tut::ew::Packed<T, P>*>(smem + first);
    T pack[P];
#pragma unroll
    for (int j = 0; j < P; ++j) pack[j] = offset + p.elem[j];
    store_pack<VEC>(tile, len, first, pack);
  }
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
