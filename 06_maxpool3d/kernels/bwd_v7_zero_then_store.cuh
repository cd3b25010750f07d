// bwd v7_zero_then_store: PyTorch's two steps, zero dx then one thread per output, without the
// atomics, for windows that do not overlap.
//
// What changed since v0 (the atomic scatter): only the add. When the window's span is at most the
// stride on every axis, no input cell lies in two windows, so two outputs can name the same cell
// only if a saved index lies outside its own window. The compact format cannot (it names a window
// cell); an int64 index can, if it was not written by this forward, so each thread checks that its
// index lies in its output's segment (the cells v3 and v5 write for that output) and drops it
// otherwise, as the gathers do. Then every cell receives at most one value, a plain store replaces
// atomicAdd, and the result is the same on every run: deterministic with no ordering at all.
//
// Why it should beat v5 (measured 0.498 of copy on kernel 8 stride 8, where v0 reached 0.876): the
// zeroing is cudaMemsetAsync, which writes at the memory's speed whatever the window is, and the
// stores (one per output: 65536 on 2x64x64^3 with kernel 8, 1 in 512 cells) are a small second
// kernel. Prediction: v0's time, memset plus a scatter of out = in / 512 elements, and no better:
// dx is written twice (the memset, then the chosen cells' sectors again), so against the memset
// alone this stays a little behind, and a single writer storing every cell once (v8) can at best tie
// a memset. SASS: no RED or ATOM (tests/test_sass.cpp).
//
// Measured (H100, results/): on 2x64x64^3 with kernel 8 stride 8, 0.922 of copy (int64) and 0.894
// (compact) in the suite, v0 0.876, v5 0.496; the store kernel is 4.3 us of it under Nsight
// Compute. Raced against PyTorch in one process with the GPU kept busy, 0.92x and 0.90x: PyTorch's
// fill kernel (41.1 us, DRAM 81 % busy) zeroes dx faster than cudaMemsetAsync does here, so the
// same two steps lose by the memset's difference. On kernel 2 stride 2 (8 cells per output) the
// store kernel is the scatter's cost again, 0.405, where v3 writes each cell once (0.787).
#pragma once

#include "kernels/bwd.cuh"

namespace ch06 {

// The divisors each thread needs, computed once per launch.
struct StoreDivs {
  OutDecoder dec;
  FastDiv by_W, by_H;  // an int64 index's place (d, h, w)
};

// Output o's saved cell as a position (td, th, tw), and whether it lies in o's segment on every axis
// (the segments of v3: [o*s - p, (o+1)*s - p), the first from 0, the last to the end). Host and
// device: the CPU tests run it.
// `saved` is o's saved index as read: the flat index (int64) or the window cell (compact).
template <class T>
TUT_HD inline bool saved_in_segment(const BackwardArgs<T>& a, const FastDiv& by_W, const FastDiv& by_H,
                                    std::int64_t saved, const OutPos& q, int& td, int& th, int& tw) {
  const Window& w = a.w;
  if (w.indices == IndexFormat::int64) {
    if (saved < 0 || saved >= w.in_plane()) return false;
    const std::uint32_t u = static_cast<std::uint32_t>(saved), r = by_W.div(u), t = by_H.div(r);
    tw = static_cast<int>(u - r * static_cast<std::uint32_t>(w.W));
    th = static_cast<int>(r - t * static_cast<std::uint32_t>(w.H));
    td = static_cast<int>(t);
  } else {
    int jd, jh, jw;
    w.cell_of(static_cast<int>(saved), jd, jh, jw);
    td = q.od * w.s[0] - w.p[0] + jd * w.dil[0];
    th = q.oh * w.s[1] - w.p[1] + jh * w.dil[1];
    tw = q.ow * w.s[2] - w.p[2] + jw * w.dil[2];
  }
  const auto inside = [](int x, int o, int s, int p, int out, int in) {
    const int x0 = o == 0 ? 0 : o * s - p, x1 = o == out - 1 ? in : (o + 1) * s - p;
    return x >= x0 && x < x1 && x < in;
  };
  return inside(td, q.od, w.s[0], w.p[0], w.oD, w.D) && inside(th, q.oh, w.s[1], w.p[1], w.oH, w.H) &&
         inside(tw, q.ow, w.s[2], w.p[2], w.oW, w.W);
}

// Output o's saved index as stored, in either format.
template <class T>
TUT_HD inline std::int64_t saved_of(const BackwardArgs<T>& a, std::int64_t o) {
  return a.w.indices == IndexFormat::int64 ? a.index[o] : saved_window_cell(a, o);
}

// Output o, its saved index and dy already read: dy stored at the saved cell, if the cell is in
// o's segment. Host and device.
template <class T>
TUT_HD inline void store_saved(const BackwardArgs<T>& a, const StoreDivs& dv, std::int64_t o, std::int64_t saved, T g) {
  const OutPos q = dv.dec(o);
  int td, th, tw;
  if (!saved_in_segment(a, dv.by_W, dv.by_H, saved, q, td, th, tw)) return;
  const std::int64_t flat = (static_cast<std::int64_t>(td) * a.w.H + th) * a.w.W + tw;
  a.dx[in_element(a.w, q.n, q.c, flat)] = g;
}

// One output: its loads, then its store.
template <class T>
TUT_HD inline void store_one_output(const BackwardArgs<T>& a, const StoreDivs& dv, std::int64_t o) {
  store_saved(a, dv, o, saved_of(a, o), a.dy[o]);
}

template <class T>
__global__ void __launch_bounds__(256) bwd_v7_store_kernel(BackwardArgs<T> a, StoreDivs dv) {
  const std::int64_t total = a.w.out_numel();
  for (std::int64_t o = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; o < total;
       o += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    store_one_output(a, dv, o);
}

template <class T>
std::string bwd_v7_refuses(const Window& w) {
  return disjoint_writer_refuses(w, "bwd_v7_zero_then_store");
}

template <class T>
StoreDivs store_divs(const Window& w) {
  StoreDivs dv;
  dv.dec = OutDecoder(w);
  dv.by_W = FastDiv(w.W);
  dv.by_H = FastDiv(w.H);
  return dv;
}

template <class T>
void bwd_v7_zero_then_store(cudaStream_t s, const BackwardArgs<T>& a) {
  check_backward(a, "bwd_v7_zero_then_store");
  if (const std::string why = bwd_v7_refuses<T>(a.w); !why.empty()) throw tut::Unsupported(why);
  TUT_CUDA(cudaMemsetAsync(a.dx, 0, static_cast<std::size_t>(a.w.in_numel()) * sizeof(T), s));
  constexpr int kBlock = 256;
  bwd_v7_store_kernel<T><<<grid_for(a.w.out_numel(), kBlock, "bwd_v7_zero_then_store"), kBlock, 0, s>>>(
      a, store_divs<T>(a.w));
  TUT_CHECK_LAUNCH("bwd_v7_store_kernel");
}

}  // namespace ch06
