// fwd v1_thread_per_byte: the source's first scheme, fused. Each thread takes 8 consecutive
// elements, writes their 8 outputs and one mask byte (bit j = element 8b + j), in a grid-stride
// loop over the mask's bytes.
//
// What changed since v0: one pass over x, and the mask is bits. The bytes are the floor's (8.125
// per element for float ReLU). Why it is still slow: the reads are not coalesced. In one load
// instruction, lane t reads element 8t + j: 32 lanes touch 32 addresses 32 bytes apart (float), so
// the warp's request spans 32 sectors where a coalesced one spans 4; the y stores likewise. The
// other 7 elements of each sector are read by the next 7 load instructions, so whether DRAM traffic
// grows depends on the L1 keeping those sectors meanwhile; the L1 and the load/store unit handle 8
// times the sectors per useful byte in any case. The profile's sectors/request column (32 here
// against 4 for v2, for float) and its DRAM and L1 columns show which cost dominates.
// (For half: 16-byte stride, 16 sectors per request against 2.)
//
// The source's code, and what is fixed here: its loop runs `i` over n elements while reading
// x[8i + j], eight times past the end; `offset` is int32 and wraps past 2^31; it writes y = `sum`, a
// variable that does not exist (x is meant); and `x > 0` as the bit drops NaN's gradient (see
// reference.hpp). Here the loop runs over the 4 * ceil(n / 32) bytes of the word array, elements past
// n are not read and leave their bits 0 (the padding rule), and all indices are 64-bit.
// SASS: scalar loads (LDG.E, 32-bit for float), no 128-bit accesses; one STG.E.U8 per byte.
#pragma once

#include "kernels/ops.cuh"
#include "tut/check.hpp"
#include "tut/elementwise.cuh"

namespace ch04 {

template <class T, bool kAdd>
__global__ void __launch_bounds__(256)
    fwd_v1_thread_per_byte_kernel(std::int64_t n, std::int64_t n_bytes, const T* __restrict__ x,
                                  const T* __restrict__ r, T* __restrict__ y, std::uint8_t* __restrict__ mask_bytes) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t b = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; b < n_bytes; b += stride) {
    unsigned bits = 0;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const std::int64_t i = 8 * b + j;
      if (i < n) {
        const T s = preactivation_at<kAdd>(x, r, i);
        y[i] = relu(s);
        bits |= (kept(s) ? 1u : 0u) << j;
      }
    }
    mask_bytes[b] = static_cast<std::uint8_t>(bits);
  }
}

template <class T, bool kAdd>
void fwd_v1_thread_per_byte(cudaStream_t s, const ForwardArgs<T>& a) {
  check_n(a.n, "fwd_v1_thread_per_byte");
  if (a.n == 0) return;
  // Every byte of every word, the padding bytes of the last one included.
  const std::int64_t n_bytes = 4 * tut::bitmask::word_count(a.n);
  std::int64_t blocks = 0;
  TUT_CUDA(tut::ew::waves_grid_size(n_bytes, 256, &blocks));
  fwd_v1_thread_per_byte_kernel<T, kAdd><<<grid_of(blocks, "fwd_v1_thread_per_byte"), 256, 0, s>>>(
      a.n, n_bytes, a.x, a.r, a.y, reinterpret_cast<std::uint8_t*>(a.mask));
  TUT_CHECK_LAUNCH("fwd_v1_thread_per_byte_kernel");
}

}  // namespace ch04
