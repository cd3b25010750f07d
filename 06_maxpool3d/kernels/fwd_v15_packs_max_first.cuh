// fwd v15_packs_max_first: v13's packs of outputs side by side along W, with v10's order of work:
// the windows' maxima first, a NaN-propagating max per cell (two cells per instruction in half),
// and PyTorch's rule only where it can change the answer.
//
// Why. v13 took the float16 suite case 2 x 64 x 32 x 112^2, kernel 2 stride 2 in NCDHW, from 0.41
// of copy to 0.60 on the H200 by reading a window row of its 4 outputs with one 16-byte load. What
// it left (results/forms/v13_second.*, v13_stalls.*): 26.1 M warp instructions, about 130 per
// output, 79 registers, 31 % of the warps resident, DRAM 54 % busy. The loads are 4 a thread; the
// rest is the rule, cell by cell: a conversion to float, two compares, selects of the value, its
// bits and its cell. v10 showed on the H200 that the maximum alone is one instruction per cell
// (FMNMX.NAN), and that the cell and the exact bits can be found afterwards, only where needed.
//
// How. A thread takes v13's P outputs and loads each window row of them with one 16-byte load
// (cell by cell where x or the rows are not on 16 bytes), kPackRows rows before any compare. Each
// column of the loaded rows is folded with max.NaN: FMNMX.NAN in float; in half a pair of cells at
// a time, which sm_90 does as VHMNMX.NAN, a three-input form that folds two rows' pairs into the
// running maximum. Each output's maximum is the max of its KW columns. That maximum is the rule's
// answer, bits and all, unless it is a zero (which sign) or a NaN (which payload), and an index
// needs its cell: only then is the cell looked for, the first one equal to the maximum or the
// last NaN. Where the window has at most kPackRows rows (kernel 2 has 4), they are all still in
// registers, and v10's locate finds it there; a larger window is walked again from the caches
// (find_cell). A row outside the input (padding along D or H, ceil_mode) reads as -inf and never
// matches a maximum above -inf; a window of -inf keeps its first inside cell, as PyTorch's rule
// does.
//
// The first form walked every window from the caches (results/forms/v15_first.*, H200): fewer
// warp instructions than v13 on the half case (20.4 M against 26.1 M) and slower, 50.1 us against
// 44.1 under Nsight Compute, its warps waiting on a load 59.7 % of their cycles (v13 21.8 %). The
// walk is a chain of dependent loads, a warp waits for any lane of it that walks, and maxima of 0
// are common (inputs of whole numbers in [-8, 8]; after a ReLU, more common still). How many
// warps walked was not counted.
//
// The third form stores y of a whole pack with one P-element store (8 bytes in half and in float)
// where no index is asked for, oW is a multiple of P and y lies on P elements; the second stored
// P separate elements (in half, 2-byte stores 8 bytes apart across a warp).
//
// Prediction (before any run): on that half case about 15 instructions per output instead of
// about 130, and DRAM the bound: about 0.9 of copy. In float on 33^3 in ceil mode (rows of 33
// floats, read cell by cell), fewer instructions than v13 and above its 0.770 of copy. The SASS
// (before any run): the half kernel 2 with 16-byte loads takes 64 registers, v13's 79; a row
// costs about 20 instructions of address and bounds arithmetic besides its load and fold.
//
// Measured (H200, one process each, results/forms/v15_*): the second form issued 18.2 M warp
// instructions on the half case against v13's 26.1 M, with 42 % of the warps resident against
// 31 %, and ran level with it (0.603 of copy against 0.587): DRAM 53.7 % busy in both. The third
// form, y a pack at a time: 37.4 us against v13's 43.7 under Nsight Compute, DRAM 62.8 % busy
// against 53.9, 0.673 of copy against 0.593, 3.098x PyTorch against 2.766x in one race. In float
// it trails v4 and v13 on every case timed.
//
// Limits, refused before launch: v13's (NCDHW, dilation 1, windows side by side along W, rows of
// 2, 4 or 8 bytes, a plane that fits 32-bit offsets).
#pragma once

#include "kernels/fwd_v10_max_first.cuh"  // max_nan, bits_unsure, locate, is_nan, equal
#include "kernels/fwd_v13_output_packs.cuh"  // kOutputPack, kPackRows, pack_rows_refuse, launch_packs, pack_kernels

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace ch06 {

// What one max.NaN instruction folds: a float, or a pair of halves.
template <class T>
struct MaxLane {
  using type = T;
  static constexpr int cells = 1;
};
template <>
struct MaxLane<__half> {
  using type = __half2;
  static constexpr int cells = 2;
};
__device__ __forceinline__ __half2 max_nan(__half2 a, __half2 b) { return __hmax2_nan(a, b); }
__device__ __forceinline__ float lane_of(const float* c) { return c[0]; }
// A lane from its bits as loaded: a float, or a pair of halves loaded as 32 bits (a Packed of
// __half2 is copied member by member, not in one 16-byte load).
template <class T>
using LaneBits = std::conditional_t<MaxLane<T>::cells == 2, unsigned, float>;
__device__ __forceinline__ float lane_from(float b) { return b; }
__device__ __forceinline__ __half2 lane_from(unsigned b) { return *reinterpret_cast<const __half2*>(&b); }
__device__ __forceinline__ __half2 lane_of(const __half* c) { return __halves2half2(c[0], c[1]); }
__device__ __forceinline__ float cell_of(float v, int) { return v; }
__device__ __forceinline__ __half cell_of(__half2 v, int c) { return c ? __high2half(v) : __low2half(v); }

// Where PyTorch's rule ends on one window, given its maximum m: the first inside cell equal to m,
// or the last NaN if m is one; for a window of -inf, its first inside cell. Sets the cell and its
// own bits. A walk over the window's cells, one at a time from the caches (the thread has just
// loaded them): it runs only where an index is wanted or the maximum is a zero or a NaN, and
// holds nothing of the fold's. (Marking its loops `#pragma unroll 1` made nvcc 13.0 spill 8 bytes
// in the float kernel that reads cell by cell.)
template <int KW, class T>
__device__ __forceinline__ void find_cell(const T* x, const Window& w, int d0, int h0, int w0, int first, T m,
                                          T& value, int& cell) {
  value = m;
  cell = first;
  if (!is_nan(m) && !(lowest<T>() < m)) return;  // -inf: no cell replaces the first
  const bool nan = is_nan(m);
  const int kd = w.k[0], kh = w.k[1];
  for (int jd = 0; jd < kd; ++jd) {
    if (static_cast<unsigned>(d0 + jd) >= static_cast<unsigned>(w.D)) continue;
    for (int jh = 0; jh < kh; ++jh) {
      if (static_cast<unsigned>(h0 + jh) >= static_cast<unsigned>(w.H)) continue;
      const T* r = x + ((d0 + jd) * w.H + (h0 + jh)) * w.W + w0;
#pragma unroll
      for (int jw = 0; jw < KW; ++jw) {
        if (w0 + jw >= w.W) break;
        const T c = r[jw];
        if (nan ? is_nan(c) : equal(c, m)) {
          value = c;
          cell = (jd * kh + jh) * KW + jw;
          if (!nan) return;  // the first equal one; of NaNs, the last
        }
      }
    }
  }
}

template <int KW, class T, bool Wide>
__global__ void __launch_bounds__(kPackBlock) fwd_v15_packs_max_first_kernel(ForwardArgs<T> a, RowPieces pd, bool packed_y) {
  constexpr int P = kOutputPack<KW, T>, N = P * KW;  // outputs a thread; cells of a row of them
  using Lane = typename MaxLane<T>::type;
  constexpr int C = MaxLane<T>::cells, L = N / C;  // cells a lane; lanes a row
  const Window& w = a.w;
  const int H = w.H, W = w.W, kh = w.k[1], rows = w.k[0] * kh;
  const std::int64_t plane = w.in_plane();
  const bool want_cell = w.indices != IndexFormat::none;
  Lane low;  // -inf in every cell of a lane
  {
    T l[C];
#pragma unroll
    for (int c = 0; c < C; ++c) l[c] = lowest<T>();
    low = lane_of(l);
  }
  for (std::int64_t t = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; t < pd.count;
       t += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const RowPiece it = row_piece(t, pd, w);  // a pack number: (plane, od, oh, the pack in its row)
    const int ow0 = it.piece * P, d0 = it.od * w.s[0] - w.p[0], h0 = it.oh * w.s[1] - w.p[1], w0 = ow0 * KW;
    const T* x = a.x + it.plane * plane;
    const bool whole = Wide && ow0 + P <= w.oW && w0 + N <= W;  // every cell of the pack's rows inside along W
    // Each column of the rows folded with max.NaN: the windows' rows in scan order (q = jd kh +
    // jh), kPackRows loaded before their folds. A row outside the input (padding, ceil_mode), or
    // past the window's last, reads as -inf.
    Lane acc[L];
#pragma unroll
    for (int l = 0; l < L; ++l) acc[l] = low;
    Lane last[kPackRows][L];  // the last batch's rows: all of the window's where it has at most kPackRows
    const auto fold = [&](auto wide) {
      int jd = 0, jh = 0;
      for (int q0 = 0; q0 < rows; q0 += kPackRows) {
        Lane v[kPackRows][L];
#pragma unroll
        for (int i = 0; i < kPackRows; ++i) {
          const bool in = q0 + i < rows && static_cast<unsigned>(d0 + jd) < static_cast<unsigned>(w.D) &&
                          static_cast<unsigned>(h0 + jh) < static_cast<unsigned>(H);
          const T* r = x + ((d0 + jd) * H + (h0 + jh)) * W + w0;
          if constexpr (decltype(wide)::value) {
            tut::ew::Packed<LaneBits<T>, L> pack;
            if (in) pack = *reinterpret_cast<const tut::ew::Packed<LaneBits<T>, L>*>(r);
#pragma unroll
            for (int l = 0; l < L; ++l) v[i][l] = in ? lane_from(pack.elem[l]) : low;
          } else {
#pragma unroll
            for (int l = 0; l < L; ++l) {
              T cells[C];
#pragma unroll
              for (int c = 0; c < C; ++c) cells[c] = in && w0 + l * C + c < W ? r[l * C + c] : lowest<T>();
              v[i][l] = lane_of(cells);
            }
          }
          if (++jh == kh) jh = 0, ++jd;
        }
#pragma unroll
        for (int i = 0; i < kPackRows; ++i)
#pragma unroll
          for (int l = 0; l < L; ++l) acc[l] = max_nan(acc[l], v[i][l]), last[i][l] = v[i][l];
      }
    };
    if (whole) fold(std::true_type{});
    else fold(std::false_type{});
    const int first = first_cell_undilated(kh, KW, d0, h0, 0);  // w0 >= 0: the same for all P
    const std::int64_t o = it.row * w.oW + ow0;
    tut::ew::Packed<T, P> ys;  // y of the whole pack, stored at once where it can be
#pragma unroll
    for (int p = 0; p < P; ++p) {
      if (ow0 + p >= w.oW) break;
      T best = cell_of(acc[p * KW / C], p * KW % C);  // output p's maximum: the max of its KW columns
#pragma unroll
      for (int jw = 1; jw < KW; ++jw) {
        const int c = p * KW + jw;
        best = max_nan(best, cell_of(acc[c / C], c % C));
      }
      // The maximum is the answer, bits and all, unless it is a zero (which sign) or a NaN (which
      // payload); an index needs the cell.
      int cell = first;
      if (want_cell | bits_unsure(best)) {
        if (rows > kPackRows) {
          find_cell<KW>(x, w, d0, h0, w0 + p * KW, first, best, best, cell);
        } else if (is_nan(best) | (lowest<T>() < best)) {  // one batch, still in registers
          T u[kPackRows * KW];  // output p's cells in scan order
#pragma unroll
          for (int i = 0; i < kPackRows; ++i)
#pragma unroll
            for (int jw = 0; jw < KW; ++jw) {
              const int c = p * KW + jw;
              u[i * KW + jw] = cell_of(last[i][c / C], c % C);
            }
          locate(u, best, cell, best);
        }
      }
      ys.elem[p] = best;
      if (!(packed_y & whole)) store_result<0, 0, KW>(a, o + p, best, cell, d0, h0, w0 + p * KW);
    }
    // No index and every output of the pack in the row: y's P values in one store of P elements.
    if (packed_y & whole) *reinterpret_cast<tut::ew::Packed<T, P>*>(a.y + o) = ys;
  }
}

template <class T>
std::string fwd_v15_refuses(const Window& w) {
  return pack_rows_refuse<T>(w, "fwd_v15_packs_max_first");
}

template <class T>
void fwd_v15_packs_max_first(cudaStream_t s, const ForwardArgs<T>& a) {
  launch_packs<T>(a, "fwd_v15_packs_max_first", [&](auto kw, auto wide, const RowPieces& pd, unsigned grid) {
    // y in one store a pack: no index to write beside it, and every pack's outputs on P elements of y.
    constexpr int P = kOutputPack<decltype(kw)::value, T>;
    const bool packed_y = a.w.indices == IndexFormat::none && a.w.oW % P == 0 &&
                          reinterpret_cast<std::uintptr_t>(a.y) % (P * sizeof(T)) == 0;
    fwd_v15_packs_max_first_kernel<decltype(kw)::value, T, decltype(wide)::value><<<grid, kPackBlock, 0, s>>>(a, pd, packed_y);
  });
  TUT_CHECK_LAUNCH("fwd_v15_packs_max_first_kernel");
}

template <class T>
std::vector<const void*> fwd_v15_kernels() {
  return pack_kernels<T>([](auto kw, auto wide) {
    return TUT_KERNEL((fwd_v15_packs_max_first_kernel<decltype(kw)::value, T, decltype(wide)::value>));
  });
}

}  // namespace ch06
