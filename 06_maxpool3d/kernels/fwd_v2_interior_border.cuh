// fwd v2_interior_border: the source's second step, made correct. The source removed every bounds
// test, which was right only because every case it was graded on had padding 0 (and floor mode,
// so no window reached past the input). With padding 1 its first window starts at d = h = w = -1:
// it reads the last row of the previous plane, or memory before the tensor, where PyTorch sees
// -inf (tests/wrong_solutions.cuh keeps that kernel; the grader rejects it).
//
// What changed since v1: each output first asks whether its whole window lies inside the input,
// and its warp votes. If every lane's window is inside, the warp takes a path with no tests at
// all: unconditional loads at constant offsets from one corner pointer, and the first cell as the
// starting index. Otherwise the warp takes v1's checked path. On a large volume almost every warp
// is interior; only warps that hold a border output (the first and last few of a row, slice or
// plane) pay for the tests. The vote is per warp because a branch taken by some lanes and not
// others runs both sides for the whole warp (kernels/window_body.cuh tells what a per-thread
// choice cost).
//
// Prediction: v1's bytes with fewer instructions per output. In SASS the interior path has plain
// LDGs where v1's are predicated (@P) and no compares of coordinates; the test in
// tests/test_sass.cpp counts the unpredicated loads. Where the time is the bytes, expect v1's
// time; where windows overlap and rows are long enough for interior warps, a little less; where
// every warp holds a border output (rows of fewer than about 32 outputs), v1's time plus the vote.
#pragma once

#include "kernels/fwd_v1_unrolled.cuh"
#include "kernels/window_body.cuh"

namespace ch06 {

template <int K, class T>
__global__ void __launch_bounds__(256) fwd_v2_interior_border_kernel(ForwardArgs<T> a, OutDecoder dec) {
  const Window& w = a.w;
  const std::int64_t total = w.out_numel(), plane = w.in_plane();
  for (std::int64_t o = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; o < total;
       o += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const OutPos q = dec(o);
    const int d0 = q.od * w.s[0] - w.p[0], h0 = q.oh * w.s[1] - w.p[1], w0 = q.ow * w.s[2] - w.p[2];
    T best;
    int cell;
    window_interior_border<K>(a.x + (q.n * w.C + q.c) * plane, w, d0, h0, w0, best, cell);
    store_result<K, K, K>(a, o, best, cell, d0, h0, w0);
  }
}

template <class T>
void fwd_v2_interior_border(cudaStream_t s, const ForwardArgs<T>& a) {
  check_forward(a, "fwd_v2_interior_border");
  require_undilated_ncdhw(a.w, "fwd_v2_interior_border");
  constexpr int kBlock = 256;
  const unsigned grid = grid_for(a.w.out_numel(), kBlock, "fwd_v2_interior_border");
  with_cubic_kernel(a.w, [&](auto k) {
    fwd_v2_interior_border_kernel<decltype(k)::value, T><<<grid, kBlock, 0, s>>>(a, OutDecoder(a.w));
  });
  TUT_CHECK_LAUNCH("fwd_v2_interior_border_kernel");
}

template <class T>
std::vector<const void*> fwd_v2_kernels() {
  return {TUT_KERNEL(fwd_v2_interior_border_kernel<0, T>), TUT_KERNEL(fwd_v2_interior_border_kernel<2, T>),
          TUT_KERNEL(fwd_v2_interior_border_kernel<3, T>), TUT_KERNEL(fwd_v2_interior_border_kernel<4, T>),
          TUT_KERNEL(fwd_v2_interior_border_kernel<8, T>)};
}

}  // namespace ch06
