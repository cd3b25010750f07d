// k3: k2 with the loop counted in half elements instead of packs.
//
// The start is tid * 8, the step stride * 8 and the bound n_pack * 8, so the loop carries
// element offsets and turns each into a byte address for three arrays. The wide accesses stay;
// what changes is the integer work around them (tests/test_sass.cpp counts it).
#pragma once

#include "kernels/mul_tail.cuh"

namespace ch02 {

__global__ void __launch_bounds__(kBlock)
    mul_k3_half_index(const __half* x, const __half* y, __half* z, std::int64_t n_pack, std::int64_t n,
                      std::int64_t stride) {
  const std::int64_t tid = global_thread();
  const std::int64_t pack_end = n_pack * kPack;
  for (std::int64_t i = tid * kPack; i < pack_end; i += stride * kPack) {
    const Pack a = *reinterpret_cast<const Pack*>(&x[i]);
    const Pack b = *reinterpret_cast<const Pack*>(&y[i]);
    Pack c;
#pragma unroll
    for (int j = 0; j < kPack; ++j) c.elem[j] = __hmul(a.elem[j], b.elem[j]);
    *reinterpret_cast<Pack*>(&z[i]) = c;
  }
  mul_tail(x, y, z, pack_end, n, tid, stride);
}

inline void mul_k3(cudaStream_t s, std::int64_t n, __half* z, const __half* x, const __half* y) {
  launch_mul(mul_k3_half_index, s, n, z, x, y);
}

}  // namespace ch02
