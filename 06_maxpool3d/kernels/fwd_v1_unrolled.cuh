// fwd v1_unrolled: the source's first step. The window size becomes a template parameter for the
// cubic kernels 2, 3, 4 and 8 (any other window takes the generic body, K = 0), the loops over it
// are unrolled, and the offsets of a window's rows and slices are built by adding the row and
// slice strides instead of multiplying per cell. Every cell still gets its bounds test, as a
// predicate on its load: v1 is correct with padding and ceil_mode. Dilation 1 and NCDHW only.
//
// What changed since v0: the integer work per cell. v0 recomputes a 64-bit address from d, h, w
// with multiplies for every cell and tests each loop bound; here a K = 3 window is 27 loads at
// offsets the compiler folds into constants plus one register (W and H*W added once per row and
// slice), each guarded by a precomputed predicate. The output index is decoded with FastDiv
// (kernels/pool.cuh) instead of 64-bit division.
//
// Prediction: fewer instructions per output (a count Nsight Compute gives), the same bytes. Where
// the time is the bytes (stride >= kernel) that buys little; where windows overlap and the loads
// hit in the caches, the instruction count is closer to the limit and v1 gains more. The source's
// "register cache" (loading a row of cells into a local array before comparing) is what the
// compiler does anyway with an unrolled loop: all loads of a slice are issued before the first
// compare (the SASS test counts them).
#pragma once

#include "kernels/window_body.cuh"

namespace ch06 {

template <int K, class T>
__global__ void __launch_bounds__(256) fwd_v1_unrolled_kernel(ForwardArgs<T> a, OutDecoder dec) {
  const Window& w = a.w;
  const std::int64_t total = w.out_numel(), plane = w.in_plane();
  for (std::int64_t o = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; o < total;
       o += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const OutPos q = dec(o);
    const int d0 = q.od * w.s[0] - w.p[0], h0 = q.oh * w.s[1] - w.p[1], w0 = q.ow * w.s[2] - w.p[2];
    T best;
    int cell;
    window_checked<K>(a.x + (q.n * w.C + q.c) * plane, w, d0, h0, w0, best, cell);
    store_result<K, K, K>(a, o, best, cell, d0, h0, w0);
  }
}

// The compiled window sizes: a cubic kernel of one of these runs unrolled, any other generic.
template <class F>
decltype(auto) with_cubic_kernel(const Window& w, F&& f) {
  const bool cubic = w.k[0] == w.k[1] && w.k[1] == w.k[2];
  switch (cubic ? w.k[0] : 0) {
    case 2: return f(std::integral_constant<int, 2>{});
    case 3: return f(std::integral_constant<int, 3>{});
    case 4: return f(std::integral_constant<int, 4>{});
    case 8: return f(std::integral_constant<int, 8>{});
    default: return f(std::integral_constant<int, 0>{});
  }
}

template <class T>
void fwd_v1_unrolled(cudaStream_t s, const ForwardArgs<T>& a) {
  check_forward(a, "fwd_v1_unrolled");
  require_undilated_ncdhw(a.w, "fwd_v1_unrolled");
  constexpr int kBlock = 256;
  const unsigned grid = grid_for(a.w.out_numel(), kBlock, "fwd_v1_unrolled");
  with_cubic_kernel(a.w, [&](auto k) {
    fwd_v1_unrolled_kernel<decltype(k)::value, T><<<grid, kBlock, 0, s>>>(a, OutDecoder(a.w));
  });
  TUT_CHECK_LAUNCH("fwd_v1_unrolled_kernel");
}

template <class T>
std::vector<const void*> fwd_v1_kernels() {
  return {TUT_KERNEL(fwd_v1_unrolled_kernel<0, T>), TUT_KERNEL(fwd_v1_unrolled_kernel<2, T>),
          TUT_KERNEL(fwd_v1_unrolled_kernel<3, T>), TUT_KERNEL(fwd_v1_unrolled_kernel<4, T>),
          TUT_KERNEL(fwd_v1_unrolled_kernel<8, T>)};
}

}  // namespace ch06
