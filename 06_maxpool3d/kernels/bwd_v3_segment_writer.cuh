// bwd v3_segment_writer: the deterministic backward where windows do not overlap. Along an axis,
// window o covers (k - 1) * dil + 1 cells starting at o*s - p; when that span is at most the
// stride on every axis, no input cell lies in two windows, so each cell receives the dy of at most
// one output and there is nothing to add at all: dx is dy at each output's saved cell and 0
// everywhere else. Then the output can write its own cells.
//
// The cells are split among the outputs by "segments": along an axis, output o owns the cells
// [o*s - p, (o+1)*s - p), the first output from 0 and the last to the end of the axis. A segment
// holds its window (span <= stride) and the gap after it, so the segments tile the input exactly
// and every dx element is written once, by one thread, with no zeroing pass and no atomics.
//
// One thread per (input slice, output row, output column): in NCDHW, thread (n, c, d, oh, ow) writes
// the part of slice d in oh's segment along H and ow's along W; in NDHWC, thread (n, d, oh, ow,
// channel group) writes V channels at each of those positions. It reads its output's dy and index
// together (the threads of one output's slices read the same ones: L1 serves the repeats), finds
// the saved cell, and writes dy there and 0 elsewhere, in V-wide stores (16 bytes where the segments
// and rows are aligned to 4 floats, 8 bytes to 2, else one element).
//
// What changed since v1 (the gather): v1's thread took one dx element and looked for the outputs
// that cover it, with runtime loops and one dependent load after another (about 380 instructions per
// input on the stem case). Here a thread decodes once and writes a whole piece of a segment with
// vector stores; where windows do not overlap there is exactly one candidate, so no search. (A first
// form gave a thread one row of a segment; on kernel 2 it decoded once per 2 elements and was bound by
// instructions.)
//
// Prediction: the bytes of the floor, dx written once (in*4), dy and the index read once from
// DRAM (out*(4 + index bytes)); the zero-then-scatter backward (v0, PyTorch's) writes dx twice and
// reads-modifies-writes the chosen cells. For 2x64x64^3 with kernel 8 the floor is nearly all dx:
// expect the copy ceiling's speed, like a memset. SASS: STG.E.128 stores; no RED or ATOM
// (tests/test_sass.cpp).
//
// Measured (H100, results/): on kernel 2 stride 2, 0.79 of copy, twice the scatter's speed, with a
// third less DRAM traffic. On kernel 8 stride 8 it loses to the scatter (0.40 against 0.86): each
// thread waits for its index and dy, then stores 8 rows of 32 bytes, and the DRAM is 39 % busy. A
// thread per 16-byte chunk of dx, storing like a memset, is the next form (bwd_v5_chunk_writer.cuh).
#pragma once

#include "kernels/bwd.cuh"

namespace ch06 {

struct SegmentDivs {
  bool narrow = true;     // the thread count fits 32 bits
  FastDiv by_groups;      // NDHWC: channel groups
  FastDiv by_ow, by_oh, by_d;
  FastDiv by_sd;          // the stride along D: a slice's output
  FastDiv by_w, by_hh;    // int64 index: the saved cell's place (W, H)
  FastDiv by_kw, by_kh;   // compact index: the window cell's row and slice
};

// The output along an axis whose segment holds cell x: floor((x + p) / s), the last one for cells
// past the last window.
__device__ __forceinline__ int segment_of(int x, int p, int out, const FastDiv& by_s) {
  return min(out - 1, static_cast<int>(by_s.div(static_cast<std::uint32_t>(x + p))));
}

// Output o's saved cell as a position in the volume (td, th, tw). (od, oh, ow) is o's position.
template <class T>
__device__ __forceinline__ void target_of(const BackwardArgs<T>& a, const SegmentDivs& dv, std::int64_t o, int od,
                                          int oh, int ow, int& td, int& th, int& tw) {
  const Window& w = a.w;
  if (w.indices == IndexFormat::int64) {
    const std::uint32_t f = static_cast<std::uint32_t>(a.index[o]), r = dv.by_w.div(f), q = dv.by_hh.div(r);
    tw = static_cast<int>(f - r * static_cast<std::uint32_t>(w.W));
    th = static_cast<int>(r - q * static_cast<std::uint32_t>(w.H));
    td = static_cast<int>(q);
    return;
  }
  const std::uint32_t cell = static_cast<std::uint32_t>(saved_cell(a, o)), r = dv.by_kw.div(cell);
  const int jw = static_cast<int>(cell - r * static_cast<std::uint32_t>(w.k[2]));
  const int jd = static_cast<int>(dv.by_kh.div(r)), jh = static_cast<int>(r) - jd * w.k[1];
  td = od * w.s[0] - w.p[0] + jd * w.dil[0];
  th = oh * w.s[1] - w.p[1] + jh * w.dil[1];
  tw = ow * w.s[2] - w.p[2] + jw * w.dil[2];
}

// Output o's segment along an axis of `in` cells: [x0, x1).
__device__ __forceinline__ void segment(int o, int s, int p, int out, int in, int& x0, int& x1) {
  x0 = o == 0 ? 0 : o * s - p;
  x1 = o == out - 1 ? in : min(in, (o + 1) * s - p);
}

// NCDHW: thread i = (((n*C + c)*D + d)*oH + oh) * oW + ow writes, in slice d, the rows of oh's
// segment along H and the cells of ow's segment along W: consecutive threads write consecutive
// pieces of the same rows.
template <int V, class T>
__global__ void __launch_bounds__(256) bwd_v3_segments_ncdhw_kernel(BackwardArgs<T> a, SegmentDivs dv) {
  using Pack = tut::ew::Packed<T, V>;
  const Window& w = a.w;
  const std::int64_t total = w.N * w.C * w.D * static_cast<std::int64_t>(w.oH) * w.oW;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    int ow, oh, d;
    std::int64_t nc;
    if (dv.narrow) {
      std::uint32_t r = static_cast<std::uint32_t>(i), q = dv.by_ow.div(r);
      ow = static_cast<int>(r - q * static_cast<std::uint32_t>(w.oW));
      r = q;
      q = dv.by_oh.div(r);
      oh = static_cast<int>(r - q * static_cast<std::uint32_t>(w.oH));
      r = q;
      q = dv.by_d.div(r);
      d = static_cast<int>(r - q * static_cast<std::uint32_t>(w.D));
      nc = q;
    } else {
      std::int64_t r = i;
      ow = static_cast<int>(r % w.oW);
      r /= w.oW;
      oh = static_cast<int>(r % w.oH);
      r /= w.oH;
      d = static_cast<int>(r % w.D);
      nc = r / w.D;
    }
    const int od = segment_of(d, w.p[0], w.oD, dv.by_sd);
    const std::int64_t o = ((nc * w.oD + od) * w.oH + oh) * w.oW + ow;
    const T g = a.dy[o];  // loaded with the index, whether or not this slice holds the saved cell
    int td, th, tw;
    target_of(a, dv, o, od, oh, ow, td, th, tw);
    if (td != d) th = -1;  // no row of this slice holds it
    int h0, h1, x0, x1;
    segment(oh, w.s[1], w.p[1], w.oH, w.H, h0, h1);
    segment(ow, w.s[2], w.p[2], w.oW, w.W, x0, x1);
    T* slice = a.dx + (nc * w.D + d) * static_cast<std::int64_t>(w.H) * w.W;
    for (int h = h0; h < h1; ++h) {
      T* row = slice + static_cast<std::int64_t>(h) * w.W;
      const int hit = h == th ? tw : -1;
      for (int x = x0; x < x1; x += V) {
        Pack p;
#pragma unroll
        for (int l = 0; l < V; ++l) p.elem[l] = x + l == hit ? g : T(0);
        *reinterpret_cast<Pack*>(row + x) = p;
      }
    }
  }
}

// NDHWC: thread i = ((((n*D + d)*oH + oh)*oW + ow) * groups + g writes V channels at every position of
// slice d in oh's segment along H and ow's along W.
template <int V, class T>
__global__ void __launch_bounds__(256) bwd_v3_segments_ndhwc_kernel(BackwardArgs<T> a, SegmentDivs dv) {
  using Pack = tut::ew::Packed<T, V>;
  const Window& w = a.w;
  const std::int64_t groups = w.C / V, total = w.N * w.D * static_cast<std::int64_t>(w.oH) * w.oW * groups;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    int ow, oh, d;
    std::int64_t g, n;
    if (dv.narrow) {
      std::uint32_t r = static_cast<std::uint32_t>(i), q = dv.by_groups.div(r);
      g = r - q * static_cast<std::uint32_t>(groups);
      r = q;
      q = dv.by_ow.div(r);
      ow = static_cast<int>(r - q * static_cast<std::uint32_t>(w.oW));
      r = q;
      q = dv.by_oh.div(r);
      oh = static_cast<int>(r - q * static_cast<std::uint32_t>(w.oH));
      r = q;
      q = dv.by_d.div(r);
      d = static_cast<int>(r - q * static_cast<std::uint32_t>(w.D));
      n = q;
    } else {
      std::int64_t r = i;
      g = r % groups;
      r /= groups;
      ow = static_cast<int>(r % w.oW);
      r /= w.oW;
      oh = static_cast<int>(r % w.oH);
      r /= w.oH;
      d = static_cast<int>(r % w.D);
      n = r / w.D;
    }
    const int od = segment_of(d, w.p[0], w.oD, dv.by_sd);
    const std::int64_t o0 = (((n * w.oD + od) * w.oH + oh) * w.oW + ow) * w.C + g * V;  // the first channel
    int th[V], tw[V];
    T gv[V];
#pragma unroll
    for (int l = 0; l < V; ++l) {
      gv[l] = a.dy[o0 + l];
      int td;
      target_of(a, dv, o0 + l, od, oh, ow, td, th[l], tw[l]);
      if (td != d) th[l] = -1;
    }
    int h0, h1, x0, x1;
    segment(oh, w.s[1], w.p[1], w.oH, w.H, h0, h1);
    segment(ow, w.s[2], w.p[2], w.oW, w.W, x0, x1);
    for (int h = h0; h < h1; ++h) {
      T* pos = a.dx + (((n * w.D + d) * w.H + h) * w.W + x0) * w.C + g * V;
      for (int x = x0; x < x1; ++x, pos += w.C) {
        Pack p;
#pragma unroll
        for (int l = 0; l < V; ++l) p.elem[l] = (h == th[l]) & (x == tw[l]) ? gv[l] : T(0);
        *reinterpret_cast<Pack*>(pos) = p;
      }
    }
  }
}

template <class T>
std::string bwd_v3_refuses(const Window& w) {
  return disjoint_writer_refuses(w, "bwd_v3_segment_writer");
}

// The store width: V elements when every segment boundary and row start is a multiple of V
// (NCDHW) or every position's channels are (NDHWC), and dx is aligned to V elements.
template <class T>
int bwd_v3_pack(const BackwardArgs<T>& a) {
  const Window& w = a.w;
  const auto fits = [&](int V) {
    if (reinterpret_cast<std::uintptr_t>(a.dx) % (V * sizeof(T)) != 0) return false;
    if (w.layout == Layout::ndhwc) return w.C % V == 0;
    return w.W % V == 0 && w.s[2] % V == 0 && w.p[2] % V == 0;
  };
  return fits(4) ? 4 : fits(2) ? 2 : 1;
}

template <class T>
void bwd_v3_segment_writer(cudaStream_t s, const BackwardArgs<T>& a) {
  check_backward(a, "bwd_v3_segment_writer");
  if (const std::string why = bwd_v3_refuses<T>(a.w); !why.empty()) throw tut::Unsupported(why);
  const Window& w = a.w;
  const int V = bwd_v3_pack(a);
  const bool cl = w.layout == Layout::ndhwc;
  const std::int64_t groups = cl ? w.C / V : 1;
  const std::int64_t total = (cl ? w.N * groups : w.N * w.C) * w.D * static_cast<std::int64_t>(w.oH) * w.oW;
  SegmentDivs dv;
  dv.narrow = total <= kMaxInt32;
  if (dv.narrow) {
    dv.by_groups = FastDiv(groups);
    dv.by_ow = FastDiv(w.oW);
    dv.by_oh = FastDiv(w.oH);
    dv.by_d = FastDiv(w.D);
  }
  dv.by_sd = FastDiv(w.s[0]);
  dv.by_w = FastDiv(w.W);
  dv.by_hh = FastDiv(w.H);
  dv.by_kw = FastDiv(w.k[2]);
  dv.by_kh = FastDiv(w.k[1]);
  constexpr int kBlock = 256;
  const unsigned grid = grid_for(total, kBlock, "bwd_v3_segment_writer");
  const auto launch = [&](auto v) {
    constexpr int kV = decltype(v)::value;
    if (cl) bwd_v3_segments_ndhwc_kernel<kV, T><<<grid, kBlock, 0, s>>>(a, dv);
    else bwd_v3_segments_ncdhw_kernel<kV, T><<<grid, kBlock, 0, s>>>(a, dv);
  };
  if (V == 4) launch(std::integral_constant<int, 4>{});
  else if (V == 2) launch(std::integral_constant<int, 2>{});
  else launch(std::integral_constant<int, 1>{});
  TUT_CHECK_LAUNCH("bwd_v3_segments_kernel");
}

template <class T>
std::vector<const void*> bwd_v3_kernels() {
  return {TUT_KERNEL(bwd_v3_segments_ncdhw_kernel<4, T>), TUT_KERNEL(bwd_v3_segments_ncdhw_kernel<1, T>),
          TUT_KERNEL(bwd_v3_segments_ndhwc_kernel<4, T>), TUT_KERNEL(bwd_v3_segments_ndhwc_kernel<1, T>)};
}

}  // namespace ch06
