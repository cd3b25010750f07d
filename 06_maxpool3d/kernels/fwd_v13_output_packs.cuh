// fwd v13_output_packs: a thread takes P outputs side by side along W, and reads the part of each
// window row they share as one 16-byte access.
//
// Why. On the float16 suite case 2 x 64 x 32 x 112^2, kernel 2 stride 2 in NCDHW, the best version
// (v2) reached 0.41 of copy on the H200 (the suite's run of the tree of commit 5b93f7d; 0.414 in
// results/forms/v13_first.f16.json), where in float v4 reached 0.96 of it. v1, v2, v4 and v5 give
// a thread one output: in half a window row of kernel 2 is two 2-byte values, so each load
// instruction moves half the bytes it moves in float, and the same instructions carry half the data.
//
// How. Where the windows along W are side by side (stride = kernel along W, no padding along W) and
// a row of them is kW x sizeof(T) <= 8 bytes, P = 16 / (kW x sizeof(T)) neighbouring outputs read
// their P x kW cells of each row with one 16-byte load (tut::ew::Packed): in half, kernel 2 takes 4
// outputs a thread, kernel 4 two; in float, kernel 2 two, kernel 1 four. The window's rows are
// loaded kPackRows at a time, then compared in scan order, so each output keeps PyTorch's rule
// (kernels/pool.cuh) and its cell. A row outside the input (padding along D or H, ceil_mode) reads
// as -inf, which the rule never takes; a pack whose windows pass the end of a row (ceil_mode, or
// the row's last outputs) takes every cell with a test instead. The 16-byte loads need x and every row on 16 bytes (W x
// sizeof(T) a multiple of 16); otherwise the same kernel reads cell by cell.
//
// Prediction (before any run): on that case about 4 times fewer load instructions per byte than
// v2, so near float's fraction of copy, about 0.9; in float on kernel 2 stride 2, level with v4.
//
// Measured (H200, results/forms/v13_first.*, v13_second.*): wrong about what bound the half kernel.
// The first form, comparing in half, issued 32.6 M warp instructions against v2's 48.8 M (about 162
// per output) and ran 0.0606 ms against 0.0655: the compares were the work, not the loads. This
// form compares in float (each half converted once, exactly) and keeps the chosen cell's own bits:
// 26.1 M instructions, 0.0454 ms against v2's 0.0654, 0.598 of copy, 2.77x PyTorch (v2 1.93x); 79
// registers leave 31 % of the warps resident, DRAM 54 % busy. In float it loses to v4 on that case
// (0.0744 ms against 0.0560) and wins on 33^3 in ceil mode (0.766 of copy against v2's 0.678 in
// the suite's run, results/h200_8e72bbe/). Auto takes it there and on the half case.
//
// Limits, refused before launch: NCDHW, dilation 1, stride = kernel and padding 0 along W, kW x
// sizeof(T) at most 8 bytes, a plane that fits 32-bit offsets.
#pragma once

#include "kernels/pool.cuh"
#include "kernels/window_body.cuh"
#include "tut/elementwise.cuh"

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace ch06 {

inline constexpr int kPackBlock = 256;
inline constexpr int kPackRows = 4;  // window rows a thread loads before it compares

// Outputs a thread takes for a window row of KW elements of T: 16 bytes of cells.
template <int KW, class T>
inline constexpr int kOutputPack = 16 / static_cast<int>(KW * sizeof(T));

// A value as float for the compares, and its own bits to store (a float is its own bits).
__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float as_bits(float v) { return v; }
__device__ __forceinline__ unsigned short as_bits(__half v) { return __half_as_ushort(v); }
__device__ __forceinline__ float value_of(float b) { return b; }
__device__ __forceinline__ __half value_of(unsigned short b) { return __ushort_as_half(b); }

template <int KW, class T, bool Wide>
__global__ void __launch_bounds__(kPackBlock) fwd_v13_output_packs_kernel(ForwardArgs<T> a, RowPieces pd) {
  constexpr int P = kOutputPack<KW, T>;
  const Window& w = a.w;
  const int H = w.H, W = w.W, kd = w.k[0], kh = w.k[1];
  const std::int64_t plane = w.in_plane();
  for (std::int64_t t = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; t < pd.count;
       t += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const RowPiece it = row_piece(t, pd, w);  // a pack number: (plane, od, oh, the pack in its row)
    const std::int64_t row = it.row, nc = it.plane;
    const int pk = it.piece, oh = it.oh, od = it.od;
    const int ow0 = pk * P, d0 = od * w.s[0] - w.p[0], h0 = oh * w.s[1] - w.p[1], w0 = ow0 * KW;
    const T* x = a.x + nc * plane;
    const bool whole = Wide && ow0 + P <= w.oW && w0 + P * KW <= W;  // every cell of every window's row in
    // The compares run in float: in half each cell is converted once (exactly), and the chosen
    // cell's own bits are kept beside it, so y is the input's value, NaN payloads and -0 included.
    using Bits = std::conditional_t<std::is_same_v<T, __half>, unsigned short, float>;
    float best[P];
    Bits bits[P];
    int cell[P];
    const int first = first_cell_undilated(kh, KW, d0, h0, 0);  // w0 >= 0: the same for all P
#pragma unroll
    for (int p = 0; p < P; ++p) best[p] = -INFINITY, bits[p] = as_bits(lowest<T>()), cell[p] = first;
    // The window's rows in scan order (q = jd kh + jh), kPackRows at a time: their loads first, then
    // the compares in order. A row outside the input (padding, ceil_mode) reads as -inf, which the
    // rule never takes, the same as skipping it.
    const int rows = kd * kh;
    int jd = 0, jh = 0;
    const auto scan = [&](auto wide) {
      for (int q0 = 0; q0 < rows; q0 += kPackRows) {
        T v[kPackRows][P * KW];
#pragma unroll
        for (int i = 0; i < kPackRows; ++i) {
          const bool in = q0 + i < rows && static_cast<unsigned>(d0 + jd) < static_cast<unsigned>(w.D) &&
                          static_cast<unsigned>(h0 + jh) < static_cast<unsigned>(H);
          const T* r = x + ((d0 + jd) * H + (h0 + jh)) * W + w0;
          if constexpr (decltype(wide)::value) {
            tut::ew::Packed<T, P * KW> pack;
            if (in) pack = *reinterpret_cast<const tut::ew::Packed<T, P * KW>*>(r);
#pragma unroll
            for (int j = 0; j < P * KW; ++j) v[i][j] = in ? pack.elem[j] : lowest<T>();
          } else {
#pragma unroll
            for (int j = 0; j < P * KW; ++j) v[i][j] = in && w0 + j < W ? r[j] : lowest<T>();
          }
          if (++jh == kh) jh = 0, ++jd;
        }
#pragma unroll
        for (int i = 0; i < kPackRows; ++i)
#pragma unroll
          for (int p = 0; p < P; ++p)
#pragma unroll
            for (int jw = 0; jw < KW; ++jw) {
              const T c = v[i][p * KW + jw];
              const float f = to_float(c);
              if (replaces(best[p], f)) best[p] = f, bits[p] = as_bits(c), cell[p] = (q0 + i) * KW + jw;
            }
      }
    };
    if (whole) scan(std::true_type{});
    else scan(std::false_type{});
    const std::int64_t o = row * w.oW + ow0;
#pragma unroll
    for (int p = 0; p < P; ++p)
      if (ow0 + p < w.oW) store_result<0, 0, KW>(a, o + p, value_of(bits[p]), cell[p], d0, h0, w0 + p * KW);
  }
}

// What v13 and v15 refuse, named as `who`: the packs need NCDHW, dilation 1, windows side by side
// along W, rows of 2, 4 or 8 bytes, and a plane that fits 32-bit offsets.
template <class T>
std::string pack_rows_refuse(const Window& w, const char* who) {
  if (w.layout != Layout::ncdhw) return std::string(who) + " reads the layout NCDHW only";
  if (w.dilated()) return std::string(who) + " takes dilation 1 only";
  if (w.s[2] != w.k[2] || w.p[2] != 0)
    return std::string(who) + " takes windows side by side along W: stride = kernel and padding 0 there";
  if (w.k[2] * static_cast<int>(sizeof(T)) > 8 || 16 % (w.k[2] * static_cast<int>(sizeof(T))) != 0)
    return std::string(who) + " takes window rows of 2, 4 or 8 bytes (kernel 1 or 2 along W in float; 1, 2 or 4 in half)";
  if (!plane_fits_32_bits(w)) return std::string(who) + " indexes a plane in 32 bits; this one is larger";
  return {};
}

template <class T>
std::string fwd_v13_refuses(const Window& w) {
  return pack_rows_refuse<T>(w, "fwd_v13_output_packs");
}

// A window row's kernel along W as a compile-time value, for the widths fwd_v13_refuses takes.
template <class T, class F>
void with_pack_row(const Window& w, F&& f) {
  switch (w.k[2]) {
    case 1: return f(std::integral_constant<int, 1>{});
    case 2: return f(std::integral_constant<int, 2>{});
    default:
      if constexpr (sizeof(T) == 2) return f(std::integral_constant<int, 4>{});
  }
}

// Launches a pack kernel (v13, v15) over the case's packs, once the case passes check_forward and
// pack_rows_refuse: f(KW, wide, packs, grid), with 16-byte loads (wide) where x and every row start
// on 16 bytes, else the same kernel cell by cell.
template <class T, class F>
void launch_packs(const ForwardArgs<T>& a, const char* who, F&& f) {
  check_forward(a, who);
  if (const std::string why = pack_rows_refuse<T>(a.w, who); !why.empty()) throw tut::Unsupported(why);
  const Window& w = a.w;
  const bool wide = reinterpret_cast<std::uintptr_t>(a.x) % 16 == 0 && (w.W * sizeof(T)) % 16 == 0;
  with_pack_row<T>(w, [&](auto kw) {
    constexpr int P = kOutputPack<decltype(kw)::value, T>;
    const RowPieces pd = row_pieces(w, (w.oW + P - 1) / P);
    const unsigned grid = grid_for(pd.count, kPackBlock, who);
    if (wide) f(kw, std::true_type{}, pd, grid);
    else f(kw, std::false_type{}, pd, grid);
  });
}

// Every form of a pack kernel for T, as f(KW, wide) names it: the row widths with_pack_row takes,
// each with 16-byte loads and cell by cell.
template <class T, class F>
std::vector<const void*> pack_kernels(F&& f) {
  std::vector<const void*> k;
  const auto both = [&](auto kw) {
    k.push_back(f(kw, std::true_type{}));
    k.push_back(f(kw, std::false_type{}));
  };
  both(std::integral_constant<int, 1>{});
  both(std::integral_constant<int, 2>{});
  if constexpr (sizeof(T) == 2) both(std::integral_constant<int, 4>{});
  return k;
}

template <class T>
void fwd_v13_output_packs(cudaStream_t s, const ForwardArgs<T>& a) {
  launch_packs<T>(a, "fwd_v13_output_packs", [&](auto kw, auto wide, const RowPieces& pd, unsigned grid) {
    fwd_v13_output_packs_kernel<decltype(kw)::value, T, decltype(wide)::value><<<grid, kPackBlock, 0, s>>>(a, pd);
  });
  TUT_CHECK_LAUNCH("fwd_v13_output_packs_kernel");
}

template <class T>
std::vector<const void*> fwd_v13_kernels() {
  return pack_kernels<T>([](auto kw, auto wide) {
    return TUT_KERNEL((fwd_v13_output_packs_kernel<decltype(kw)::value, T, decltype(wide)::value>));
  });
}

}  // namespace ch06
