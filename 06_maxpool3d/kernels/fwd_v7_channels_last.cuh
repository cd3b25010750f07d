// fwd v7_channels_last: the layout NDHWC (PyTorch's channels_last_3d), where the C values of one
// position are adjacent. Consecutive threads take consecutive groups of V channels of the same
// output position, and each window cell is one 16-byte load of V channels (V = 4 floats or 8
// halves) when C is a multiple of V and x and y are 16-byte aligned, else 8 bytes (V / 2), else
// one element.
//
// What changed since v0 on this layout: v0 gives a thread one channel, so a warp's load of a cell
// is 32 channels x 4 bytes, 128 contiguous bytes, already coalesced; but a thread then has one
// 4-byte load per cell in flight. Here a thread carries V channels' best values and cells
// through the window, so each load instruction moves 16 bytes and there are V times fewer threads
// and instructions. Any window, stride, padding, dilation and ceil_mode (the window loop tests
// each cell, as v0's does).
//
// Prediction: for windows that do not overlap, each input read once in 16-byte accesses, so near
// the copy ceiling when C >= 32 (a warp's load then covers at least 4 positions x 128 bytes).
// With overlap the same caching question as v0's; for large overlapping windows the dispatcher
// prefers v6, which reads this layout too.
//
// Loads in flight, where windows do not overlap (fwd_v7_disjoint_kernel). The window loop above
// compares each cell before it issues the next load: a thread has one 16-byte load in flight, an SM
// (38 registers, 6 blocks of 256) about 24 KB, near the ~23 KB the H100's DRAM needs in flight per
// SM (3 TB/s x ~1 us / 132 SMs); the memory-bound NDHWC cases stopped at 0.72 to 0.80 of copy. The
// second kernel numbers the cells in scan order and takes them kV7Batch at a time (four 16-byte
// packs, or eight smaller ones), decoded with two FastDivs, all of a batch's loads issued before its
// first compare: 64 registers, 4 blocks of 256, 64 KB in flight per SM. Prediction: the disjoint
// cases nearer the copy ceiling. Overlapping windows read their cells again from the caches, where
// more loads in flight matter less than the occupancy and the decode they cost.
// Measured (H100, results/forms/fwd_r6.*; the batched kernel ran on every case there): 1024 x 512
// planes of 4^3, kernel 4, 0.903 of copy against 0.804 (Nsight Compute 49.2 us, DRAM 82.9 % busy,
// 46 % occupancy; v9 0.817); 8 x 64 x 33^3 kernel 2 ceil_mode 0.894 against 0.798; C = 2
// (1 x 2 x 128 x 256^2) 0.780 against 0.718; 8^3 with kernel 8, 0.375 against 0.183 (v9 0.789);
// kernel 2 stride 2 with C = 512 and 64, 0.962 and 0.959 against 0.877 and 0.894; stride 3, 0.826
// against 0.702. On overlapping windows it lost, every one: kernel 3 stride 1 0.133 against 0.172,
// dilation 2 0.138 against 0.170, kernel 5 stride 2 0.124 against 0.159, kernel 3 stride 2 0.535
// against 0.560 (C = 64) and 0.173 against 0.254 (C = 1); hence the choice by windows_disjoint.
// The first kernel's code is the one measured before (its SASS is unchanged).
#pragma once

#include "kernels/pool.cuh"

namespace ch06 {

// Each channel's best before its window's first cell: the lowest value, and the window's first cell
// inside the input (PyTorch's index where every cell is -inf). The three kernels below start so.
template <int V, class T>
__device__ __forceinline__ void start_channels(const Window& w, int d0, int h0, int w0, T (&best)[V], int (&cell)[V]) {
  const int first = first_cell(w, d0, h0, w0);
#pragma unroll
  for (int l = 0; l < V; ++l) {
    best[l] = lowest<T>();
    cell[l] = first;
  }
}

template <int V, class T>
__global__ void __launch_bounds__(256) fwd_v7_channels_last_kernel(ForwardArgs<T> a, FastDiv by_groups,
                                                                   FastDiv by_ow, FastDiv by_oh, FastDiv by_od) {
  using Pack = tut::ew::Packed<T, V>;
  const Window& w = a.w;
  const std::int64_t groups = w.C / V, total = w.N * w.out_plane() * groups;
  const bool narrow = total <= kMaxInt32;
  for (std::int64_t o = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; o < total;
       o += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const ChannelItem it = channel_item(o, groups, narrow, w, by_groups, by_ow, by_oh, by_od);
    const std::int64_t g = it.g, n = it.n;
    const int ow = it.ow, oh = it.oh, od = it.od;
    const int d0 = od * w.s[0] - w.p[0], h0 = oh * w.s[1] - w.p[1], w0 = ow * w.s[2] - w.p[2];
    T best[V];
    int cell[V];
    start_channels(w, d0, h0, w0, best, cell);
    const T* x = a.x + n * w.in_plane() * w.C + g * V;
    for (int jd = 0; jd < w.k[0]; ++jd) {
      const int d = d0 + jd * w.dil[0];
      if (d < 0 || d >= w.D) continue;
      for (int jh = 0; jh < w.k[1]; ++jh) {
        const int h = h0 + jh * w.dil[1];
        if (h < 0 || h >= w.H) continue;
        const std::int64_t row = (static_cast<std::int64_t>(d) * w.H + h) * w.W;
        for (int jw = 0; jw < w.k[2]; ++jw) {
          const int xw = w0 + jw * w.dil[2];
          if (xw < 0 || xw >= w.W) continue;
          const Pack v = *reinterpret_cast<const Pack*>(x + (row + xw) * w.C);
          const int c = (jd * w.k[1] + jh) * w.k[2] + jw;
#pragma unroll
          for (int l = 0; l < V; ++l) {
            if (replaces(best[l], v.elem[l])) {
              best[l] = v.elem[l];
              cell[l] = c;
            }
          }
        }
      }
    }
    store_channels<V>(a, o * V, best, cell, d0, h0, w0);  // (n, od, oh, ow, g*V): the output's first channel
  }
}

// Windows that do not overlap (windows_disjoint: the stride at least the dilated window on every
// axis): the same thread items as fwd_v7_channels_last_kernel, but the window's cells numbered in
// scan order, c = (jd * kH + jh) * kW + jw, and taken kV7Batch at a time, all of a batch's loads
// issued before its first compare. The same compares in the same order, so the same results.
// (The position decode, channel_item, and the stores, store_channels, are pool.cuh's, shared with
// the first kernel and v8's NDHWC kernel.)
template <int V, class T>
inline constexpr int kV7Batch = 64 / (V * static_cast<int>(sizeof(T))) < 8 ? 64 / (V * static_cast<int>(sizeof(T))) : 8;

template <int V, class T>
__global__ void __launch_bounds__(256) fwd_v7_disjoint_kernel(ForwardArgs<T> a, FastDiv by_groups, FastDiv by_ow,
                                                              FastDiv by_oh, FastDiv by_od, FastDiv by_kw,
                                                              FastDiv by_kh) {
  using Pack = tut::ew::Packed<T, V>;
  constexpr int kB = kV7Batch<V, T>;
  const Window& w = a.w;
  const std::int64_t groups = w.C / V, total = w.N * w.out_plane() * groups;
  const bool narrow = total <= kMaxInt32;
  const int cells = w.cells();
  for (std::int64_t o = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; o < total;
       o += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const ChannelItem it = channel_item(o, groups, narrow, w, by_groups, by_ow, by_oh, by_od);
    const std::int64_t g = it.g, n = it.n;
    const int ow = it.ow, oh = it.oh, od = it.od;
    const int d0 = od * w.s[0] - w.p[0], h0 = oh * w.s[1] - w.p[1], w0 = ow * w.s[2] - w.p[2];
    T best[V];
    int cell[V];
    start_channels(w, d0, h0, w0, best, cell);
    const T* x = a.x + n * w.in_plane() * w.C + g * V;
    for (int c0 = 0; c0 < cells; c0 += kB) {
      Pack v[kB];
      bool in[kB];
#pragma unroll
      for (int u = 0; u < kB; ++u) {
        const int c = c0 + u;
        const std::uint32_t t = by_kw.div(static_cast<std::uint32_t>(c));
        const int jw = c - static_cast<int>(t) * w.k[2];
        const int jd = static_cast<int>(by_kh.div(t)), jh = static_cast<int>(t) - jd * w.k[1];
        const int d = d0 + jd * w.dil[0], h = h0 + jh * w.dil[1], xw = w0 + jw * w.dil[2];
        in[u] = c < cells && static_cast<unsigned>(d) < static_cast<unsigned>(w.D) &&
                static_cast<unsigned>(h) < static_cast<unsigned>(w.H) && static_cast<unsigned>(xw) < static_cast<unsigned>(w.W);
        if (in[u]) v[u] = *reinterpret_cast<const Pack*>(x + ((static_cast<std::int64_t>(d) * w.H + h) * w.W + xw) * w.C);
      }
#pragma unroll
      for (int u = 0; u < kB; ++u) {
        if (!in[u]) continue;
#pragma unroll
        for (int l = 0; l < V; ++l) {
          if (replaces(best[l], v[u].elem[l])) {
            best[l] = v[u].elem[l];
            cell[l] = c0 + u;
          }
        }
      }
    }
    store_channels<V>(a, o * V, best, cell, d0, h0, w0);  // (n, od, oh, ow, g*V): the output's first channel
  }
}

// Narrow cells (fwd_v7_row_pieces_kernel): where a cell's C channels take less than 16 bytes (C = 2
// floats: 8 bytes), a pack of one cell's channels is narrow, and so is every load. But along W the
// cells of a window row sit next to each other, kW x C elements in a run. When that run, the
// stride's and the padding's run and a row of the input are whole 16-byte pieces (kW C, sW C, pW C
// and W C multiples of 16 / elem, x 16-byte aligned, dilation 1 along W), a thread takes one output
// position with all its C channels and reads each window row as 16-byte pieces: a piece is P =
// 16 / (C elem) whole cells, and lies entirely inside the input or entirely in the padding. Element
// e of a piece is channel e % C of cell e / C; the pieces in scan order and their elements in order
// keep every channel's cells in scan order, so the compares, and the results, are the other
// kernels'. With C = 2 floats and kernel 2: 4 loads of 16 bytes per thread where fwd_v7_disjoint
// has 8 of 8 bytes, and a warp's load is 512 contiguous bytes instead of 512 bytes half used.
// Prediction: the C = 2 suite case (1 x 2 x 128 x 256^2, kernel 2 stride 2, 0.79 of copy with
// fwd_v7_disjoint) near its NCDHW twin, which v5 reads in 16-byte pieces at 0.93. Measured (H100,
// one process, results/NVIDIA_H100_80GB_HBM3.v7_pieces.txt): 0.907 of copy against the 8-byte
// packs' 0.798; Nsight Compute (results/NVIDIA_H100_80GB_HBM3.r8.ncu.csv) 27.3 us, DRAM 80.2 %
// busy, 16 sectors per load request, 56 registers.
template <int CC, class T>
__global__ void __launch_bounds__(256) fwd_v7_row_pieces_kernel(ForwardArgs<T> a, FastDiv by_ow, FastDiv by_oh,
                                                                FastDiv by_od, FastDiv by_row_pieces, FastDiv by_kh) {
  constexpr int kV = 16 / sizeof(T), P = kV / CC, kB = 4;
  using Pack = tut::ew::Packed<T, kV>;
  const Window& w = a.w;
  const std::int64_t total = w.N * w.out_plane();
  const bool narrow = total <= kMaxInt32;
  const int row_pieces = w.k[2] / P, pieces = w.k[0] * w.k[1] * row_pieces;
  for (std::int64_t o = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; o < total;
       o += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const ChannelItem it = channel_item(o, 1, narrow, w, FastDiv(), by_ow, by_oh, by_od);
    const int d0 = it.od * w.s[0] - w.p[0], h0 = it.oh * w.s[1] - w.p[1], w0 = it.ow * w.s[2] - w.p[2];
    T best[CC];
    int cell[CC];
    start_channels(w, d0, h0, w0, best, cell);
    const T* x = a.x + it.n * w.in_plane() * CC;
    for (int p0 = 0; p0 < pieces; p0 += kB) {
      Pack v[kB];
      bool in[kB];
      int c_of[kB];  // the piece's first cell
#pragma unroll
      for (int u = 0; u < kB; ++u) {
        const int p = p0 + u;
        const std::uint32_t r = by_row_pieces.div(static_cast<std::uint32_t>(p));  // the window row
        const int jp = p - static_cast<int>(r) * row_pieces;
        const int jd = static_cast<int>(by_kh.div(r)), jh = static_cast<int>(r) - jd * w.k[1];
        const int d = d0 + jd, h = h0 + jh, xw = w0 + jp * P;
        c_of[u] = static_cast<int>(r) * w.k[2] + jp * P;
        in[u] = p < pieces && static_cast<unsigned>(d) < static_cast<unsigned>(w.D) &&
                static_cast<unsigned>(h) < static_cast<unsigned>(w.H) && static_cast<unsigned>(xw) < static_cast<unsigned>(w.W);
        if (in[u]) v[u] = *reinterpret_cast<const Pack*>(x + ((static_cast<std::int64_t>(d) * w.H + h) * w.W + xw) * CC);
      }
#pragma unroll
      for (int u = 0; u < kB; ++u) {
        if (!in[u]) continue;
#pragma unroll
        for (int e = 0; e < kV; ++e) {
          if (replaces(best[e % CC], v[u].elem[e])) {
            best[e % CC] = v[u].elem[e];
            cell[e % CC] = c_of[u] + e / CC;
          }
        }
      }
    }
    store_channels<CC>(a, o * CC, best, cell, d0, h0, w0);
  }
}

template <class T>
std::string fwd_v7_refuses(const Window& w) {
  if (w.layout != Layout::ndhwc) return "fwd_v7_channels_last reads the layout NDHWC only";
  return {};
}

// The pack width a case gets: 16 bytes when C allows and the pointers are aligned, else 8 bytes,
// else one element. (C = 2 floats: 8-byte packs, one thread per position.)
template <class T>
int fwd_v7_pack(const ForwardArgs<T>& a) {
  constexpr int V = 16 / sizeof(T);
  const T* y = a.y;
  if (a.w.C % V == 0 && tut::ew::all_aligned<V>(a.x, y)) return V;
  if (a.w.C % (V / 2) == 0 && tut::ew::all_aligned<V / 2>(a.x, y)) return V / 2;
  return 1;
}

// The channels per cell with which fwd_v7_row_pieces_kernel reads a case, or 0 where it does not:
// windows that do not overlap; C of 2 or 4 elements taking less than 16 bytes; whole 16-byte pieces
// along W for the window, the stride, the padding and a row; x 16-byte aligned, y aligned for one
// position's C channels; a plane (with a window's reach) in 32-bit offsets, which the FastDivs need.
template <class T>
int fwd_v7_row_piece_channels(const ForwardArgs<T>& a) {
  constexpr int kV = 16 / sizeof(T);
  const Window& w = a.w;
  const int C = static_cast<int>(std::min<std::int64_t>(w.C, 16));
  if (w.C != C || (C != 2 && C != 4) || C >= kV || !windows_disjoint(w) || w.dil[2] != 1) return 0;
  for (const std::int64_t run : {std::int64_t{w.k[2]}, std::int64_t{w.s[2]}, std::int64_t{w.p[2]}, std::int64_t{w.W}})
    if (run * C % kV != 0) return 0;
  const bool aligned = reinterpret_cast<std::uintptr_t>(a.x) % 16 == 0 &&
                       reinterpret_cast<std::uintptr_t>(a.y) % (C * sizeof(T)) == 0;
  const bool fits = w.N * w.out_plane() <= kMaxInt32 && plane_fits_32_bits(w);
  return aligned && fits ? C : 0;
}

template <class T>
void fwd_v7_channels_last(cudaStream_t s, const ForwardArgs<T>& a) {
  check_forward(a, "fwd_v7_channels_last");
  if (const std::string why = fwd_v7_refuses<T>(a.w); !why.empty()) throw tut::Unsupported(why);
  constexpr int kBlock = 256, kV = 16 / sizeof(T);
  const int V = fwd_v7_pack(a);
  const std::int64_t groups = a.w.C / V, total = a.w.N * a.w.out_plane() * groups;
  const bool narrow = total <= kMaxInt32;
  const ChannelDivs cd = channel_divs(a.w, groups, narrow);
  const FastDiv &g = cd.groups, &ow = cd.ow, &oh = cd.oh, &od = cd.od;
  const unsigned grid = grid_for(total, kBlock, "fwd_v7_channels_last");
  if (const int cc = fwd_v7_row_piece_channels(a); cc != 0) {
    const std::int64_t positions = a.w.N * a.w.out_plane();
    const FastDiv pw(a.w.oW), ph(a.w.oH), pd(a.w.oD), rp(a.w.k[2] / (kV / cc)), kh(a.w.k[1]);
    const unsigned pgrid = grid_for(positions, kBlock, "fwd_v7_channels_last");
    if (cc == 2) fwd_v7_row_pieces_kernel<2, T><<<pgrid, kBlock, 0, s>>>(a, pw, ph, pd, rp, kh);
    else fwd_v7_row_pieces_kernel<4, T><<<pgrid, kBlock, 0, s>>>(a, pw, ph, pd, rp, kh);
    TUT_CHECK_LAUNCH("fwd_v7_row_pieces_kernel");
    return;
  }
  if (windows_disjoint(a.w)) {
    const FastDiv kw(a.w.k[2]), kh(a.w.k[1]);
    if (V == kV) fwd_v7_disjoint_kernel<kV, T><<<grid, kBlock, 0, s>>>(a, g, ow, oh, od, kw, kh);
    else if (V == kV / 2) fwd_v7_disjoint_kernel<kV / 2, T><<<grid, kBlock, 0, s>>>(a, g, ow, oh, od, kw, kh);
    else fwd_v7_disjoint_kernel<1, T><<<grid, kBlock, 0, s>>>(a, g, ow, oh, od, kw, kh);
    TUT_CHECK_LAUNCH("fwd_v7_disjoint_kernel");
    return;
  }
  if (V == kV) fwd_v7_channels_last_kernel<kV, T><<<grid, kBlock, 0, s>>>(a, g, ow, oh, od);
  else if (V == kV / 2) fwd_v7_channels_last_kernel<kV / 2, T><<<grid, kBlock, 0, s>>>(a, g, ow, oh, od);
  else fwd_v7_channels_last_kernel<1, T><<<grid, kBlock, 0, s>>>(a, g, ow, oh, od);
  TUT_CHECK_LAUNCH("fwd_v7_channels_last_kernel");
}

template <class T>
std::vector<const void*> fwd_v7_kernels() {
  return {TUT_KERNEL(fwd_v7_channels_last_kernel<16 / sizeof(T), T>),
          TUT_KERNEL(fwd_v7_channels_last_kernel<8 / sizeof(T), T>), TUT_KERNEL(fwd_v7_channels_last_kernel<1, T>),
          TUT_KERNEL(fwd_v7_disjoint_kernel<16 / sizeof(T), T>), TUT_KERNEL(fwd_v7_disjoint_kernel<8 / sizeof(T), T>),
          TUT_KERNEL(fwd_v7_disjoint_kernel<1, T>), TUT_KERNEL(fwd_v7_row_pieces_kernel<2, T>),
          TUT_KERNEL(fwd_v7_row_pieces_kernel<4, T>)};
}

}  // namespace ch06
