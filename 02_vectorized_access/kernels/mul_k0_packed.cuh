// k0: the Packed struct, pointers cast once before the loop, whole packs copied into registers.
//
// `const Pack a = px[i]` copies one 16-byte aligned struct: the compiler emits one LDG.E.128 per
// operand and one STG.E.128 for the result, and multiplies the eight halves in registers.
// This is the hand-written equivalent of chapter 01's generic template.
#pragma once

#include "kernels/mul_tail.cuh"

namespace ch02 {

__global__ void __launch_bounds__(kBlock)
    mul_k0_packed(const __half* x, const __half* y, __half* z, std::int64_t n_pack, std::int64_t n, std::int64_t stride) {
  const Pack* px = reinterpret_cast<const Pack*>(x);
  const Pack* py = reinterpret_cast<const Pack*>(y);
  Pack* pz = reinterpret_cast<Pack*>(z);
  const std::int64_t tid = global_thread();
  for (std::int64_t i = tid; i < n_pack; i += stride) {
    const Pack a = px[i];
    const Pack b = py[i];
    Pack c;
#pragma unroll
    for (int j = 0; j < kPack; ++j) c.elem[j] = __hmul(a.elem[j], b.elem[j]);
    pz[i] = c;
  }
  mul_tail(x, y, z, n_pack * kPack, n, tid, stride);
}

inline void mul_k0(cudaStream_t s, std::int64_t n, __half* z, const __half* x, const __half* y) {
  launch_mul(mul_k0_packed, s, n, z, x, y);
}

}  // namespace ch02
