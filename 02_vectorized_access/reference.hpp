// CPU reference for chapter 02: plain C++ on the host (the half type and its conversions come
// from cuda_fp16.h; nothing here runs on the GPU).
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

namespace ch02 {

inline std::int32_t copy_ref(std::int32_t x) { return x; }

// As in chapter 01: the float product of two halves is exact, so one rounding gives __hmul's result.
inline __half mul_ref(__half a, __half b) { return __float2half_rn(__half2float(a) * __half2float(b)); }

// a*x + y with one rounding, as __hfma does. In double, a*x (22 significant bits) plus y is
// exact for every half input (the exponents span under 53 bits), so rounding that once to half
// is the correctly rounded fused result.
inline __half fma_ref(__half a, __half x, __half y) {
  return __double2half(static_cast<double>(__half2float(a)) * __half2float(x) + __half2float(y));
}

}  // namespace ch02
