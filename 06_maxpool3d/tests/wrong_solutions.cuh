// Known-wrong forward kernels. The grader must reject each one; if it ever accepts one, the grader
// (not the kernel) is broken.
#pragma once

#include "kernels/pool.cuh"
#include "kernels/window_body.cuh"

#include <cstdint>

namespace ch06::wrong {

// The source's version 2: every bounds test removed, because its graded cases all had padding 0.
// A window is read as if it lay wholly inside the input, wherever it starts. With padding 1 the
// first window of each row starts at w = -1 and reads the previous row's last cell (or, at the
// start of a plane, the previous plane; at the start of the tensor, memory before it), where
// PyTorch sees -inf. Kept to small cases by the tests, so that what it reads before the tensor
// stays inside the 512 bytes of guard the test arrays carry.
template <int K>
__global__ void no_bounds_tests_kernel(ForwardArgs<float> a, OutDecoder dec) {
  const Window& w = a.w;
  for (std::int64_t o = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; o < w.out_numel();
       o += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const OutPos q = dec(o);
    const int d0 = q.od * w.s[0] - w.p[0], h0 = q.oh * w.s[1] - w.p[1], w0 = q.ow * w.s[2] - w.p[2];
    const float* plane = a.x + (q.n * w.C + q.c) * w.in_plane();
    float best;
    int cell;
    window_inside<K>(plane + (d0 * w.H + h0) * w.W + w0, w, best, cell);
    store_result<K, K, K>(a, o, best, cell, d0, h0, w0);
  }
}
template <int K>
void source_v2_no_bounds(cudaStream_t s, const ForwardArgs<float>& a) {
  no_bounds_tests_kernel<K><<<64, 256, 0, s>>>(a, OutDecoder(a.w));
  TUT_CHECK_LAUNCH("no_bounds_tests_kernel");
}

// The right values, and the index PyTorch does not give on ties: `>=` keeps the last of equal
// maxima instead of the first.
__global__ void last_of_ties_kernel(ForwardArgs<float> a, OutDecoder dec) {
  const Window& w = a.w;
  for (std::int64_t o = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; o < w.out_numel();
       o += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const OutPos q = dec(o);
    const int d0 = q.od * w.s[0] - w.p[0], h0 = q.oh * w.s[1] - w.p[1], w0 = q.ow * w.s[2] - w.p[2];
    const float* plane = a.x + (q.n * w.C + q.c) * w.in_plane();
    float best = -INFINITY;
    int cell = first_cell(w, d0, h0, w0);
    for (int j = 0; j < w.cells(); ++j) {
      int jd, jh, jw;
      w.cell_of(j, jd, jh, jw);
      const int d = d0 + jd, h = h0 + jh, x = w0 + jw;
      if (d < 0 || d >= w.D || h < 0 || h >= w.H || x < 0 || x >= w.W) continue;
      const float v = plane[(d * w.H + h) * w.W + x];
      if (best <= v || isnan(v)) {
        best = v;
        cell = j;
      }
    }
    store_result(a, o, best, cell, d0, h0, w0);
  }
}
inline void last_of_ties(cudaStream_t s, const ForwardArgs<float>& a) {
  last_of_ties_kernel<<<64, 256, 0, s>>>(a, OutDecoder(a.w));
  TUT_CHECK_LAUNCH("last_of_ties_kernel");
}

// fmaxf instead of PyTorch's rule: fmaxf(NaN, v) is v, so NaN is dropped instead of propagated.
__global__ void fmax_drops_nan_kernel(ForwardArgs<float> a, OutDecoder dec) {
  const Window& w = a.w;
  for (std::int64_t o = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; o < w.out_numel();
       o += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const OutPos q = dec(o);
    const int d0 = q.od * w.s[0] - w.p[0], h0 = q.oh * w.s[1] - w.p[1], w0 = q.ow * w.s[2] - w.p[2];
    const float* plane = a.x + (q.n * w.C + q.c) * w.in_plane();
    float best = -INFINITY;
    for (int j = 0; j < w.cells(); ++j) {
      int jd, jh, jw;
      w.cell_of(j, jd, jh, jw);
      const int d = d0 + jd, h = h0 + jh, x = w0 + jw;
      if (d < 0 || d >= w.D || h < 0 || h >= w.H || x < 0 || x >= w.W) continue;
      best = fmaxf(best, plane[(d * w.H + h) * w.W + x]);
    }
    a.y[o] = best;
  }
}
inline void fmax_drops_nan(cudaStream_t s, const ForwardArgs<float>& a) {
  fmax_drops_nan_kernel<<<64, 256, 0, s>>>(a, OutDecoder(a.w));
  TUT_CHECK_LAUNCH("fmax_drops_nan_kernel");
}

}  // namespace ch06::wrong
