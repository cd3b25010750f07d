// k1: the same Packed pointers, but each element read and written straight from global memory.
//
// `pz[i].elem[j] = px[i].elem[j] * py[i].elem[j]`: the loop unrolls, yet every access is its own
// 16-bit LDG.E.U16 / STG.E.U16. Each store to z might alias the next loads of x and y (nothing
// says it cannot), so the compiler must keep them in order and cannot merge them into one wide
// access. Eight times the memory instructions of k0 for the same bytes.
#pragma once

#include "kernels/mul_tail.cuh"

namespace ch02 {

__global__ void __launch_bounds__(kBlock)
    mul_k1_from_global(const __half* x, const __half* y, __half* z, std::int64_t n_pack, std::int64_t n,
                       std::int64_t stride) {
  const Pack* px = reinterpret_cast<const Pack*>(x);
  const Pack* py = reinterpret_cast<const Pack*>(y);
  Pack* pz = reinterpret_cast<Pack*>(z);
  const std::int64_t tid = global_thread();
  for (std::int64_t i = tid; i < n_pack; i += stride) {
#pragma unroll
    for (int j = 0; j < kPack; ++j) pz[i].elem[j] = __hmul(px[i].elem[j], py[i].elem[j]);
  }
  mul_tail(x, y, z, n_pack * kPack, n, tid, stride);
}

inline void mul_k1(cudaStream_t s, std::int64_t n, __half* z, const __half* x, const __half* y) {
  launch_mul(mul_k1_from_global, s, n, z, x, y);
}

}  // namespace ch02
