// bwd v1_gather: the deterministic backward. One thread per input element; it visits, in a fixed
// order (od, then oh, then ow ascending), every output whose window covers it, and adds that
// output's dy when its saved index names this element. No atomics, and each dx element is written
// once: the same inputs give the same bits on every run, whatever the hardware's scheduling (a GPU
// test runs it repeatedly on non-integer gradients and compares the bytes).
//
// The outputs covering input cell x along one axis are o = ceil((x + p - (k-1)*dil) / s) ..
// floor((x + p) / s), clipped to [0, out), and among them those with (x + p - o*s) divisible by
// dil; the cell's place in that window is (x + p - o*s) / dil. Compared with the saved index:
// int64, the flat position d*H*W + h*W + w; compact, the window cell (jd*kH + jh)*kW + jw.
//
// Cost against the scatter (bwd v0): no zeroing pass and no atomics; but each input reads the
// index of every output that covers it, prod(ceil(k / s)) of them (1 for stride = kernel, 8 for
// k = 3, s = 2, 512 for k = 8, s = 1). Those reads are the neighbours' too and mostly hit in L1,
// but they are instructions: the prediction was that the gather wins where windows overlap little
// and loses its margin as the overlap grows.
//
// Measured, it wins nowhere: on the H100 it ran at 0.167 of copy on 2x64x32x112x112 with k = 2
// (one candidate per input) where the scatter reached 0.402, and Nsight Compute counts about 380
// instructions per input on the stem case, DRAM 8 % busy: the thread's loop, with
// runtime bounds, issues one candidate's loads at a time and waits for each. The lesson has the
// numbers and what to try next.
#pragma once

#include "kernels/bwd.cuh"

namespace ch06 {

struct GatherDivs {
  bool narrow = true;
  FastDiv by_w, by_h, by_d, by_c;  // the input's dims, to decode an element
  FastDiv by_s[3];                 // the strides, for the ranges of covering outputs
};

// The outputs along one axis whose windows cover cell x: [lo, hi].
__device__ __forceinline__ void covering(int x, int k, int p, int dil, int out, const FastDiv& by_s, int s, int& lo,
                                         int& hi) {
  const int top = x + p, bottom = x + p - (k - 1) * dil;
  hi = min(out - 1, static_cast<int>(by_s.div(static_cast<std::uint32_t>(top))));
  lo = bottom <= 0 ? 0 : static_cast<int>(by_s.div(static_cast<std::uint32_t>(bottom + s - 1)));
}

// dx of input element e: the sum, in a fixed order, of dy over the outputs that cover e and whose
// saved index names it. kDilated: dilation > 1 on some axis. Undilated, a covering output's cell
// along an axis is x + p - o*s itself: no division and no test of divisibility per candidate.
template <bool kDilated, class T>
__device__ __forceinline__ T gather_one(const BackwardArgs<T>& a, const GatherDivs& dv, std::int64_t e) {
  const Window& w = a.w;
  const bool cl = w.layout == Layout::ndhwc;
  std::int64_t n, c;
  int d, h, x;
  if (dv.narrow) {
    std::uint32_t r = static_cast<std::uint32_t>(e), q;
    std::uint32_t cc = 0;
    if (cl) {
      q = dv.by_c.div(r);
      cc = r - q * static_cast<std::uint32_t>(w.C);
      r = q;
    }
    q = dv.by_w.div(r);
    x = static_cast<int>(r - q * w.W);
    r = q;
    q = dv.by_h.div(r);
    h = static_cast<int>(r - q * w.H);
    r = q;
    q = dv.by_d.div(r);
    d = static_cast<int>(r - q * w.D);
    if (cl) {
      n = q;
      c = cc;
    } else {
      n = dv.by_c.div(q);
      c = q - n * w.C;
    }
  } else {
    std::int64_t r = e;
    c = 0;
    if (cl) {
      c = r % w.C;
      r /= w.C;
    }
    x = static_cast<int>(r % w.W);
    r /= w.W;
    h = static_cast<int>(r % w.H);
    r /= w.H;
    d = static_cast<int>(r % w.D);
    r /= w.D;
    if (cl) {
      n = r;
    } else {
      n = r / w.C;
      c = r % w.C;
    }
  }
  int od_lo, od_hi, oh_lo, oh_hi, ow_lo, ow_hi;
  covering(d, w.k[0], w.p[0], w.dil[0], w.oD, dv.by_s[0], w.s[0], od_lo, od_hi);
  covering(h, w.k[1], w.p[1], w.dil[1], w.oH, dv.by_s[1], w.s[1], oh_lo, oh_hi);
  covering(x, w.k[2], w.p[2], w.dil[2], w.oW, dv.by_s[2], w.s[2], ow_lo, ow_hi);
  const std::int64_t flat = (static_cast<std::int64_t>(d) * w.H + h) * w.W + x;
  const std::int64_t out_base = cl ? n * w.out_plane() * w.C + c : (n * w.C + c) * w.out_plane();
  const std::int64_t out_step = cl ? w.C : 1;  // between neighbouring ow
  T acc = T(0);
  for (int od = od_lo; od <= od_hi; ++od) {
    const int rd = d + w.p[0] - od * w.s[0];
    if (kDilated && rd % w.dil[0] != 0) continue;
    const int jd = kDilated ? rd / w.dil[0] : rd;
    for (int oh = oh_lo; oh <= oh_hi; ++oh) {
      const int rh = h + w.p[1] - oh * w.s[1];
      if (kDilated && rh % w.dil[1] != 0) continue;
      const int jdh = jd * w.k[1] + (kDilated ? rh / w.dil[1] : rh);
      const std::int64_t row = out_base + ((static_cast<std::int64_t>(od) * w.oH + oh) * w.oW) * out_step;
      for (int ow = ow_lo; ow <= ow_hi; ++ow) {
        const int rw = x + w.p[2] - ow * w.s[2];
        if (kDilated && rw % w.dil[2] != 0) continue;
        const std::int64_t o = row + ow * out_step;
        const bool mine = w.indices == IndexFormat::int64
                              ? a.index[o] == flat
                              : saved_cell(a, o) == jdh * w.k[2] + (kDilated ? rw / w.dil[2] : rw);
        if (mine) acc += a.dy[o];
      }
    }
  }
  return acc;
}

template <bool kDilated, class T>
__global__ void __launch_bounds__(256) bwd_v1_gather_kernel(BackwardArgs<T> a, GatherDivs dv) {
  const std::int64_t total = a.w.in_numel();
  for (std::int64_t e = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    a.dx[e] = gather_one<kDilated>(a, dv, e);
}

inline GatherDivs gather_divs(const Window& w) {
  GatherDivs dv;
  dv.narrow = w.in_numel() <= std::numeric_limits<std::int32_t>::max();
  if (dv.narrow) {
    dv.by_w = FastDiv(w.W);
    dv.by_h = FastDiv(w.H);
    dv.by_d = FastDiv(w.D);
    dv.by_c = FastDiv(w.C);
  }
  for (int i = 0; i < 3; ++i) dv.by_s[i] = FastDiv(w.s[i]);
  return dv;
}

template <class T>
void bwd_v1_gather(cudaStream_t s, const BackwardArgs<T>& a) {
  check_backward(a, "bwd_v1_gather");
  const Window& w = a.w;
  const GatherDivs dv = gather_divs(w);
  constexpr int kBlock = 256;
  const unsigned grid = grid_for(w.in_numel(), kBlock, "bwd_v1_gather");
  if (w.dilated()) bwd_v1_gather_kernel<true, T><<<grid, kBlock, 0, s>>>(a, dv);
  else bwd_v1_gather_kernel<false, T><<<grid, kBlock, 0, s>>>(a, dv);
  TUT_CHECK_LAUNCH("bwd_v1_gather_kernel");
}

}  // namespace ch06
