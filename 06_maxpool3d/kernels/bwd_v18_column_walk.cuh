// bwd v18_column_walk: v15's separable stages in the other order: each output decoded once, H and W
// undone per output plane in shared memory, D undone by each thread walking its column of dx with a
// window of k sums in registers. For undilated stride-1 windows.
//
// What changed since v15. v15 undoes D first, so it keeps a ring of k planes of g2 in shared memory
// (62 KiB on kernel 8) and reads each of a plane's sums through two stages of k candidates. Here the
// block walks output planes od ascending, and for each:
//   1. a thread per output of the tile's (TH + k - 1) x (TW + k - 1) decodes its saved cell into its
//      offsets (jd, jh, jw) in the window and stores (dy, a word) in shared memory, nothing added;
//   2. a thread per (h, ow): the sum over oh ascending of the outputs whose jh names row h; all of
//      them must name the same (jd, jw);
//   3. a thread per dx cell (h, w): the sum over ow ascending of stage 2's sums whose jw names w; all
//      of them name one jd, so one plane d* = od - pD + jd, and the sum is added to acc[jd] of the
//      thread's window acc[0 .. k-1] (planes od - pD .. od - pD + k - 1).
// After output plane od no later output reaches plane od - pD: acc[0] is that plane's dx, stored
// once; the window moves by one. Each cell's terms are added in a fixed order (od, then oh, then ow
// ascending), so dx is the same from run to run.
//
// The words keep each candidate's test short: a stage's candidate j matches when its offset along
// that axis is k - 1 - j, a constant once the loop is unrolled, so the word holds that offset in its
// top 4 bits (15 for no output) and a shift and a compare test it. The offsets that must agree are
// kept twice, as they are and inverted; OR-ing the matched words, two terms disagree exactly where
// both copies of a bit are set.
//
// Indices no forward writes. Where stage 2's terms disagree, its sum has no one place: the planes
// that output plane reaches are flagged and their cells of the tile are computed by the exact
// per-cell gather (v15's fallback). Where stage 3's terms name different planes, the thread adds
// each term to its own plane instead, exact without the fallback. Both depend only on the indices.
//
// Prediction (before any measurement; kernel 8 stride 1 on 1x16x64x64x64, TH 16 x TW 32, LD 32).
// Shared memory 12.5 KiB instead of 62. Thread instructions per dx cell and plane: stage 1 about 35
// per output times 1.75 outputs per cell, 61; stage 2 about 5 per candidate (LDS.64, shift,
// compare, FADD, OR) times 8 plus 15, times 1.25, 59; stage 3 about 42; the window 8 predicated
// adds and the shift, about 28: about 190 with the loop, against v15's 320 (Nsight Compute: 10.0
// warp instructions per cell). About 6.5 warp instructions per cell, 27 M for the case, 35 % fewer;
// if the kernel stays bound by issue, about 35 % less time: 0.050 ms against v15's 0.077.
//
// Measured (H100, one process, results/forms/bwd_k8_r7.*): the prediction was wrong on kernel 8.
// 1x16x64x64x64 kernel 8 stride 1: int64 0.0895 ms against v15's 0.0773 and the atomic scatter's
// 0.0525; compact 0.0828 against 0.0775 and 0.0497: v18 is slower than v15 in both formats. Nsight
// Compute, int64: 51.8 M warp instructions (12.4 per cell; the estimate was 27 M) against v15's
// 41.9 M, 89.0 us against 76.6, warps active 44.5 % against 46.2 %, DRAM read 39.2 MB against 39.7;
// compact 49.0 M against 46.7 M. Over the 256 blocks of 16 warps and about 32 output planes each,
// 51.8 M is about 395 instructions per thread and plane, twice the estimate (v15: about 320). The
// SASS of the path a plane takes without a conflict or a fallback, weighted by the warps that run
// each part, comes to about 390, so the count is understood: stage 1 about 155 (some 63 per output,
// the decode with its 64-bit bounds and addresses, plus 40 of loop and prefetch set-up, not 35 per
// output), stage 2 about 85, stage 3 about 75 for its 8 candidates (each a load, an AND, a compare,
// a select and a predicated add, with one OR per two or three) and 30 for adding into the window,
// and 45 to store and move the window. The kernel sits at 64 registers (two blocks of 512 threads
// per SM) with 40 bytes of stack: a few values, and dx's base address, are reloaded or recomputed
// in every plane. What would pay on kernel 8: a cheaper stage 1 (v15's stage A decodes the same
// outputs and adds them into its ring in about 50 per output in its SASS) and fewer values live
// across the plane loop.
// Kernel 3 stride 1 on 4x32x32x64x64 (int64): 0.2133 ms against v15's 0.2295 and the scatter's
// 0.2456, 1.08x v15.
//
// Limits, refused before launch: NCDHW, cubic kernel 2 to 8, stride 1, dilation 1, a plane that
// fits 32-bit offsets (the int64 index is decoded in 32 bits).
#pragma once

#include "kernels/bwd.cuh"
#include "kernels/bwd_v15_separable_stages.cuh"  // sep_gather_cell (the fallback), SepArgs

#include <type_traits>

namespace ch06 {

inline constexpr int kWalkMaxLD = 64;  // planes per block along D: the flags of a chunk

template <int K, int TH, int TW>
struct WalkShape {
  static_assert(K >= 2 && K <= 8, "offsets are kept in 3 bits");
  static constexpr int kBlock = TH * TW;
  static constexpr int kR = TH + K - 1, kC = TW + K - 1;      // the tile's outputs per plane
  static constexpr int kN1 = (kR * kC + kBlock - 1) / kBlock;  // stage 1: outputs per thread
  static constexpr int kN2 = (TH * kC + kBlock - 1) / kBlock;  // stage 2: (h, ow) sums per thread
};

// A word: the offset a stage matches on in bits 28-31 (kWalkEmpty's 15 for no output), the
// offsets that must agree in bits 0-5 and inverted in bits 8-13. Stage 1's: jh; (jd, jw).
inline constexpr std::uint32_t kWalkEmpty = 0xF0000000u;
__device__ __forceinline__ std::uint32_t walk_word1(int jd, int jh, int jw) {
  const std::uint32_t a = (static_cast<std::uint32_t>(jd) << 3) | static_cast<std::uint32_t>(jw);
  return (static_cast<std::uint32_t>(jh) << 28) | a | ((~a & 63u) << 8);
}

// Whether a word's offset is b (a constant once unrolled): one shift and one compare.
__device__ __forceinline__ bool walk_match(std::uint32_t u, int b) {
  return (u >> 28) == static_cast<std::uint32_t>(b);
}

// acc[r] += v for a run-time r in [0, K), the window staying in registers.
template <int K>
__device__ __forceinline__ void walk_add(float (&acc)[K], std::uint32_t r, float v) {
#pragma unroll
  for (int j = 0; j < K; ++j)
    if (r == static_cast<std::uint32_t>(j)) acc[j] += v;
}

// Blocks per SM asked of the compiler: 5 on kernel 3 (measured, bwd_v18_dispatch below), else 2.
inline constexpr int walk_min_blocks(int K) { return K == 3 ? 5 : 2; }

template <int K, int TH, int TW, class I, class T, int MinBlocks = walk_min_blocks(K)>
__global__ void __launch_bounds__(TH* TW, MinBlocks)
    bwd_v18_column_walk_kernel(const BackwardArgs<T> a, const I* __restrict__ idx, const SepArgs sa) {
  static_assert(std::is_same_v<T, float>, "the stages keep (float value, 32-bit word) pairs");
  using Sh = WalkShape<K, TH, TW>;
  constexpr int kBlock = Sh::kBlock, kR = Sh::kR, kC = Sh::kC, kN1 = Sh::kN1, kN2 = Sh::kN2;
  __shared__ float2 outs[kR * kC];  // stage 1: (dy, word1) per output of the plane
  __shared__ float2 rows[TH * kC];  // stage 2: (sum over oh, word2) per (h, ow)
  __shared__ int flags[kWalkMaxLD];  // planes of the chunk that fall back
  const Window& w = a.w;

  const int tid = threadIdx.x;
  int b = blockIdx.x;
  const int tw = b % sa.tiles_w;
  b /= sa.tiles_w;
  const int th = b % sa.tiles_h;
  const int chunk = b / sa.tiles_h;
  const int h0 = th * TH, w0 = tw * TW, d0 = chunk * sa.LD;
  const int d1 = min(w.D, d0 + sa.LD);
  const int THe = min(TH, w.H - h0);
  const int pD = w.p[0];
  const int ohn = h0 + w.p[1] - K + 1, own = w0 + w.p[2] - K + 1;  // the tile's first output row, column
  const int od_lo = max(0, d0 + pD - K + 1), od_hi = d1 - 1 + pD;  // the walk; od_hi's plane is d1 - 1
  const int od_last = min(w.oD - 1, od_hi);                         // the last output plane
  const std::uint32_t HW = static_cast<std::uint32_t>(w.H) * w.W;
  const std::int64_t oHW = static_cast<std::int64_t>(w.oH) * w.oW, plane_in = w.in_plane();

  // The outputs this thread decodes in stage 1: their offset in an output plane (-1 where there
  // is none) and their place in the tile (row << 8 | column: the window's first row and column
  // are derived from it, which keeps the loop within 64 registers).
  int goff[kN1], place[kN1];
#pragma unroll
  for (int q = 0; q < kN1; ++q) {
    const int c = tid + q * kBlock;
    const int r = c / kC, cw = c - r * kC;
    const int oh = ohn + r, ow = own + cw;
    const bool act = c < kR * kC && oh >= 0 && oh < w.oH && ow >= 0 && ow < w.oW;
    goff[q] = act ? oh * w.oW + ow : -1;
    place[q] = (r << 8) | cw;
  }
  static_assert(kR < 256 && kC < 256, "a place packs the row and column in 8 bits each");
  const int oh0n = ohn - w.p[1], ow0n = own - w.p[2];  // window start of the tile's first output row, column
  const int chl = tid / TW, cwl = tid - chl * TW;  // stage 3's cell
  const int hc = h0 + chl, xc = w0 + cwl;
  const bool c_act = chl < THe && xc < w.W;
  const std::uint32_t cell_off = static_cast<std::uint32_t>(hc) * w.W + xc;

  for (std::int64_t nc = blockIdx.y; nc < w.N * w.C; nc += gridDim.y) {
    const T* dys = a.dy + nc * w.out_plane();
    const I* ids = idx + nc * w.out_plane();
    T* dxs = a.dx + nc * plane_in;
    if (tid < kWalkMaxLD) flags[tid] = 0;
    __syncthreads();

    T pre_v[kN1];
    I pre_i[kN1];
#pragma unroll
    for (int q = 0; q < kN1; ++q) {
      pre_v[q] = 0;
      pre_i[q] = I(0);
      if (goff[q] >= 0 && od_lo <= od_last) {
        pre_v[q] = dys[od_lo * oHW + goff[q]];
        pre_i[q] = ids[od_lo * oHW + goff[q]];
      }
    }
    float acc[K];
#pragma unroll
    for (int j = 0; j < K; ++j) acc[j] = 0.f;

    for (int od = od_lo; od <= od_hi; ++od) {
      const int pl = od - pD;  // the plane acc[0] holds; complete after this output plane
      if (od <= od_last) {     // the same for the whole block: the barriers below are reached by all
        // ---- 1: decode this plane's outputs; read the next plane's.
#pragma unroll
        for (int q = 0; q < kN1; ++q) {
          const int c = tid + q * kBlock;
          if (c >= kR * kC) continue;
          std::uint32_t word = kWalkEmpty;
          const T v = pre_v[q];
          if (goff[q] >= 0) {
            const I ix = pre_i[q];
            const int oh0 = oh0n + (place[q] >> 8), ow0 = ow0n + (place[q] & 255);
            if (od < od_last) {
              pre_v[q] = dys[(od + 1) * oHW + goff[q]];
              pre_i[q] = ids[(od + 1) * oHW + goff[q]];
            }
            int jd, jh, jw;
            bool ok;
            if constexpr (std::is_same_v<I, std::int64_t>) {
              // A flat index; one outside the output's window is dropped, as the gathers drop it.
              ok = ix >= 0 && ix < plane_in;
              const std::uint32_t u = static_cast<std::uint32_t>(ix);
              const std::uint32_t qd = sa.by_hw.div(u), rem = u - qd * HW, qh = sa.by_w.div(rem);
              jd = static_cast<int>(qd) - pl;
              jh = static_cast<int>(qh) - oh0;
              jw = static_cast<int>(rem - qh * static_cast<std::uint32_t>(w.W)) - ow0;
              ok = ok && static_cast<unsigned>(jd) < unsigned{K} && static_cast<unsigned>(jh) < unsigned{K} &&
                   static_cast<unsigned>(jw) < unsigned{K};
            } else {
              // A cell of the window; one in the padding is dropped.
              const int cell = static_cast<int>(ix);
              jw = cell % K;
              jh = cell / K % K;
              jd = cell / (K * K);
              ok = static_cast<unsigned>(cell) < unsigned{K * K * K} &&
                   static_cast<unsigned>(pl + jd) < static_cast<unsigned>(w.D) &&
                   static_cast<unsigned>(oh0 + jh) < static_cast<unsigned>(w.H) &&
                   static_cast<unsigned>(ow0 + jw) < static_cast<unsigned>(w.W);
            }
            if (ok) word = walk_word1(jd, jh, jw);
          }
          outs[c] = make_float2(v, __uint_as_float(word));
        }
        __syncthreads();

        // ---- 2: rows[hl][c] = the outputs of rows hl .. hl + K - 1 whose jh names h0 + hl, oh ascending.
#pragma unroll
        for (int q = 0; q < kN2; ++q) {
          const int e = tid + q * kBlock;
          if (e < TH * kC) {
            const int hl = e / kC, cw = e - hl * kC;
            if (hl < THe) {
              const float2* col = outs + hl * kC + cw;
              float s = 0.f;
              std::uint32_t orw = 0;
#pragma unroll
              for (int j = 0; j < K; ++j) {
                const float2 t = col[j * kC];
                const std::uint32_t u = __float_as_uint(t.y);
                if (walk_match(u, K - 1 - j)) {
                  s += t.x;
                  orw |= u;
                }
              }
              std::uint32_t out = kWalkEmpty;
              if (orw != 0) {  // a match: its agreeing bits and their inverse are not all 0
                const std::uint32_t ag = orw & 63u, inv = (orw >> 8) & 63u;
                if (ag & inv) {  // the terms name different (jd, jw): every plane this output plane reaches falls back
#pragma unroll
                  for (int r = 0; r < K; ++r)
                    if (pl + r >= d0 && pl + r < d1) flags[pl + r - d0] = 1;
                } else {
                  const std::uint32_t jd = ag >> 3;
                  out = ((ag & 7u) << 28) | jd | ((~jd & 7u) << 8);  // stage 3's word: jw; jd
                }
              }
              rows[e] = make_float2(s, __uint_as_float(out));
            }
          }
        }
        __syncthreads();

        // ---- 3: the cell's sum over ow ascending, into the plane its jd names.
        if (c_act) {
          const float2* row = rows + chl * kC + cwl;
          float s = 0.f;
          std::uint32_t orw = 0;
#pragma unroll
          for (int j = 0; j < K; ++j) {
            const float2 t = row[j];
            const std::uint32_t u = __float_as_uint(t.y);
            if (walk_match(u, K - 1 - j)) {
              s += t.x;
              orw |= u;
            }
          }
          if (orw != 0) {
            const std::uint32_t jd = orw & 7u, inv = (orw >> 8) & 7u;
            if ((jd & inv) == 0) {
              walk_add<K>(acc, jd, s);
            } else {  // terms for different planes: each to its own, in the same order
#pragma unroll
              for (int j = 0; j < K; ++j) {
                const float2 t = row[j];
                const std::uint32_t u = __float_as_uint(t.y);
                if (walk_match(u, K - 1 - j)) walk_add<K>(acc, u & 7u, t.x);
              }
            }
          }
        }
      }

      // ---- plane pl is complete: store it (the exact gather where it falls back); move the window.
      if (pl >= d0 && c_act) {
        T v = acc[0];
        if (flags[pl - d0]) v = sep_gather_cell<K>(w, dys, ids, pl, hc, xc);
        dxs[static_cast<std::uint32_t>(pl) * HW + cell_off] = v;  // the plane fits 32-bit offsets
      }
#pragma unroll
      for (int j = 0; j + 1 < K; ++j) acc[j] = acc[j + 1];
      acc[K - 1] = 0.f;
    }
    __syncthreads();  // the flags and the stages' arrays are set again for the next (n, c)
  }
}

// Why v18 refuses a case ("" when it takes it).
template <class T>
std::string bwd_v18_refuses(const Window& w) {
  if (w.layout != Layout::ncdhw) return "bwd_v18_column_walk reads the layout NCDHW only";
  if (w.dilated()) return "bwd_v18_column_walk takes dilation 1 only";
  if (w.s[0] != 1 || w.s[1] != 1 || w.s[2] != 1) return "bwd_v18_column_walk takes stride 1 only";
  if (w.k[0] != w.k[1] || w.k[1] != w.k[2] || w.k[0] < 2 || w.k[0] > 8)
    return "bwd_v18_column_walk takes cubic kernels of 2 to 8 cells per axis";
  if (!plane_fits_32_bits(w)) return "bwd_v18_column_walk indexes a plane in 32 bits; this one is larger";
  return {};
}

template <int K, int TH, int TW, int LD, class I, class T>
void bwd_v18_launch(cudaStream_t s, const BackwardArgs<T>& a, const I* idx) {
  static_assert(LD >= 1 && LD <= kWalkMaxLD, "a chunk's flags are kWalkMaxLD ints");
  SepArgs sa;
  const dim3 grid = stage_grid(a.w, TH, TW, LD, sa, "bwd_v18_column_walk");
  bwd_v18_column_walk_kernel<K, TH, TW, I, T><<<grid, TH * TW, 0, s>>>(a, idx, sa);
  TUT_CHECK_LAUNCH("bwd_v18_column_walk_kernel");
}

// The tiling: kernels 6 to 8 take v15's kernel-8 tile (TH 16 x TW 32, LD 32) for both formats,
// kernels 2 to 5 TH 8 x TW 32, LD 32. Kernel 3's was swept on the H200 (results/forms/v18_tiles.*:
// nine tilings raced against PyTorch in one process); the best, 16 x 16, ran 0.985x where this one
// ran 0.977x, the worst 0.900x. Not swept for the other kernels.
//
// The blocks per SM. Under `__launch_bounds__(256, 2)` the compiler gave kernel 3's kernels 61 and
// 64 registers: 4 blocks of 256 threads per SM, 47 % of the warps resident, and the warps waited at
// a barrier 35 % of the time (results/forms/v18_tiles.ncu.csv). Asking for 5 blocks gives 47 and 48
// registers (the int64 kernel keeps 8 bytes on the stack: 4 local loads and stores,
// tests/test_sass.cpp), so more warps are there to issue while others wait. Measured on the H200
// (results/forms/v18_min5.*, one process): 1.039x PyTorch where 2 blocks ran 0.986x (compact 1.068x
// and 1.022x); Nsight Compute 199.1 us against 210.5. Kernel 3 only (walk_min_blocks, above the
// kernel): the others were not measured.
template <int K, class T>
void bwd_v18_dispatch(cudaStream_t s, const BackwardArgs<T>& a) {
  constexpr int TH = K <= 5 ? 8 : 16, TW = 32, LD = 32;
  if (a.w.indices == IndexFormat::int64) bwd_v18_launch<K, TH, TW, LD>(s, a, a.index);
  else if constexpr (K * K * K <= kMaxByteCells) bwd_v18_launch<K, TH, TW, LD>(s, a, a.offset8);
  else bwd_v18_launch<K, TH, TW, LD>(s, a, a.offset16);
}

template <class T>
void bwd_v18_column_walk(cudaStream_t s, const BackwardArgs<T>& a) {
  check_backward(a, "bwd_v18_column_walk");
  if (const std::string why = bwd_v18_refuses<T>(a.w); !why.empty()) throw tut::Unsupported(why);
  with_stage_kernel(a.w.k[0], [&](auto k) { bwd_v18_dispatch<decltype(k)::value>(s, a); });
}

template <class T>
std::vector<const void*> bwd_v18_kernels() {
  return {TUT_KERNEL(bwd_v18_column_walk_kernel<3, 8, 32, std::int64_t, T>),
          TUT_KERNEL(bwd_v18_column_walk_kernel<3, 8, 32, std::uint8_t, T>),
          TUT_KERNEL(bwd_v18_column_walk_kernel<8, 16, 32, std::int64_t, T>),
          TUT_KERNEL(bwd_v18_column_walk_kernel<8, 16, 32, std::int16_t, T>)};
}

}  // namespace ch06
