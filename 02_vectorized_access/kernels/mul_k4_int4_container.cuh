// k4: int4 as the container, its bytes reinterpreted as eight halves.
//
// The 16-byte int4 is what gets loaded and stored; the halves are views of it. The source this
// chapter follows builds the result in a plain `half z[8]` and reads it back as an int4: that
// array is only 2-byte aligned, so the read is undefined behaviour. Here it is alignas(16).
// The machine code is k0's: the container type does not matter, only the access width.
#pragma once

#include "kernels/mul_tail.cuh"

namespace ch02 {

__global__ void __launch_bounds__(kBlock)
    mul_k4_int4_container(const __half* x, const __half* y, __half* z, std::int64_t n_pack, std::int64_t n,
                          std::int64_t stride) {
  const std::int64_t tid = global_thread();
  for (std::int64_t i = tid; i < n_pack; i += stride) {
    const int4 tx = reinterpret_cast<const int4*>(x)[i];
    const int4 ty = reinterpret_cast<const int4*>(y)[i];
    const __half* hx = reinterpret_cast<const __half*>(&tx);
    const __half* hy = reinterpret_cast<const __half*>(&ty);
    alignas(16) __half hz[kPack];
#pragma unroll
    for (int j = 0; j < kPack; ++j) hz[j] = __hmul(hx[j], hy[j]);
    reinterpret_cast<int4*>(z)[i] = *reinterpret_cast<const int4*>(hz);
  }
  mul_tail(x, y, z, n_pack * kPack, n, tid, stride);
}

inline void mul_k4(cudaStream_t s, std::int64_t n, __half* z, const __half* x, const __half* y) {
  launch_mul(mul_k4_int4_container, s, n, z, x, y);
}

}  // namespace ch02
