// The element operations every version shares, on the device. Same definitions as reference.hpp:
//   pre-activation  s = x, or s = x + r (one rounding: FADD, or HADD for half)
//   y               s < 0 ? 0 : s      NaN stays NaN, -0 stays -0
//   kept            !(s <= 0)          s > 0 or NaN; the mask bit and the byte mask's 1
//   dx              kept ? dy : 0
// Half values are compared through float (exact: every half is a float).
#pragma once

#include "tut/bitmask.cuh"

#include <cuda_fp16.h>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace ch04 {

using tut::bitmask::Word;
inline constexpr unsigned kFullWarp = 0xffffffffu;

__device__ __forceinline__ float as_float(float v) { return v; }
__device__ __forceinline__ float as_float(__half v) { return __half2float(v); }

template <class T>
__device__ __forceinline__ T zero() {
  if constexpr (std::is_same_v<T, __half>) return __ushort_as_half(0);
  else return 0.0f;
}

__device__ __forceinline__ float add(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ __half add(__half a, __half b) { return __hadd(a, b); }

// s for ReLU (r unused) or AddReLU.
template <bool kAdd, class T>
__device__ __forceinline__ T preactivation(T x, T r) {
  if constexpr (kAdd) return add(x, r);
  else return x;
}
// The same, reading element i (r is not touched for ReLU, and may be null).
template <bool kAdd, class T>
__device__ __forceinline__ T preactivation_at(const T* __restrict__ x, const T* __restrict__ r, std::int64_t i) {
  if constexpr (kAdd) return add(x[i], r[i]);
  else return x[i];
}

template <class T>
__device__ __forceinline__ bool kept(T s) {
  return !(as_float(s) <= 0.0f);
}

template <class T>
__device__ __forceinline__ T relu(T s) {
  return as_float(s) < 0.0f ? zero<T>() : s;
}

template <class T>
__device__ __forceinline__ T masked_grad(T dy, bool keep) {
  return keep ? dy : zero<T>();
}

// What a forward launch gets: the input(s), and every output a version might write. r is null for
// ReLU; a version writes y and either `mask` (bitmask words) or `byte_mask` (one byte per element).
template <class T>
struct ForwardArgs {
  std::int64_t n = 0;
  const T* x = nullptr;
  const T* r = nullptr;
  T* y = nullptr;
  Word* mask = nullptr;
  std::uint8_t* byte_mask = nullptr;
};

// What a backward launch gets: dy, the three forms of the forward's record (a version reads one),
// and dx.
template <class T>
struct BackwardArgs {
  std::int64_t n = 0;
  const T* dy = nullptr;
  const T* y = nullptr;
  const std::uint8_t* byte_mask = nullptr;
  const Word* mask = nullptr;
  T* dx = nullptr;
};

// Every launcher's first line: a negative n is a caller's bug, reported as such.
inline void check_n(std::int64_t n, const char* who) {
  if (n < 0) throw std::invalid_argument(std::string(who) + ": n must be >= 0, got " + std::to_string(n));
}

// Blocks for a one-dimensional grid of `blocks`, or an error naming the launcher.
inline unsigned grid_of(std::int64_t blocks, const char* who) {
  if (blocks > 0x7fffffff) throw std::invalid_argument(std::string(who) + ": n needs more than 2^31-1 blocks");
  return static_cast<unsigned>(blocks < 1 ? 1 : blocks);
}

}  // namespace ch04
