// Launchers that are correct for any pointer: OneFlow's approach.
//
// A 16-byte load from an address that is not a multiple of 16 is a hardware fault ("misaligned
// address"), and it kills the CUDA context. Pointers into the middle of an array (a slice, a
// tensor view, a batch offset) are misaligned all the time. So before launching a vector
// kernel, check every pointer; if any is not aligned to the pack size, launch the scalar path.
// Both paths compute the same thing, so the caller never needs to know which one ran.
#pragma once

#include "tut/elementwise.cuh"
#include "kernels/copy.cuh"
#include "kernels/mul_k0_packed.cuh"
#include "kernels/ops.cuh"
#include "tut/check.hpp"

namespace ch02 {

inline void copy_tiles_checked(cudaStream_t s, std::int64_t n, std::int32_t* out, const std::int32_t* in) {
  if (tut::ew::all_aligned<4>(out, in)) copy_int4_tiles_4k(s, n, out, in);
  else copy_vectorized<std::int32_t>(s, n, out, in);
}

// The scalar path is chapter 01's generic template at width 1.
inline void mul_k0_checked(cudaStream_t s, std::int64_t n, __half* z, const __half* x, const __half* y) {
  if (tut::ew::all_aligned<kPack>(z, x, y)) mul_k0(s, n, z, x, y);
  else if (n > 0) TUT_CUDA(tut::ew::launch_packed<1>(tut::ew::SimpleFactory<Mul>{}, s, n, z, x, y));
}

}  // namespace ch02
