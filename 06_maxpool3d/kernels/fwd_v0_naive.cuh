// fwd v0_naive: one thread per output, the window as a triple loop with a bounds check per cell.
// The baseline, and the generic path: it takes every case the model allows (any window, stride,
// padding, dilation, ceil_mode, both layouts, planes past 2^31 elements), so the dispatcher falls
// back to it where a fast path refuses.
//
// Cost: a thread loads every inside cell of its window, kD*kH*kW loads and as many compares. Where
// windows do not overlap (stride >= kernel) that reads each input once and the time is the bytes;
// where they do, each input is loaded by up to prod(ceil(k / s)) threads and the caches have to
// absorb the repeats. Indexing is 64-bit throughout, and the loop bounds, strides and dilation are
// all read at run time: expect integer multiplies in the inner loop (IMAD in SASS), which v1
// removes.
#pragma once

#include "kernels/pool.cuh"

namespace ch06 {

template <class T>
__global__ void __launch_bounds__(256) fwd_v0_naive_kernel(ForwardArgs<T> a) {
  const Window& w = a.w;
  const std::int64_t total = w.out_numel();
  for (std::int64_t o = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; o < total;
       o += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const OutPos q = out_pos(w, o);
    const int d0 = q.od * w.s[0] - w.p[0], h0 = q.oh * w.s[1] - w.p[1], w0 = q.ow * w.s[2] - w.p[2];
    T best = lowest<T>();
    int best_cell = first_cell(w, d0, h0, w0);
    for (int jd = 0; jd < w.k[0]; ++jd) {
      const int d = d0 + jd * w.dil[0];
      if (d < 0 || d >= w.D) continue;
      for (int jh = 0; jh < w.k[1]; ++jh) {
        const int h = h0 + jh * w.dil[1];
        if (h < 0 || h >= w.H) continue;
        for (int jw = 0; jw < w.k[2]; ++jw) {
          const int x = w0 + jw * w.dil[2];
          if (x < 0 || x >= w.W) continue;
          const T v = a.x[in_element(w, q.n, q.c, (static_cast<std::int64_t>(d) * w.H + h) * w.W + x)];
          if (replaces(best, v)) {
            best = v;
            best_cell = (jd * w.k[1] + jh) * w.k[2] + jw;
          }
        }
      }
    }
    store_result(a, o, best, best_cell, d0, h0, w0);
  }
}

template <class T>
void fwd_v0_naive(cudaStream_t s, const ForwardArgs<T>& a) {
  check_forward(a, "fwd_v0_naive");
  constexpr int kBlock = 256;
  fwd_v0_naive_kernel<T><<<grid_for(a.w.out_numel(), kBlock, "fwd_v0_naive"), kBlock, 0, s>>>(a);
  TUT_CHECK_LAUNCH("fwd_v0_naive_kernel");
}

}  // namespace ch06
