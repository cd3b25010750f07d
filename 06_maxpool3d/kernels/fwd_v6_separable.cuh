// fwd v6_separable: max is separable. The maximum of a kD x kH x kW window is the maximum along D
// of the maxima along H of the maxima along W, and so is its cell, if each step keeps the cell
// with the value and combines runs in order with PyTorch's rule (reference.hpp: `combine` is
// associative, and a CPU test checks the separable form against the direct one on every output).
//
// Three passes, each a one-dimensional pooling along one axis, through scratch memory:
//   W: x [outer][W][inner]          -> (value, jw)                  [outer][oW][inner]
//   H: (value, jw) [outer'][H][..]  -> (value, jh * kW + jw)        [outer'][oH][..]
//   D: (value, cell) [N..][D][..]   -> y and the index of cell (jd * kH + jh) * kW + jw
// For NCDHW `inner` is 1, oW, oH*oW; for NDHWC it is C, oW*C, oH*oW*C: the same kernel reads both
// layouts, and consecutive threads read consecutive addresses wherever inner > 1. Any stride,
// padding, dilation and ceil_mode: each pass is v0's loop in one dimension. The cell goes through
// the scratch as a uint16, so windows of up to 65535 cells.
//
// What changed since v2: the comparisons. A direct window does kD*kH*kW loads and compares per
// output; the passes do about kW + kH + kD per output when the stride is 1 (a little more, since
// the first passes also produce the rows and slices that only neighbouring windows use). For
// k = 8, stride 1: 512 against about 24. The price is bytes: each pass writes its result and the
// next reads it back, 6 bytes per element for float (value and cell), so where windows do not
// overlap this is three passes over the data for nothing. The floor's "separable" model counts
// these bytes. The two intermediates are about the input's size; when they fit in the 50 MiB L2
// their round trip does not reach DRAM.
//
// Prediction: on k = 8, stride 1, the time is the three passes' bytes at a fair fraction of the
// copy ceiling, against v0's 512 loads per output served from the caches: well over an order of
// magnitude. On stride >= kernel, slower than v2 by about the separable model's bytes over the
// floor's.
//
// The passes along H and D slide (fwd_v6_slide_kernel): at stride 1 a thread computes 8
// consecutive outputs along the axis from the 8 + k - 1 cells they share, all loaded before the
// first compare, instead of one output from k cells loaded one loop step after another. Measured
// on kernel 8 stride 1 (Nsight Compute, H100): the H pass 39 -> 26 us, the D pass 42 -> 27 us.
//
// Tried and not kept: the W and H passes as one kernel (results/forms/fwd_r6.*). In NCDHW at
// stride 1 a block loaded a tile of a (plane, d) slice into shared memory, slid along W there,
// kept the W pass's (value, jw) in shared memory and slid along H over it, so the W pass's 22 MB
// of (value, cell) never went to global memory. The prediction was the round trip: about 37 MB
// moved instead of about 80, 53 us of W and H down to about 18. Measured on kernel 8 stride 1,
// 1 x 16 x 64^3 (H100, Nsight Compute): the fused kernel 52.3 us against 28.1 + 25.3 for the two
// passes; 35.0 M warp instructions against 22.4 + 16.8 M; DRAM 11 % busy, 1.3 % of the warps'
// cycles waiting on global loads, 12 % at its barriers. In the bench v6 took 0.0794 ms against
// v0's 1.485 (18.7x), the three passes 0.0824 (18.0x) in a process of their own, and on kernel 3
// stride 1 (4 x 32 x 32 x 64^2) 0.2734 ms against 0.2534: slower. So the prediction was wrong: the
// round trip went, the time did not, because it follows the instructions. The passes are bound by
// their compares (8 per output per axis on kernel 8, each a compare, a NaN test and two selects),
// not by the scratch between them. The next step is fewer compares: van Herk and Gil-Werman's
// sliding maximum, a suffix run and a prefix run per segment of k cells, about 3 combines per
// output per axis whatever k is, instead of k.
#pragma once

#include "kernels/pool.cuh"

namespace ch06 {

using CellT = std::uint16_t;  // up to kMaxSeparableCells (window.hpp)

// One pass: out[o][l][i] = the best of in[o][l * s - p + j * dil][i] over j, o < outer, l < out_len,
// i < inner. `cell_step` is what the pass's j is worth in the window's cell number (1, kW, kH*kW).
struct AxisPass {
  std::int64_t outer = 1, inner = 1;
  int len = 1, out_len = 1;
  int k = 1, s = 1, p = 0, dil = 1;
  int cell_step = 1;
  TUT_HD std::int64_t total() const { return outer * out_len * inner; }
};

// o -> (outer index, l, inner index), in 32 bits with FastDiv when the pass has < 2^31 outputs.
struct PassDecoder {
  bool narrow = true;
  FastDiv by_inner, by_len;
  PassDecoder() = default;
  explicit PassDecoder(const AxisPass& ps) : narrow(ps.total() <= std::numeric_limits<std::int32_t>::max()) {
    if (narrow) {
      by_inner = FastDiv(ps.inner);
      by_len = FastDiv(ps.out_len);
    }
  }
};

__device__ __forceinline__ void split_pass(const AxisPass& ps, const PassDecoder& dec, std::int64_t o,
                                           std::int64_t& outer, int& l, std::int64_t& i) {
  if (dec.narrow) {
    const std::uint32_t r = static_cast<std::uint32_t>(o), t = dec.by_inner.div(r), u = dec.by_len.div(t);
    i = r - t * static_cast<std::uint32_t>(ps.inner);
    l = static_cast<int>(t - u * static_cast<std::uint32_t>(ps.out_len));
    outer = u;
  } else {
    i = o % ps.inner;
    const std::int64_t t = o / ps.inner;
    l = static_cast<int>(t % ps.out_len);
    outer = t / ps.out_len;
  }
}

// The best of output o's run along the pass's axis: its value and its cell number (the pass's j
// times cell_step, plus the cell the previous pass kept there; kFirst: there is none). A run starts
// from its first inside cell, as PyTorch's scan does, and ends at its last inside cell, both
// found before the loop, so the loop has no tests but the rule's. kDilated: dilation > 1 here;
// undilated, finding them needs no division.
template <bool kFirst, bool kDilated, class T>
__device__ __forceinline__ void pass_best(const AxisPass& ps, const T* __restrict__ in_vals,
                                          const CellT* __restrict__ in_cells, std::int64_t outer, int l, std::int64_t i,
                                          T& best, int& cell) {
  const int start = l * ps.s - ps.p;
  int first, last;
  if (kDilated) {
    first = first_inside(start, ps.k, ps.dil, ps.len);
    last = min(ps.k - 1, (ps.len - 1 - start) / ps.dil);
  } else {
    first = max(0, -start);
    last = min(ps.k - 1, ps.len - 1 - start);
  }
  const std::int64_t step = static_cast<std::int64_t>(ps.dil) * ps.inner;
  std::int64_t at = outer * ps.len * ps.inner + i + static_cast<std::int64_t>(start + first * ps.dil) * ps.inner;
  best = in_vals[at];
  cell = first * ps.cell_step + (kFirst ? 0 : in_cells[at]);
#pragma unroll 4
  for (int j = first + 1; j <= last; ++j) {
    at += step;
    const T v = in_vals[at];
    if (replaces(best, v)) {
      best = v;
      cell = j * ps.cell_step + (kFirst ? 0 : in_cells[at]);
    }
  }
}

template <bool kFirst, bool kDilated, class T>
__global__ void __launch_bounds__(256) fwd_v6_pass_kernel(AxisPass ps, PassDecoder dec, const T* __restrict__ in_vals,
                                                          const CellT* __restrict__ in_cells, T* __restrict__ out_vals,
                                                          CellT* __restrict__ out_cells) {
  const std::int64_t total = ps.total();
  for (std::int64_t o = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; o < total;
       o += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    std::int64_t outer, i;
    int l;
    split_pass(ps, dec, o, outer, l, i);
    T best;
    int cell;
    pass_best<kFirst, kDilated>(ps, in_vals, in_cells, outer, l, i, best, cell);
    out_vals[o] = best;
    out_cells[o] = static_cast<CellT>(cell);
  }
}

// The D pass writes the outputs: y in the case's layout (its element o is this pass's o), and
// the index of the cell, for which it needs (oh, ow) back from the inner index.
template <bool kDilated, class T>
__global__ void __launch_bounds__(256) fwd_v6_last_pass_kernel(ForwardArgs<T> a, AxisPass ps, PassDecoder dec,
                                                               FastDiv by_c, FastDiv by_ow,
                                                               const T* __restrict__ in_vals,
                                                               const CellT* __restrict__ in_cells) {
  const Window& w = a.w;
  const std::int64_t total = ps.total();
  for (std::int64_t o = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; o < total;
       o += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    std::int64_t outer, i;
    int od;
    split_pass(ps, dec, o, outer, od, i);
    T best;
    int cell;
    pass_best<false, kDilated>(ps, in_vals, in_cells, outer, od, i, best, cell);
    std::int64_t hw = i;  // oh * oW + ow
    if (w.layout == Layout::ndhwc) hw = dec.narrow ? by_c.div(static_cast<std::uint32_t>(i)) : i / w.C;
    const std::int64_t oh = dec.narrow ? by_ow.div(static_cast<std::uint32_t>(hw)) : hw / w.oW;
    const int ow = static_cast<int>(hw - oh * w.oW);
    store_result(a, o, best, cell, od * w.s[0] - w.p[0], static_cast<int>(oh) * w.s[1] - w.p[1], ow * w.s[2] - w.p[2]);
  }
}

// The sliding form of a pass, for stride 1 and dilation 1 with at most kSlideMaxK cells per run:
// a thread computes kSlide consecutive outputs along the axis from the kSlide + k - 1 cells they
// share, all loaded before the first compare. The plain pass loads k cells per output, one loop
// step after another; here it is (kSlide + k - 1) / kSlide per output (1.9 for k = 8), issued
// together. Thread t is (outer index, group of kSlide outputs, inner index), the inner index
// fastest, so a warp's loads are consecutive addresses wherever inner > 1. kLast: the D pass,
// which writes y and the index (its `o` is the output element) instead of the intermediates.
inline constexpr int kSlide = 8, kSlideMaxK = 8;

template <bool kFirst, bool kLast, class T>
__global__ void __launch_bounds__(256) fwd_v6_slide_kernel(ForwardArgs<T> a, AxisPass ps, PassDecoder groups,
                                                           FastDiv by_c, FastDiv by_ow, const T* __restrict__ in_vals,
                                                           const CellT* __restrict__ in_cells, T* __restrict__ out_vals,
                                                           CellT* __restrict__ out_cells) {
  constexpr int kSpan = kSlide + kSlideMaxK - 1;
  const int n_groups = (ps.out_len + kSlide - 1) / kSlide;
  const std::int64_t total = ps.outer * n_groups * ps.inner;
  for (std::int64_t t = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; t < total;
       t += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    std::int64_t outer, i;
    int g;
    AxisPass gp = ps;
    gp.out_len = n_groups;
    split_pass(gp, groups, t, outer, g, i);
    const int l0 = g * kSlide, start = l0 - ps.p;
    const std::int64_t base = outer * ps.len * ps.inner + i;
    T v[kSpan];
    int c[kSpan];
#pragma unroll
    for (int j = 0; j < kSpan; ++j) {
      const int at = start + j;
      c[j] = -1;  // outside the axis, or past what these outputs need
      if (j < kSlide + ps.k - 1 && at >= 0 && at < ps.len) {
        v[j] = in_vals[base + static_cast<std::int64_t>(at) * ps.inner];
        c[j] = kFirst ? 0 : in_cells[base + static_cast<std::int64_t>(at) * ps.inner];
      }
    }
#pragma unroll
    for (int m = 0; m < kSlide; ++m) {
      if (l0 + m >= ps.out_len) break;
      T best = lowest<T>();
      int cell = -1;
#pragma unroll
      for (int j = 0; j < kSlideMaxK; ++j) {
        if (j < ps.k && c[m + j] >= 0 && (replaces(best, v[m + j]) | (cell < 0))) {
          best = v[m + j];
          cell = j * ps.cell_step + c[m + j];
        }
      }
      const std::int64_t o = (outer * ps.out_len + l0 + m) * ps.inner + i;
      if constexpr (kLast) {
        const Window& w = a.w;
        std::int64_t hw = i;  // oh * oW + ow
        if (w.layout == Layout::ndhwc) hw = groups.narrow ? by_c.div(static_cast<std::uint32_t>(i)) : i / w.C;
        const std::int64_t oh = groups.narrow ? by_ow.div(static_cast<std::uint32_t>(hw)) : hw / w.oW;
        const int ow = static_cast<int>(hw - oh * w.oW);
        store_result(a, o, best, cell, (l0 + m) - w.p[0], static_cast<int>(oh) * w.s[1] - w.p[1], ow * w.s[2] - w.p[2]);
      } else {
        out_vals[o] = best;
        out_cells[o] = static_cast<CellT>(cell);
      }
    }
  }
}

// Where the pass slides: stride 1, no dilation, at most kSlideMaxK cells, and inner > 1. (With inner
// = 1, the W pass in NCDHW, a thread's cells are consecutive addresses and its neighbour's start
// kSlide cells further: each load instruction touched 30 sectors, and that pass took 64 us on
// kernel 8 stride 1 against the plain pass's 28.)
inline bool slides(const AxisPass& ps) { return ps.s == 1 && ps.dil == 1 && ps.k <= kSlideMaxK && ps.inner > 1; }

// The three passes of a case, and the scratch they need.
struct SeparablePlan {
  AxisPass pw, ph, pd;
  std::size_t off_v1 = 0, off_c1 = 0, off_v2 = 0, off_c2 = 0, bytes = 0;
};

inline std::size_t round_up_256(std::size_t b) { return (b + 255) / 256 * 256; }

template <class T>
SeparablePlan separable_plan(const Window& w) {
  SeparablePlan pl;
  const bool cl = w.layout == Layout::ndhwc;
  const auto pass = [&](int axis, std::int64_t outer, int len, int out_len, std::int64_t inner, int cell_step) {
    AxisPass ps;
    ps.outer = outer;
    ps.len = len;
    ps.out_len = out_len;
    ps.inner = inner;
    ps.k = w.k[axis];
    ps.s = w.s[axis];
    ps.p = w.p[axis];
    ps.dil = w.dil[axis];
    ps.cell_step = cell_step;
    return ps;
  };
  const std::int64_t C = cl ? w.C : 1, planes = cl ? w.N : w.N * w.C;
  pl.pw = pass(2, planes * w.D * w.H, w.W, w.oW, C, 1);
  pl.ph = pass(1, planes * w.D, w.H, w.oH, static_cast<std::int64_t>(w.oW) * C, w.k[2]);
  pl.pd = pass(0, planes, w.D, w.oD, static_cast<std::int64_t>(w.oH) * w.oW * C, w.k[1] * w.k[2]);
  const std::size_t n1 = static_cast<std::size_t>(pl.pw.total()), n2 = static_cast<std::size_t>(pl.ph.total());
  pl.off_v1 = 0;
  pl.off_c1 = round_up_256(n1 * sizeof(T));
  pl.off_v2 = pl.off_c1 + round_up_256(n1 * sizeof(CellT));
  pl.off_c2 = pl.off_v2 + round_up_256(n2 * sizeof(T));
  pl.bytes = pl.off_c2 + round_up_256(n2 * sizeof(CellT));
  return pl;
}

template <class T>
std::string fwd_v6_refuses(const Window& w) {
  if (w.cells() > kMaxSeparableCells) return "fwd_v6_separable carries a window's cell in 16 bits: at most 65535 cells";
  return {};
}

// Scratch bytes the version asks for (Version::scratch_bytes).
template <class T>
std::size_t fwd_v6_scratch_bytes(const Window& w) {
  return separable_plan<T>(w).bytes;
}

template <class T>
void fwd_v6_separable(cudaStream_t s, const ForwardArgs<T>& a, void* scratch, std::size_t scratch_bytes) {
  check_forward(a, "fwd_v6_separable");
  if (const std::string why = fwd_v6_refuses<T>(a.w); !why.empty()) throw tut::Unsupported(why);
  const SeparablePlan pl = separable_plan<T>(a.w);
  if (!scratch || scratch_bytes < pl.bytes)
    throw std::invalid_argument("fwd_v6_separable: needs " + std::to_string(pl.bytes) + " bytes of scratch, got " +
                                std::to_string(scratch_bytes));
  auto* base = static_cast<unsigned char*>(scratch);
  T* v1 = reinterpret_cast<T*>(base + pl.off_v1);
  CellT* c1 = reinterpret_cast<CellT*>(base + pl.off_c1);
  T* v2 = reinterpret_cast<T*>(base + pl.off_v2);
  CellT* c2 = reinterpret_cast<CellT*>(base + pl.off_c2);
  constexpr int kBlock = 256;
  const auto slide = [&](const AxisPass& ps, const T* in_v, const CellT* in_c, T* out_v, CellT* out_c, bool first,
                         bool last, const char* who) {
    AxisPass gp = ps;
    gp.out_len = (ps.out_len + kSlide - 1) / kSlide;
    const PassDecoder groups(gp);
    const FastDiv by_c = groups.narrow ? FastDiv(a.w.C) : FastDiv(), by_ow = groups.narrow ? FastDiv(a.w.oW) : FastDiv();
    const unsigned grid = grid_for(gp.total(), kBlock, who);
    if (last) fwd_v6_slide_kernel<false, true, T><<<grid, kBlock, 0, s>>>(a, ps, groups, by_c, by_ow, in_v, in_c, out_v, out_c);
    else if (first) fwd_v6_slide_kernel<true, false, T><<<grid, kBlock, 0, s>>>(a, ps, groups, by_c, by_ow, in_v, in_c, out_v, out_c);
    else fwd_v6_slide_kernel<false, false, T><<<grid, kBlock, 0, s>>>(a, ps, groups, by_c, by_ow, in_v, in_c, out_v, out_c);
    TUT_CHECK_LAUNCH("fwd_v6_slide_kernel");
  };
  const auto pass = [&](const AxisPass& ps, const T* in_v, const CellT* in_c, T* out_v, CellT* out_c, bool first,
                        const char* who) {
    if (slides(ps)) return slide(ps, in_v, in_c, out_v, out_c, first, false, who);
    const unsigned grid = grid_for(ps.total(), kBlock, who);
    const PassDecoder dec(ps);
    if (first && ps.dil == 1) fwd_v6_pass_kernel<true, false, T><<<grid, kBlock, 0, s>>>(ps, dec, in_v, in_c, out_v, out_c);
    else if (first) fwd_v6_pass_kernel<true, true, T><<<grid, kBlock, 0, s>>>(ps, dec, in_v, in_c, out_v, out_c);
    else if (ps.dil == 1) fwd_v6_pass_kernel<false, false, T><<<grid, kBlock, 0, s>>>(ps, dec, in_v, in_c, out_v, out_c);
    else fwd_v6_pass_kernel<false, true, T><<<grid, kBlock, 0, s>>>(ps, dec, in_v, in_c, out_v, out_c);
    TUT_CHECK_LAUNCH("fwd_v6_pass_kernel");
  };
  pass(pl.pw, a.x, nullptr, v1, c1, true, "fwd_v6 W pass");
  pass(pl.ph, v1, c1, v2, c2, false, "fwd_v6 H pass");
  if (slides(pl.pd)) return slide(pl.pd, v2, c2, nullptr, nullptr, false, true, "fwd_v6 D pass");
  const PassDecoder dec(pl.pd);
  const FastDiv by_c = dec.narrow ? FastDiv(a.w.C) : FastDiv(), by_ow = dec.narrow ? FastDiv(a.w.oW) : FastDiv();
  const unsigned grid = grid_for(pl.pd.total(), kBlock, "fwd_v6 D pass");
  if (pl.pd.dil == 1) fwd_v6_last_pass_kernel<false, T><<<grid, kBlock, 0, s>>>(a, pl.pd, dec, by_c, by_ow, v2, c2);
  else fwd_v6_last_pass_kernel<true, T><<<grid, kBlock, 0, s>>>(a, pl.pd, dec, by_c, by_ow, v2, c2);
  TUT_CHECK_LAUNCH("fwd_v6_last_pass_kernel (D)");
}

}  // namespace ch06
