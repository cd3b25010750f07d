// The chapter's two operations as device functors, shared by every version.
#pragma once

#include <cuda_fp16.h>

namespace ch01 {

// Same definition as reference.hpp's relu_ref: NaN propagates, -0 stays -0.
struct Relu {
  __device__ __forceinline__ float operator()(float x) const { return x < 0.0f ? 0.0f : x; }
};

struct Mul {
  __device__ __forceinline__ __half operator()(__half a, __half b) const { return __hmul(a, b); }
  // Two products in one HMUL2. Called by ew::apply_pack on even, 4-byte-aligned element pairs.
  __device__ __forceinline__ void Apply2(__half* z, const __half* x, const __half* y) const {
    *reinterpret_cast<__half2*>(z) =
        __hmul2(*reinterpret_cast<const __half2*>(x), *reinterpret_cast<const __half2*>(y));
  }
};

}  // namespace ch01
