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
// The passes along H and D slide, and in NDHWC the W pass too (fwd_v6_slide_kernel; for k = 3, 5
// and 8 fwd_v6_van_herk_kernel, below): at stride 1 a thread computes 8 consecutive outputs along
// the axis from the 8 + k - 1 cells they share, all loaded before the first compare, instead of
// one output from k cells loaded one loop step after another. Measured
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
// not by the scratch between them. The next step is fewer compares.
//
// van Herk / Gil-Werman (sliding_best, for k = 3, 5 and 8, kVanHerkK): the 8 windows a sliding
// thread makes overlap, and a window of k consecutive cells is the tail of one segment of k cells
// (a suffix run) followed by the head of the next (a prefix run). A thread computes the suffix and
// prefix runs of its 8 + k - 1 cells once, then each window with one more combine: for k = 8, 20
// combines per 8 outputs instead of 56 (k = 5: 18 against 32; k = 3: 13 against 16), 2 FSETPs
// each (checked in the SASS). The rule stays PyTorch's, earlier run on the left, so value and cell
// are the direct scan's bit for bit (a CPU test runs it against the direct scan on every k from 1
// to 8, ties, NaN, -inf and cells outside the axis included). Cells outside the axis are read as
// their nearest inside cell (slide_source): that changes no window, so no combine tests for
// padding. The same step makes the W pass of NCDHW, where a row's cells are consecutive addresses:
// fwd_v6_row_kernel copies runs of whole rows into shared memory with consecutive threads on
// consecutive elements, a thread slides along one row there, and the results go out the same way.
//
// Prediction (kernel 8, stride 1, 1 x 16 x 64^3, NCDHW): the passes stop following the compares
// and follow their bytes, the separable model's 113 MB (x 16.8 MB and the W pass's 22.4 MB of
// (value, cell) out; those back and the H pass's 20.0 MB out; those back and y's 11.9 MB), which
// take 37 us at the copy ceiling. Each pass at about two thirds of it: about 0.055 ms, 27x v0
// (the three direct passes took 0.0822 ms, 18.2x, in the last suite run).
//
// Measured (H100, one process, results/NVIDIA_H100_80GB_HBM3.v6_vanherk.*, Nsight Compute in
// results/forms/v6_vanherk.ncu.csv): 0.0579 ms against v0's 1.4968, 25.8x (the prediction: 0.055
// ms, 27x). Nsight Compute: the row kernel 20.5 us, the H and D passes 20.0 and 16.2 us; 12.0, 8.5 and 8.4 M warp instructions (the direct W and H
// passes issued 22.4 and 16.8 M); DRAM 29 to 38 % busy, so the passes are not at their bytes
// either; what they wait on now was not measured (the row kernel has 125 k shared-memory bank
// conflicts, a lead, not a finding). Without the
// row kernel (van Herk along H and D only, a binary of its own, results/forms/v6_vanherk_no_rows.*)
// v6 took 0.0670 ms, 22.3x: the W pass's direct loop was a third of the time left. Kernel 3
// stride 1: 0.2115 ms in NCDHW and 0.2101 in NDHWC, against 0.2550 and 0.2500 for the direct
// passes in the suite run before; in NDHWC that is now faster than v7 (0.2608 in the same
// process), and the rule takes v6 there.
#pragma once

#include "kernels/pool.cuh"

#include <type_traits>

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

// The kernel sizes whose sliding pass is van Herk / Gil-Werman's (sliding_best below); the
// others keep the direct form, k predicated combines per output.
inline constexpr int kVanHerkK[] = {3, 5, 8};

// PyTorch's rule for the sliding pass; the float form runs on the host too, for the CPU test.
TUT_HD inline bool slide_replaces(float best, float v) { return (best < v) | (v != v); }
__device__ __forceinline__ bool slide_replaces(__half best, __half v) { return replaces(best, v); }

// Where cell `at` of an axis of `len` cells is read from in the sliding pass: itself when it lies
// inside, else the nearest inside cell. A window that holds an outside cell also holds that
// nearest cell, next to it in scan order, and a run (v, a) followed by itself combines to itself
// (the rule keeps the earlier of equal values and takes the later of two NaNs, the same cell):
// so the copy changes no window's result, and no combine needs a test for "no cell".
TUT_HD inline int slide_source(int at, int len) { return at < 0 ? 0 : (at >= len ? len - 1 : at); }

// van Herk / Gil-Werman: the best of each of the kSlide windows of K consecutive cells over the
// kSlide + K - 1 cells v[j], each with `a[j]`, which the pass sets to the cell's position times
// cell_step plus the cell the previous pass kept (so window m's cell is a - m * cell_step). Cut
// the cells into segments of K from position 0. Window m is segment m / K whole when m is a
// multiple of K, else the tail of that segment from m (a suffix run, S) followed by the head of
// the next one up to m + K - 1 (a prefix run, P). Every combine keeps the earlier run on the left,
// and PyTorch's rule is associative (reference.hpp), so each window gets the direct scan's value
// and cell. Combines for kSlide = 8 outputs: 20 for K = 8 (7 suffix, 6 prefix, 7 joins) against
// 56 for the direct scan, 18 against 32 for K = 5, 13 against 16 for K = 3. Fully unrolled, the
// positions are constants and the runs that no window uses are never computed.
#pragma nv_exec_check_disable
template <int K, class T>
TUT_HD inline void sliding_best(const T (&v)[kSlide + K - 1], const int (&a)[kSlide + K - 1], T (&best)[kSlide],
                                int (&best_a)[kSlide]) {
  constexpr int kSpan = kSlide + K - 1;
  T sv[kSpan], pv[kSpan];
  int sa[kSpan], pa[kSpan];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int j = kSpan - 1; j >= 0; --j) {  // suffixes, from each segment's last cell back
    if (j % K == K - 1 || j == kSpan - 1) {
      sv[j] = v[j];
      sa[j] = a[j];
    } else {
      const bool later = slide_replaces(v[j], sv[j + 1]);
      sv[j] = later ? sv[j + 1] : v[j];
      sa[j] = later ? sa[j + 1] : a[j];
    }
  }
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int j = 0; j < kSpan; ++j) {  // prefixes, from each segment's first cell on
    if (j % K == 0) {
      pv[j] = v[j];
      pa[j] = a[j];
    } else {
      const bool later = slide_replaces(pv[j - 1], v[j]);
      pv[j] = later ? v[j] : pv[j - 1];
      pa[j] = later ? a[j] : pa[j - 1];
    }
  }
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int m = 0; m < kSlide; ++m) {
    if (m % K == 0) {
      best[m] = sv[m];
      best_a[m] = sa[m];
    } else {
      const bool later = slide_replaces(sv[m], pv[m + K - 1]);
      best[m] = later ? pv[m + K - 1] : sv[m];
      best_a[m] = later ? pa[m + K - 1] : sa[m];
    }
  }
}

// The sliding pass's threads. K > 0: the kernel size, van Herk's form (fwd_v6_van_herk_kernel);
// K = 0: any k up to kSlideMaxK, the direct form (fwd_v6_slide_kernel).
template <int K, bool kFirst, bool kLast, class T>
__device__ __forceinline__ void slide_pass(const ForwardArgs<T>& a, const AxisPass& ps, const PassDecoder& groups,
                                           const FastDiv& by_c, const FastDiv& by_ow, const T* __restrict__ in_vals,
                                           const CellT* __restrict__ in_cells, T* __restrict__ out_vals,
                                           CellT* __restrict__ out_cells) {
  constexpr int kSpan = kSlide + (K > 0 ? K : kSlideMaxK) - 1;
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
    T best_v[kSlide];
    int best_c[kSlide];  // K > 0: the window's cell plus m * cell_step
    if constexpr (K > 0) {
#pragma unroll
      for (int j = 0; j < kSpan; ++j) {
        const int from = slide_source(start + j, ps.len);
        v[j] = in_vals[base + static_cast<std::int64_t>(from) * ps.inner];
        c[j] = (from - start) * ps.cell_step + (kFirst ? 0 : in_cells[base + static_cast<std::int64_t>(from) * ps.inner]);
      }
      sliding_best<K>(v, c, best_v, best_c);
    } else {
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
        T best = lowest<T>();
        int cell = -1;
#pragma unroll
        for (int j = 0; j < kSlideMaxK; ++j) {
          if (j < ps.k && c[m + j] >= 0 && (replaces(best, v[m + j]) | (cell < 0))) {
            best = v[m + j];
            cell = j * ps.cell_step + c[m + j];
          }
        }
        best_v[m] = best;
        best_c[m] = cell + m * ps.cell_step;
      }
    }
#pragma unroll
    for (int m = 0; m < kSlide; ++m) {
      if (l0 + m >= ps.out_len) break;
      const T best = best_v[m];
      const int cell = best_c[m] - m * ps.cell_step;
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

template <bool kFirst, bool kLast, class T>
__global__ void __launch_bounds__(256) fwd_v6_slide_kernel(ForwardArgs<T> a, AxisPass ps, PassDecoder groups,
                                                           FastDiv by_c, FastDiv by_ow, const T* __restrict__ in_vals,
                                                           const CellT* __restrict__ in_cells, T* __restrict__ out_vals,
                                                           CellT* __restrict__ out_cells) {
  slide_pass<0, kFirst, kLast>(a, ps, groups, by_c, by_ow, in_vals, in_cells, out_vals, out_cells);
}

template <int K, bool kFirst, bool kLast, class T>
__global__ void __launch_bounds__(256) fwd_v6_van_herk_kernel(ForwardArgs<T> a, AxisPass ps, PassDecoder groups,
                                                              FastDiv by_c, FastDiv by_ow, const T* __restrict__ in_vals,
                                                              const CellT* __restrict__ in_cells, T* __restrict__ out_vals,
                                                              CellT* __restrict__ out_cells) {
  static_assert(K > 0, "K = 0 is fwd_v6_slide_kernel");
  slide_pass<K, kFirst, kLast>(a, ps, groups, by_c, by_ow, in_vals, in_cells, out_vals, out_cells);
}

// The W pass in NCDHW (inner = 1) at stride 1, undilated, for the kernel sizes of kVanHerkK: a row is
// W consecutive cells, so a thread that slid along it as above would read 15 consecutive addresses
// while its neighbour reads the next 15 (many sectors per load instruction). Instead a block copies
// a run of whole rows from x into shared memory, consecutive threads reading consecutive elements,
// and each thread takes one row of the run (lane = row) and groups of kSlide outputs of it, van
// Herk's form, from shared memory. The rows lie an odd number of words apart there, so a warp's 32
// rows fall in 32 different banks. The results go to shared memory the same way, then out to the
// scratch in order, consecutive threads writing consecutive elements. A block holds row_sets sets
// of 32 rows and warps_per_set warps per set (warp w: set w / warps_per_set, groups w %
// warps_per_set, then every warps_per_set-th), so that rows of few groups keep every warp busy.
struct RowPlan {
  int warps_per_set = 8, row_sets = 1, in_pitch = 1, out_pitch = 1;  // pitches in elements
  std::size_t smem = 0;
  TUT_HD int rows() const { return 32 * row_sets; }
};

inline constexpr std::size_t kRowSmemMax = 48 * 1024;

// A pitch of at least n elements of `bytes` bytes that is an odd number of 4-byte words.
inline int odd_word_pitch(int n, std::size_t bytes) {
  if (bytes == 4) return n | 1;
  const int words = (n + 1) / 2;  // halves: 2 per word
  return 2 * (words | 1);
}

template <class T>
RowPlan row_plan(const AxisPass& ps) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 2, "float or half");
  RowPlan rp;
  const int n_groups = (ps.out_len + kSlide - 1) / kSlide;
  rp.warps_per_set = 1;
  while (rp.warps_per_set < 8 && rp.warps_per_set < n_groups) rp.warps_per_set *= 2;
  rp.row_sets = 8 / rp.warps_per_set;
  rp.in_pitch = odd_word_pitch(ps.len, sizeof(T));
  rp.out_pitch = odd_word_pitch(ps.out_len, sizeof(T));
  rp.smem = static_cast<std::size_t>(rp.rows()) * (static_cast<std::size_t>(rp.in_pitch) * sizeof(T) +
                                                   static_cast<std::size_t>(rp.out_pitch) * (sizeof(T) + sizeof(CellT)));
  return rp;
}

inline bool van_herk_k(int k) {
  for (int kk : kVanHerkK)
    if (k == kk) return true;
  return false;
}

// Where the W pass (the first) takes fwd_v6_row_kernel: NCDHW, stride 1, undilated, a kernel size
// of kVanHerkK, and rows short enough for the block's shared memory (W up to about 140 for float).
template <class T>
bool slides_rows(const AxisPass& ps) {
  return ps.s == 1 && ps.dil == 1 && ps.inner == 1 && van_herk_k(ps.k) && ps.len <= 4096 &&
         row_plan<T>(ps).smem <= kRowSmemMax;
}

template <int K, class T>
__global__ void __launch_bounds__(256) fwd_v6_row_kernel(AxisPass ps, RowPlan rp, FastDiv by_len, FastDiv by_out,
                                                         const T* __restrict__ x, T* __restrict__ out_vals,
                                                         CellT* __restrict__ out_cells) {
  constexpr int kSpan = kSlide + K - 1;
  extern __shared__ __align__(16) unsigned char row_smem[];
  const int rows = rp.rows();
  T* in_s = reinterpret_cast<T*>(row_smem);
  T* ov_s = in_s + rows * rp.in_pitch;
  CellT* oc_s = reinterpret_cast<CellT*>(ov_s + rows * rp.out_pitch);
  const int n_groups = (ps.out_len + kSlide - 1) / kSlide;
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const int r = warp / rp.warps_per_set * 32 + lane, g_first = warp % rp.warps_per_set;
  for (std::int64_t row0 = static_cast<std::int64_t>(blockIdx.x) * rows; row0 < ps.outer;
       row0 += static_cast<std::int64_t>(gridDim.x) * rows) {
    const int n_rows = static_cast<int>(min(static_cast<std::int64_t>(rows), ps.outer - row0));
    const T* src = x + row0 * ps.len;
    const int n_in = n_rows * ps.len;
#pragma unroll 4
    for (int e = static_cast<int>(threadIdx.x); e < n_in; e += static_cast<int>(blockDim.x)) {
      const int er = static_cast<int>(by_len.div(static_cast<std::uint32_t>(e)));
      in_s[er * rp.in_pitch + (e - er * ps.len)] = src[e];
    }
    __syncthreads();
    if (r < n_rows) {
      const T* row = in_s + r * rp.in_pitch;
      for (int g = g_first; g < n_groups; g += rp.warps_per_set) {
        const int l0 = g * kSlide, start = l0 - ps.p;
        T v[kSpan];
        int a[kSpan];
#pragma unroll
        for (int j = 0; j < kSpan; ++j) {
          const int from = slide_source(start + j, ps.len);
          v[j] = row[from];
          a[j] = from - start;  // the W pass's cell step is 1, and there is no previous cell
        }
        T best[kSlide];
        int best_a[kSlide];
        sliding_best<K>(v, a, best, best_a);
#pragma unroll
        for (int m = 0; m < kSlide; ++m) {
          if (l0 + m >= ps.out_len) break;
          ov_s[r * rp.out_pitch + l0 + m] = best[m];
          oc_s[r * rp.out_pitch + l0 + m] = static_cast<CellT>(best_a[m] - m);
        }
      }
    }
    __syncthreads();
    const int n_out = n_rows * ps.out_len;
    T* dst_v = out_vals + row0 * ps.out_len;
    CellT* dst_c = out_cells + row0 * ps.out_len;
    for (int e = static_cast<int>(threadIdx.x); e < n_out; e += static_cast<int>(blockDim.x)) {
      const int er = static_cast<int>(by_out.div(static_cast<std::uint32_t>(e)));
      const int at = er * rp.out_pitch + (e - er * ps.out_len);
      dst_v[e] = ov_s[at];
      dst_c[e] = oc_s[at];
    }
    __syncthreads();  // the next run of rows overwrites the shared memory
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
    const auto launch = [&](auto kk) {
      constexpr int K = decltype(kk)::value;
      if (last) fwd_v6_van_herk_kernel<K, false, true, T><<<grid, kBlock, 0, s>>>(a, ps, groups, by_c, by_ow, in_v, in_c, out_v, out_c);
      else if (first) fwd_v6_van_herk_kernel<K, true, false, T><<<grid, kBlock, 0, s>>>(a, ps, groups, by_c, by_ow, in_v, in_c, out_v, out_c);
      else fwd_v6_van_herk_kernel<K, false, false, T><<<grid, kBlock, 0, s>>>(a, ps, groups, by_c, by_ow, in_v, in_c, out_v, out_c);
    };
    static_assert(kVanHerkK[0] == 3 && kVanHerkK[1] == 5 && kVanHerkK[2] == 8, "the switch below lists kVanHerkK");
    switch (ps.k) {
      case 3: launch(std::integral_constant<int, 3>{}); break;
      case 5: launch(std::integral_constant<int, 5>{}); break;
      case 8: launch(std::integral_constant<int, 8>{}); break;
      default:
        if (last) fwd_v6_slide_kernel<false, true, T><<<grid, kBlock, 0, s>>>(a, ps, groups, by_c, by_ow, in_v, in_c, out_v, out_c);
        else if (first) fwd_v6_slide_kernel<true, false, T><<<grid, kBlock, 0, s>>>(a, ps, groups, by_c, by_ow, in_v, in_c, out_v, out_c);
        else fwd_v6_slide_kernel<false, false, T><<<grid, kBlock, 0, s>>>(a, ps, groups, by_c, by_ow, in_v, in_c, out_v, out_c);
    }
    TUT_CHECK_LAUNCH("fwd_v6_slide_kernel");
  };
  const auto pass = [&](const AxisPass& ps, const T* in_v, const CellT* in_c, T* out_v, CellT* out_c, bool first,
                        const char* who) {
    if (slides(ps)) return slide(ps, in_v, in_c, out_v, out_c, first, false, who);
    if (first && slides_rows<T>(ps)) {
      const RowPlan rp = row_plan<T>(ps);
      const unsigned grid = grid_for((ps.outer + rp.rows() - 1) / rp.rows() * kBlock, kBlock, who);
      const FastDiv by_len(ps.len), by_out(ps.out_len);
      const auto launch = [&](auto kk) {
        constexpr int K = decltype(kk)::value;
        fwd_v6_row_kernel<K, T><<<grid, kBlock, rp.smem, s>>>(ps, rp, by_len, by_out, in_v, out_v, out_c);
      };
      if (ps.k == 3) launch(std::integral_constant<int, 3>{});
      else if (ps.k == 5) launch(std::integral_constant<int, 5>{});
      else launch(std::integral_constant<int, 8>{});
      TUT_CHECK_LAUNCH("fwd_v6_row_kernel");
      return;
    }
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
