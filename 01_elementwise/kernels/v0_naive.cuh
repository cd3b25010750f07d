// v0_naive: one thread per element, grid = ceil(n / 256).
//
// The textbook kernel has no bounds check: it assumes n is a multiple of the block size, and for
// any other n the last block reads and writes past the arrays. Ours checks i < n. It also
// computes the index in 64 bits: with 32-bit `blockIdx.x * blockDim.x + threadIdx.x` the index
// wraps past 2^31 elements and the kernel writes at negative offsets.
//
// What limits it: each thread issues one load (4 bytes of float, 2 of half) and has nothing else
// to do while it waits, so the bytes in flight per SM are at most 2048 threads x 4 bytes. Little's
// law says the memory system needs more than that in flight to run at full bandwidth (the
// profile's "in flight" columns), and every block lives for one load, so the SMs also spend time
// launching and retiring a million blocks (achieved occupancy well under 100%).
// SASS: one LDG.E and one STG.E (float), two LDG.E.U16 and one STG.E.U16 (half).
#pragma once

#include "tut/check.hpp"

#include <cstdint>
#include <stdexcept>

namespace ch01 {

template <class Op, class R, class... In>
__global__ void v0_naive_kernel(Op op, std::int64_t n, R* __restrict__ out, const In* __restrict__... in) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = op(in[i]...);
}

template <class Op, class R, class... In>
void v0_naive(cudaStream_t stream, std::int64_t n, R* out, const In*... in) {
  if (n == 0) return;
  constexpr int block = 256;
  const std::int64_t grid = (n + block - 1) / block;
  if (grid > 0x7fffffff) throw std::invalid_argument("v0_naive: n needs more than 2^31-1 blocks");
  v0_naive_kernel<Op><<<static_cast<unsigned>(grid), block, 0, stream>>>(Op{}, n, out, in...);
  TUT_CHECK_LAUNCH("v0_naive_kernel");
}

}  // namespace ch01
