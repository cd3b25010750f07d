// fwd v8_wide_loads: large windows read with 16-byte loads along the contiguous axis (W in NCDHW, C
// in NDHWC), a batch of 8 loads in flight before the first compare; in NDHWC, a large window's rows
// are also split over up to 8 lanes, whose bests meet in shuffles.
//
// What changed since v2 and v7: there a thread reads its window one element (v2) or one cell (v7)
// per load. On large windows over few outputs that starves the memory system. 256 x 256 planes of
// 8^3 with kernel 8 have 65536 outputs: v2's 65536 threads each issue 512 four-byte loads, and each
// load instruction's 32 lanes fall in 32 different planes, 32 sectors per request of which one
// element is used (Nsight Compute: 30 % of DRAM's peak, 0.32 of copy); v6's three passes do better
// there (0.57). In NDHWC, v7's thread walks 512 cells one load after another (0.17 of copy). Here an
// NCDHW thread reads a window row of 8 floats as two 16-byte loads, 8 of them in flight, a quarter of
// the load instructions and L1 lookups; an NDHWC window's 64 rows go to 8 lanes, 8 times the threads
// and each with 8 loads in flight.
//
// The combine (NDHWC). PyTorch's rule is sequential: in scan order, a cell replaces the best so far
// when it is larger or NaN. Its result is: the last NaN if the window has one, else the first cell
// of the largest value (+0 and -0 equal). That is the maximum of an order on (value, cell): NaN above
// every number and later NaN above earlier; among numbers the larger value, and for equal values
// the earlier cell. Taking a maximum does not depend on how the cells are grouped or in which order
// the groups meet, so each lane scans its own rows in scan order with PyTorch's rule (the results
// agree), and the lanes combine with `outranks` (kernels/pool.cuh) in any order: an XOR butterfly
// of shuffles (tests/test_cpu.cu checks the order against the reference on split windows).
//
// Prediction: the input read once, in fully used sectors, with 128 bytes in flight per thread. Where
// windows do not overlap and are large (kernel 4 on 4^3, kernel 8 on 8^3 or 64^3), near the copy
// ceiling. A first form split NCDHW windows over lanes too (16 to 32 lanes per window, the window's
// pieces decoded with two divisions each): 137 M warp instructions on 4^3 planes with kernel 4, 0.27
// of copy, bound by instructions. On small windows (kernel 2) v2's one thread per output stays the
// choice. SASS: LDG.E.128 and, in NDHWC, SHFL.BFLY (tests/test_sass.cpp).
//
// Measured (H100, results/): 0.67 of copy on 4^3 planes with kernel 4 (v2 0.32, v6 0.43), 0.63 on 8^3
// with kernel 8 (v6 0.56), 0.58 on the same in NDHWC (v6 0.50, v7 0.17). Not the ceiling: 78
// registers per thread leave 24 % occupancy on the 8^3 planes, the warps wait on loads two thirds of
// the time, DRAM 68 % busy.
#pragma once

#include "kernels/pool.cuh"

namespace ch06 {

// The best over the `lanes` consecutive lanes (a power of two <= 32) that share a window; every
// one of them ends with it.
template <class T>
__device__ __forceinline__ void combine_lanes(T& best, int& cell, int lanes) {
  for (int m = 1; m < lanes; m *= 2) {
    const T v = __shfl_xor_sync(0xffffffffu, best, m);
    const int c = __shfl_xor_sync(0xffffffffu, cell, m);
    if (outranks(v, c, best, cell)) {
      best = v;
      cell = c;
    }
  }
}

// One lane's scan in PyTorch's order, from "no cell yet": the first cell always enters.
template <class T>
__device__ __forceinline__ void take(T v, int c, T& best, int& cell) {
  if (replaces(best, v) | (cell < 0)) {
    best = v;
    cell = c;
  }
}

inline constexpr int kBatch = 8;  // chunks (NCDHW) or cells (NDHWC) loaded before comparing

// NCDHW. One thread per output; the window's rows are read in chunks of V cells along W (16 bytes
// for float when W, the stride, padding and kernel along W are multiples of 4 and x is aligned, so a
// chunk lies wholly inside the row or wholly outside it), kBatch chunks loaded before the first
// compare. Chunk p of the window is row p / chunks (jd * kH + jh), chunk p % chunks.
template <int V, class T>
__global__ void __launch_bounds__(256) fwd_v8_ncdhw_kernel(ForwardArgs<T> a, OutDecoder dec, int chunks,
                                                          FastDiv by_chunks, FastDiv by_kh) {
  using Pack = tut::ew::Packed<T, V>;
  const Window& w = a.w;
  const int pieces = w.k[0] * w.k[1] * chunks;
  const std::int64_t total = w.out_numel(), plane = w.in_plane();
  for (std::int64_t o = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; o < total;
       o += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const OutPos q = dec(o);
    const int d0 = q.od * w.s[0] - w.p[0], h0 = q.oh * w.s[1] - w.p[1], w0 = q.ow * w.s[2] - w.p[2];
    const T* x = a.x + (q.n * w.C + q.c) * plane;
    T best = lowest<T>();
    int cell = -1;
    for (int first = 0; first < pieces; first += kBatch) {
      Pack v[kBatch];
      int c0[kBatch];
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        const int piece = first + u;
        const int row = static_cast<int>(by_chunks.div(static_cast<std::uint32_t>(piece)));  // jd * kH + jh
        const int ch = piece - row * chunks;
        const int jd = static_cast<int>(by_kh.div(static_cast<std::uint32_t>(row))), jh = row - jd * w.k[1];
        const int d = d0 + jd, h = h0 + jh, xw = w0 + ch * V;
        const bool in = piece < pieces && static_cast<unsigned>(d) < static_cast<unsigned>(w.D) &&
                        static_cast<unsigned>(h) < static_cast<unsigned>(w.H);
        const T* at = x + (static_cast<std::int64_t>(d) * w.H + h) * w.W + xw;
        c0[u] = -1;
        if constexpr (V > 1) {
          if (in && xw >= 0 && xw < w.W) {  // else the chunk lies wholly outside
            v[u] = *reinterpret_cast<const Pack*>(at);
            c0[u] = row * w.k[2] + ch * V;
          }
        } else if (in && static_cast<unsigned>(xw) < static_cast<unsigned>(w.W)) {
          v[u].elem[0] = *at;
          c0[u] = row * w.k[2] + ch;
        }
      }
#pragma unroll
      for (int u = 0; u < kBatch; ++u)
        if (c0[u] >= 0) {
#pragma unroll
          for (int l = 0; l < V; ++l) take(v[u].elem[l], c0[u] + l, best, cell);
        }
    }
    store_result(a, o, best, cell, d0, h0, w0);
  }
}

// NDHWC. Thread t = ((position * groups + g) * R + r): R lanes (`parts`) share V channels of one
// output position; lane r takes the window's rows r, r + R, ..., and in each row loads the row's
// cells eight at a time before comparing them.
template <int V, class T>
__global__ void __launch_bounds__(256) fwd_v8_ndhwc_kernel(ForwardArgs<T> a, int parts, FastDiv by_groups,
                                                          FastDiv by_ow, FastDiv by_oh, FastDiv by_od, FastDiv by_kh) {
  using Pack = tut::ew::Packed<T, V>;
  const Window& w = a.w;
  const int r = static_cast<int>(threadIdx.x) & (parts - 1);
  const std::int64_t groups = w.C / V, total = w.N * w.out_plane() * groups * parts;
  const bool narrow = total / parts <= kMaxInt32;
  const int rows = w.k[0] * w.k[1];
  const int warp_lane = static_cast<int>(threadIdx.x) & 31;  // whole warps loop together, as in NCDHW
  for (std::int64_t t = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; t - warp_lane < total;
       t += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const bool here = t < total;
    const std::int64_t o = here ? t / parts : 0;  // (position, group)
    const ChannelItem it = channel_item(o, groups, narrow, w, by_groups, by_ow, by_oh, by_od);
    const std::int64_t g = it.g, n = it.n;
    const int ow = it.ow, oh = it.oh, od = it.od;
    const int d0 = od * w.s[0] - w.p[0], h0 = oh * w.s[1] - w.p[1], w0 = ow * w.s[2] - w.p[2];
    const T* x = a.x + n * w.in_plane() * w.C + g * V;
    T best[V];
    int cell[V];
#pragma unroll
    for (int l = 0; l < V; ++l) {
      best[l] = lowest<T>();
      cell[l] = -1;
    }
    const int jw_lo = max(0, -w0), jw_hi = min(w.k[2], w.W - w0);  // the row's inside cells
    for (int row = r; row < rows; row += parts) {
      const int jd = static_cast<int>(by_kh.div(static_cast<std::uint32_t>(row))), jh = row - jd * w.k[1];
      const int d = d0 + jd, h = h0 + jh;
      if (static_cast<unsigned>(d) >= static_cast<unsigned>(w.D) || static_cast<unsigned>(h) >= static_cast<unsigned>(w.H))
        continue;
      const T* at = x + ((static_cast<std::int64_t>(d) * w.H + h) * w.W + w0) * w.C;
      for (int jw = jw_lo; jw < jw_hi; jw += kBatch) {
        Pack v[kBatch];
#pragma unroll
        for (int u = 0; u < kBatch; ++u)
          if (jw + u < jw_hi) v[u] = *reinterpret_cast<const Pack*>(at + static_cast<std::int64_t>(jw + u) * w.C);
#pragma unroll
        for (int u = 0; u < kBatch; ++u)
          if (jw + u < jw_hi) {
#pragma unroll
            for (int l = 0; l < V; ++l) take(v[u].elem[l], row * w.k[2] + jw + u, best[l], cell[l]);
          }
      }
    }
#pragma unroll
    for (int l = 0; l < V; ++l) combine_lanes(best[l], cell[l], parts);
    if (here && r == 0) {
      store_channels<V>(a, o * V, best, cell, d0, h0, w0);  // (n, od, oh, ow, g*V): the output's first channel
    }
  }
}

template <class T>
std::string fwd_v8_refuses(const Window& w) {
  if (w.dilated()) return "fwd_v8_wide_loads takes dilation 1 only";
  return {};
}

// The largest power of two <= n, at most `cap`.
inline int pow2_at_most(std::int64_t n, int cap) {
  int p = 1;
  while (p * 2 <= cap && p * 2 <= n) p *= 2;
  return p;
}

// NCDHW: the chunk width.
template <class T>
int fwd_v8_chunk(const ForwardArgs<T>& a) {
  const Window& w = a.w;
  constexpr int kV = 16 / sizeof(T);
  for (int V : {kV, 2}) {
    if (w.W % V == 0 && w.s[2] % V == 0 && w.p[2] % V == 0 && w.k[2] % V == 0 &&
        reinterpret_cast<std::uintptr_t>(a.x) % (V * sizeof(T)) == 0)
      return V;
  }
  return 1;
}
// NDHWC: the pack width (v7's rule), and how many lanes share V channels of a position: enough
// threads for the device (2^17), at most 8, at most the window's rows.
template <class T>
int fwd_v8_pack(const ForwardArgs<T>& a) {
  constexpr int kV = 16 / sizeof(T);
  if (a.w.C % kV == 0 && tut::ew::all_aligned<kV>(a.x, a.y)) return kV;
  if (a.w.C % 2 == 0 && tut::ew::all_aligned<2>(a.x, a.y)) return 2;
  return 1;
}
inline int fwd_v8_parts(const Window& w, int V) {
  const std::int64_t threads = w.N * w.out_plane() * (w.C / V);
  int parts = 1;
  while (parts < 8 && parts * 2 <= static_cast<std::int64_t>(w.k[0]) * w.k[1] && threads * parts < (1 << 17)) parts *= 2;
  return parts;
}

template <class T>
void fwd_v8_wide_loads(cudaStream_t s, const ForwardArgs<T>& a) {
  check_forward(a, "fwd_v8_wide_loads");
  if (const std::string why = fwd_v8_refuses<T>(a.w); !why.empty()) throw tut::Unsupported(why);
  const Window& w = a.w;
  constexpr int kBlock = 256, kV = 16 / sizeof(T);
  if (w.layout == Layout::ncdhw) {
    const int V = fwd_v8_chunk(a), chunks = (w.k[2] + V - 1) / V;
    const unsigned grid = grid_for(w.out_numel(), kBlock, "fwd_v8_wide_loads");
    const OutDecoder dec(w);
    const FastDiv by_chunks(chunks), by_kh(w.k[1]);
    if (V == kV) fwd_v8_ncdhw_kernel<kV, T><<<grid, kBlock, 0, s>>>(a, dec, chunks, by_chunks, by_kh);
    else if (V == 2) fwd_v8_ncdhw_kernel<2, T><<<grid, kBlock, 0, s>>>(a, dec, chunks, by_chunks, by_kh);
    else fwd_v8_ncdhw_kernel<1, T><<<grid, kBlock, 0, s>>>(a, dec, chunks, by_chunks, by_kh);
  } else {
    const int V = fwd_v8_pack(a), parts = fwd_v8_parts(w, V);
    const std::int64_t groups = w.C / V, total = w.N * w.out_plane() * groups;
    const bool narrow = total <= kMaxInt32;
    const ChannelDivs cd = channel_divs(w, groups, narrow);
    const FastDiv &g = cd.groups, &ow = cd.ow, &oh = cd.oh, &od = cd.od, kh(w.k[1]);
    const unsigned grid = grid_for(total * parts, kBlock, "fwd_v8_wide_loads");
    if (V == kV) fwd_v8_ndhwc_kernel<kV, T><<<grid, kBlock, 0, s>>>(a, parts, g, ow, oh, od, kh);
    else if (V == 2) fwd_v8_ndhwc_kernel<2, T><<<grid, kBlock, 0, s>>>(a, parts, g, ow, oh, od, kh);
    else fwd_v8_ndhwc_kernel<1, T><<<grid, kBlock, 0, s>>>(a, parts, g, ow, oh, od, kh);
  }
  TUT_CHECK_LAUNCH("fwd_v8_wide_loads");
}

template <class T>
std::vector<const void*> fwd_v8_kernels() {
  constexpr int kV = 16 / sizeof(T);
  return {TUT_KERNEL(fwd_v8_ncdhw_kernel<kV, T>), TUT_KERNEL(fwd_v8_ncdhw_kernel<1, T>),
          TUT_KERNEL(fwd_v8_ndhwc_kernel<kV, T>), TUT_KERNEL(fwd_v8_ndhwc_kernel<1, T>)};
}

}  // namespace ch06
