// k2: k0 with the pointer casts moved inside the loop.
//
// A cast is only a change of type for address arithmetic; it generates no instruction. The
// loads, stores and multiplies are the same as k0's (tests/test_sass.cpp compares the two).
#pragma once

#include "kernels/mul_tail.cuh"

namespace ch02 {

__global__ void __launch_bounds__(kBlock)
    mul_k2_cast_in_loop(const __half* x, const __half* y, __half* z, std::int64_t n_pack, std::int64_t n,
                        std::int64_t stride) {
  const std::int64_t tid = global_thread();
  for (std::int64_t i = tid; i < n_pack; i += stride) {
    const Pack a = reinterpret_cast<const Pack*>(x)[i];
    const Pack b = reinterpret_cast<const Pack*>(y)[i];
    Pack c;
#pragma unroll
    for (int j = 0; j < kPack; ++j) c.elem[j] = __hmul(a.elem[j], b.elem[j]);
    reinterpret_cast<Pack*>(z)[i] = c;
  }
  mul_tail(x, y, z, n_pack * kPack, n, tid, stride);
}

inline void mul_k2(cudaStream_t s, std::int64_t n, __half* z, const __half* x, const __half* y) {
  launch_mul(mul_k2_cast_in_loop, s, n, z, x, y);
}

}  // namespace ch02
