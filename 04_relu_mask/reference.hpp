// CPU reference for chapter 04: plain C++ on the host. (The half type and its float conversions
// come from cuda_fp16.h; nothing here runs on the GPU.)
//
// The NaN and zero policy, which every kernel of the chapter follows and the tests check:
//   forward   s = x (ReLU) or s = x + r (AddReLU), rounded once to the element type;
//             y = s < 0 ? 0 : s. NaN stays NaN and -0 stays -0 (neither is < 0), as chapter 01's
//             relu_ref and torch.relu (NaN-propagating).
//   mask      element i is kept iff !(s <= 0): s > 0, or s is NaN. -0 and +0 are not kept.
//   backward  dx = kept ? dy : +0.
// The mask's rule is PyTorch's backward, not the source's `x > 0`: torch's relu backward is
// threshold_backward(dy, y, 0), which computes `y <= 0 ? 0 : dy`, so a NaN output lets dy through.
// A mask built from `x > 0` would zero the gradient there. Because y <= 0 exactly when s <= 0
// (NaN included), reading y (v0_from_y) and reading the mask give the same dx, bit for bit.
//
// Sums that are NaN: CUDA's float and half additions return the canonical NaN (all exponent and
// significand bits set, sign clear) whatever the operands' payloads, while the host's addition keeps
// an operand's payload. The reference returns the canonical NaN for a NaN sum, so AddReLU's y is
// still compared bit for bit. ReLU without the add passes x's NaN through untouched.
#pragma once

#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace ch04 {

inline float to_float(float v) { return v; }
inline float to_float(__half v) { return __half2float(v); }

template <class T>
T zero_of() {
  if constexpr (std::is_same_v<T, __half>) return __float2half_rn(0.0f);
  else return 0.0f;
}

// The NaN a GPU addition returns.
template <class T>
T canonical_nan() {
  if constexpr (std::is_same_v<T, __half>) {
    __half_raw raw;
    raw.x = 0x7fff;
    return __half(raw);
  } else {
    const std::uint32_t bits = 0x7fffffffu;
    float out;
    std::memcpy(&out, &bits, sizeof(out));
    return out;
  }
}

// x + r rounded once. For half, the float sum of two halves rounded to half is the correctly
// rounded half sum (float's 24 bits are at least 2 x 11 + 2, so rounding twice cannot differ):
// bit-identical to __hadd.
inline float add_ref(float x, float r) {
  const float s = x + r;
  return std::isnan(s) ? canonical_nan<float>() : s;
}
inline __half add_ref(__half x, __half r) {
  const float s = __half2float(x) + __half2float(r);
  return std::isnan(s) ? canonical_nan<__half>() : __float2half_rn(s);
}

template <class T>
bool kept_ref(T s) {
  return !(to_float(s) <= 0.0f);
}

template <class T>
T relu_ref(T s) {
  return to_float(s) < 0.0f ? zero_of<T>() : s;
}

template <class T>
T backward_ref(T dy, bool kept) {
  return kept ? dy : zero_of<T>();
}

}  // namespace ch04
