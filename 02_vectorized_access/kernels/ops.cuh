// The chapter's half operations as device functors: the generic template's reference rows and
// the exercise's. (The same pair of definitions as chapter 01's Mul, kept here so this chapter
// builds alone.)
#pragma once

#include <cuda_fp16.h>

namespace ch02 {

// z = x * y, rounded once: exactly __hmul.
struct Mul {
  __device__ __forceinline__ __half operator()(__half a, __half b) const { return __hmul(a, b); }
  // Two products in one HMUL2, on even, 4-byte-aligned element pairs (tut::ew::apply_pack).
  __device__ __forceinline__ void Apply2(__half* z, const __half* x, const __half* y) const {
    *reinterpret_cast<__half2*>(z) = __hmul2(*reinterpret_cast<const __half2*>(x), *reinterpret_cast<const __half2*>(y));
  }
};

// z = a * x + y, one rounding.
struct Fma {
  __device__ __forceinline__ __half operator()(__half a, __half x, __half y) const { return __hfma(a, x, y); }
  __device__ __forceinline__ void Apply2(__half* z, const __half* a, const __half* x, const __half* y) const {
    *reinterpret_cast<__half2*>(z) = __hfma2(*reinterpret_cast<const __half2*>(a), *reinterpret_cast<const __half2*>(x),
                                             *reinterpret_cast<const __half2*>(y));
  }
};

}  // namespace ch02
