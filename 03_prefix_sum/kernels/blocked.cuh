// Thread coarsening, the pieces v4 and every later version share: each thread of a block owns
// ITEMS consecutive elements of a tile (thread t holds [t * ITEMS, (t + 1) * ITEMS)), scans them in
// registers one after another, and takes part in one block scan for all of them.
//
// load_blocked / store_blocked: with VEC, a thread whose ITEMS elements are all inside the tile
// moves them as 16-byte packs (one LDG.E.128 per 4 floats or ints); the caller guarantees the
// tile's address is 16-byte aligned. Elements past the tile's `len` read as 0 and are not written.
#pragma once

#include "tut/elementwise.cuh"

#include <cuda_runtime.h>

#include <cstdint>

namespace ch03 {

template <class T>
inline constexpr int kPack = 16 / sizeof(T);

template <int ITEMS, bool VEC, class T>
__device__ __forceinline__ void load_blocked(const T* tile, std::int64_t len, T (&v)[ITEMS]) {
  const std::int64_t first = static_cast<std::int64_t>(threadIdx.x) * ITEMS;
  if constexpr (VEC) {
    constexpr int P = kPack<T>;
    static_assert(ITEMS % P == 0, "a thread's items must be whole 16-byte packs");
    if (first + ITEMS <= len) {
      const auto* packs = reinterpret_cast<const tut::ew::Packed<T, P>*>(tile + first);
#pragma unroll
      for (int k = 0; k < ITEMS / P; ++k) {
        const tut::ew::Packed<T, P> p = packs[k];
#pragma unroll
        for (int j = 0; j < P; ++j) v[k * P + j] = p.elem[j];
      }
      return;
    }
  }
#pragma unroll
  for (int i = 0; i < ITEMS; ++i) v[i] = first + i < len ? tile[first + i] : T{};
}

template <int ITEMS, bool VEC, class T>
__device__ __forceinline__ void store_blocked(T* tile, std::int64_t len, const T (&v)[ITEMS]) {
  const std::int64_t first = static_cast<std::int64_t>(threadIdx.x) * ITEMS;
  if constexpr (VEC) {
    constexpr int P = kPack<T>;
    if (first + ITEMS <= len) {
      auto* packs = reinterpret_cast<tut::ew::Packed<T, P>*>(tile + first);
#pragma unroll
      for (int k = 0; k < ITEMS / P; ++k) {
        tut::ew::Packed<T, P> p;
#pragma unroll
        for (int j = 0; j < P; ++j) p.elem[j] = v[k * P + j];
        packs[k] = p;
      }
      return;
    }
  }
#pragma unroll
  for (int i = 0; i < ITEMS; ++i)
    if (first + i < len) tile[first + i] = v[i];
}

// v[i] becomes v[0] + ... + v[i]; returns the thread's total.
template <int ITEMS, class T>
__device__ __forceinline__ T thread_inclusive_scan(T (&v)[ITEMS]) {
#pragma unroll
  for (int i = 1; i < ITEMS; ++i) v[i] = v[i - 1] + v[i];
  return v[ITEMS - 1];
}

// The thread's inclusive scan plus the offset of everything before it: inclusive results, or,
// shifted by one, exclusive ones (0 + offset first).
template <int ITEMS, class T>
__device__ __forceinline__ void add_offset(T (&v)[ITEMS], T offset, bool exclusive) {
  if (exclusive) {
#pragma unroll
    for (int i = ITEMS - 1; i > 0; --i) v[i] = offset + v[i - 1];
    v[0] = offset;
  } else {
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) v[i] = offset + v[i];
  }
}

}  // namespace ch03
