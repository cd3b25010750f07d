// CPU reference for chapter 01: plain C++ on the host. (The half type and its float
// conversions come from cuda_fp16.h; nothing here runs on the GPU.)
#pragma once

#include <cuda_fp16.h>

namespace ch01 {

// ReLU as PyTorch defines it: negative values become 0, NaN stays NaN (the comparison is false
// for NaN), and -0 stays -0 (it is not < 0). fmaxf(x, 0) would turn NaN into 0.
inline float relu_ref(float x) { return x < 0.0f ? 0.0f : x; }

// The product of two halves is exact in float (11-bit significands give at most 22 bits), so
// rounding it once to half is the correctly rounded half product: bit-identical to __hmul.
inline __half mul_ref(__half a, __half b) { return __float2half_rn(__half2float(a) * __half2float(b)); }

}  // namespace ch01
