// fwd v0_two_kernels: the unfused baseline. One kernel computes y = relu(s), a second one reads the
// input again and writes a byte mask, one byte (0 or 1) per element.
//
// Both kernels are chapter 01's best element-wise shape (tut::ew::launch_tiles: one 16-byte pack per
// thread, one tile per block, alignment fall-back), so what this row measures is the strategy, not
// a weak kernel. Why it is slower, in bytes (float32, ReLU): the floor of the problem is
// 4 read + 4 + 1/8 written = 8.125 bytes per element; v0 reads x twice and writes a whole byte per
// element, 4 + 4 (y) + 4 + 1 (mask) = 13 bytes. At the copy ceiling it takes 13 / 8.125 = 1.6 times
// the floor's time, so expect about 0.62 of copy on the table's scale. The backward that reads its
// byte mask moves 4 + 1 + 4 = 9 bytes per element instead of 8.125.
// SASS: the y kernel loads and stores 128 bits; the mask kernel loads 128 bits and stores 32 (four
// bytes for four floats).
#pragma once

#include "kernels/ops.cuh"
#include "tut/check.hpp"
#include "tut/elementwise.cuh"

namespace ch04 {

template <class T>
struct ReluOp {
  __device__ T operator()(T x) const { return relu(x); }
  __device__ T operator()(T x, T r) const { return relu(add(x, r)); }
};

template <class T>
struct ByteMaskOp {
  __device__ std::uint8_t operator()(T x) const { return kept(x) ? 1 : 0; }
  __device__ std::uint8_t operator()(T x, T r) const { return kept(add(x, r)) ? 1 : 0; }
};

template <class T, bool kAdd>
void fwd_v0_two_kernels(cudaStream_t s, const ForwardArgs<T>& a) {
  check_n(a.n, "fwd_v0_two_kernels");
  if (a.n == 0) return;
  using tut::ew::SimpleFactory;
  if constexpr (kAdd) {
    TUT_CUDA(tut::ew::launch_tiles(SimpleFactory<ReluOp<T>>{}, s, a.n, a.y, a.x, a.r));
    TUT_CUDA(tut::ew::launch_tiles(SimpleFactory<ByteMaskOp<T>>{}, s, a.n, a.byte_mask, a.x, a.r));
  } else {
    TUT_CUDA(tut::ew::launch_tiles(SimpleFactory<ReluOp<T>>{}, s, a.n, a.y, a.x));
    TUT_CUDA(tut::ew::launch_tiles(SimpleFactory<ByteMaskOp<T>>{}, s, a.n, a.byte_mask, a.x));
  }
}

// The two kernels, for the registers column and the SASS tests.
template <class T, bool kAdd>
std::vector<const void*> fwd_v0_kernels() {
  using tut::ew::SimpleFactory;
  if constexpr (kAdd) {
    return {reinterpret_cast<const void*>(tut::ew::tiles_kernel<SimpleFactory<ReluOp<T>>, T, T, T>()),
            reinterpret_cast<const void*>(tut::ew::tiles_kernel<SimpleFactory<ByteMaskOp<T>>, std::uint8_t, T, T>())};
  } else {
    return {reinterpret_cast<const void*>(tut::ew::tiles_kernel<SimpleFactory<ReluOp<T>>, T, T>()),
            reinterpret_cast<const void*>(tut::ew::tiles_kernel<SimpleFactory<ByteMaskOp<T>>, std::uint8_t, T>())};
  }
}

}  // namespace ch04
