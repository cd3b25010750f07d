// bwd v15_separable_stages: the max undone one axis at a time, for undilated stride-1 windows.
//
// Idea. The forward's rule (a value replaces the best when it is larger or NaN, scanned d, h, w) is
// a fold with an associative combine, so the winner of output (od, oh, ow), if it lies in plane d*,
// is the winner of the 2-D window (oh, ow) in plane d*, which depends on (d*, oh, ow) only; and
// the winner along W in row (d*, h*) depends on (d*, h*, ow) only. So the backward splits into
// three stages of at most k candidates each, instead of v6's k^3 per cell:
//   stage D: g2[d, oh, ow] = the sum over od ascending of dy[od, oh, ow] whose saved cell lies in
//            plane d; all of them must name the same (h*, w*), kept with the sum as a code;
//   stage H: g1[d, h, ow]  = the sum over oh ascending of g2[d, oh, ow] whose h* is h; all of
//            them must name the same w*;
//   stage W: dx[d, h, w]   = the sum over ow ascending of g1[d, h, ow] whose w* is w.
// A block owns a TH x TW tile of dx of one (n, c) plane and a chunk of LD planes along D, and walks
// the chunk one plane at a time: A, a thread per output column of the tile's (TH + k - 1) x
// (TW + k - 1) outputs adds the output planes that reach plane d into a ring of k planes of g2 in
// shared memory (dy and index read one output plane ahead); B, a thread per g1 cell; C, a thread
// per dx cell, one store. Two barriers per plane, no global atomics, each dx element stored once.
//
// The forward's indices always agree, but an index tensor need not (random in-window cells do
// not): where two terms of a g2 or g1 sum name different cells, the plane's flag is set and stage C
// computes that plane of the tile by the exact per-cell gather from global memory instead (v1's
// loop). Whether a plane falls back depends only on the indices, so the result is deterministic.
//
// Bits. Each cell's terms are added in a fixed order, so dx is the same from run to run; it is not
// v1's bits (sums of partial sums: a different association). With whole-number dy (the tests') the
// sums are exact in any order.
//
// Prediction (made before any measurement). DRAM: dy and the index read once
// (the halo's re-reads from L2), dx written once: 16 bytes per cell on kernel 3 stride 1 with int64
// indices, 9 with uint8, below the atomic scatter's 20-24 (it also fills dx and its atomics read
// and write dx in L2). Instructions: about 3.7 warp instructions per dx cell on kernel 3 stride 1,
// 6.4 on kernel 8 stride 1: near the DRAM floor on kernel 3; on kernel 8 about twice the scatter's
// instructions.
//
// Tiling. TH, TW and LD below were the fastest of a sweep timed on the H100 for kernels 3 and 8 while
// this kernel was written, in a program that is not part of the chapter: those timings are not in
// results/ and are not quoted here. Kernels 2 to 5 take kernel 3's tiling, 6 to 8 kernel 8's; the
// tilings of 2, 4, 5, 6 and 7 were never timed.
//
// Measured here (H100 suite run, results/; fractions of copy in one process): kernel 3 stride 1,
// 0.387 (int64) and 0.221 (compact) against v6's 0.283 and 0.156 and the atomic scatter's 0.361 and
// 0.220; raced as auto, 1.06x and 1.07x PyTorch (v6 had raced 0.77x and 0.76x). Kernel 8 stride
// 1, 0.224 and 0.147 against v6's 0.131 and 0.081 and the scatter's 0.333 and 0.230; raced 0.68x
// and 0.68x (were 0.40x and 0.38x). Nsight Compute on kernel 3 stride 1, int64: 261 MB of DRAM
// (15.6 bytes per cell, the floor), 144.0 M warp instructions (8.6 per cell, the estimate 3.7),
// DRAM 34.4 % busy: bound by issue. Kernel 8: 41.9 M (10.0 per cell).
//
// Limits, refused before launch: NCDHW, cubic kernel 2 to 8, stride 1, dilation 1, a plane that
// fits 32-bit offsets (the int64 index is decoded in 32 bits), H and W below 65535 (a code packs
// h* and w* in 16 bits each).
#pragma once

#include "kernels/bwd.cuh"

#include <type_traits>

namespace ch06 {

inline constexpr std::uint32_t kSepEmpty = 0xFFFFFFFFu;     // no term yet (its h field never matches)
inline constexpr std::uint32_t kSepConflict = 0xFFFFFFFEu;  // terms that name different cells
inline constexpr int kSepMinKernel = 2, kSepMaxKernel = 8;

// The tiling: TH x TW dx cells per block (one thread each), LD planes per block along D.
template <int K, int TH, int TW>
struct SepShape {
  static constexpr int kBlock = TH * TW;
  static constexpr int kR = TH + K - 1, kC = TW + K - 1, kCols = kR * kC;  // the tile's output columns
  static constexpr int kNC = (kCols + kBlock - 1) / kBlock;               // output columns per thread
  static constexpr int kNB = (TH * kC + kBlock - 1) / kBlock;             // g1 cells per thread
  static constexpr std::size_t smem_bytes() {
    return sizeof(float2) * (static_cast<std::size_t>(K) * kCols + static_cast<std::size_t>(TH) * kC) +
           sizeof(int) * (K + 1);
  }
};

struct SepArgs {
  int LD = 32, tiles_w = 1, tiles_h = 1;
  FastDiv by_hw, by_w;  // the int64 index's decode
};

// The exact gather of one cell (the fallback): every covering output, (od, oh, ow) ascending.
template <int K, class I, class T>
__device__ __forceinline__ T sep_gather_cell(const Window& w, const T* dys, const I* ids, int d, int h, int x) {
  const auto lo = [](int c, int p) { return max(0, c + p - K + 1); };
  const int odh = min(w.oD - 1, d + w.p[0]), ohh = min(w.oH - 1, h + w.p[1]), owh = min(w.oW - 1, x + w.p[2]);
  const std::int64_t flat = (static_cast<std::int64_t>(d) * w.H + h) * w.W + x;
  T acc = 0;
  for (int od = lo(d, w.p[0]); od <= odh; ++od) {
    const int jd = d + w.p[0] - od;
    for (int oh = lo(h, w.p[1]); oh <= ohh; ++oh) {
      const int jdh = jd * K + h + w.p[1] - oh;
      const std::int64_t row = (static_cast<std::int64_t>(od) * w.oH + oh) * w.oW;
      for (int ow = lo(x, w.p[2]); ow <= owh; ++ow) {
        bool mine;
        if constexpr (std::is_same_v<I, std::int64_t>) mine = ids[row + ow] == flat;
        else mine = static_cast<int>(ids[row + ow]) == jdh * K + x + w.p[2] - ow;
        if (mine) acc += dys[row + ow];
      }
    }
  }
  return acc;
}

template <int K, int TH, int TW, class I, class T>
__global__ void __launch_bounds__(TH* TW)
    bwd_v15_separable_stages_kernel(const BackwardArgs<T> a, const I* __restrict__ idx, const SepArgs sa) {
  static_assert(std::is_same_v<T, float>, "the stages keep (float value, 32-bit code) pairs");
  using Sh = SepShape<K, TH, TW>;
  constexpr int kBlock = Sh::kBlock, kC = Sh::kC, kCols = Sh::kCols, kNC = Sh::kNC, kNB = Sh::kNB;
  extern __shared__ float2 sep_smem[];
  float2* ring = sep_smem;                             // [K][kCols]: (g2, code h* << 16 | w*)
  float2* g1 = sep_smem + K * kCols;                   // [TH][kC]: (g1, w* or kSepEmpty)
  int* flags = reinterpret_cast<int*>(g1 + TH * kC);  // [K + 1]: plane d's at d mod (K + 1)
  const Window& w = a.w;

  const int tid = threadIdx.x;
  int b = blockIdx.x;
  const int tw = b % sa.tiles_w;
  b /= sa.tiles_w;
  const int th = b % sa.tiles_h;
  const int chunk = b / sa.tiles_h;
  const int h0 = th * TH, w0 = tw * TW, d0 = chunk * sa.LD;
  const int d1 = min(w.D, d0 + sa.LD);
  const int THe = min(TH, w.H - h0), TWe = min(TW, w.W - w0);
  const int ohn = h0 + w.p[1] - K + 1, own = w0 + w.p[2] - K + 1;  // the tile's first output row, column
  const int odlo = max(0, d0 + w.p[0] - K + 1), odhi = min(w.oD - 1, d1 - 1 + w.p[0]);
  const std::uint32_t HW = static_cast<std::uint32_t>(w.H) * w.W;
  const std::int64_t oHW = static_cast<std::int64_t>(w.oH) * w.oW, plane_in = w.in_plane();

  // The output columns this thread stages: whether they exist, their offset in an output plane,
  // and where their windows start.
  bool act[kNC];
  int goff[kNC], oh0[kNC], ow0[kNC];
#pragma unroll
  for (int q = 0; q < kNC; ++q) {
    const int c = tid + q * kBlock;
    const int r = c / kC, cw = c - r * kC;
    const int oh = ohn + r, ow = own + cw;
    act[q] = c < kCols && oh >= 0 && oh < w.oH && ow >= 0 && ow < w.oW;
    goff[q] = act[q] ? oh * w.oW + ow : 0;
    oh0[q] = oh - w.p[1];
    ow0[q] = ow - w.p[2];
  }
  const int chl = tid / TW, cwl = tid - chl * TW;  // stage C's cell
  const bool c_act = chl < THe && cwl < TWe;
  const float2 empty = make_float2(0.f, __uint_as_float(kSepEmpty));

  for (std::int64_t nc = blockIdx.y; nc < w.N * w.C; nc += gridDim.y) {
    const T* dys = a.dy + nc * w.out_plane();
    const I* ids = idx + nc * w.out_plane();
    std::int64_t dxo = nc * plane_in + (static_cast<std::int64_t>(d0) * w.H + h0 + chl) * w.W + w0 + cwl;

#pragma unroll
    for (int q = 0; q < kNC; ++q) {
      const int c = tid + q * kBlock;
      if (c < kCols)
#pragma unroll
        for (int j = 0; j < K; ++j) ring[j * kCols + c] = empty;
    }
    if (tid <= K) flags[tid] = 0;
    __syncthreads();

    int next_od = odlo;
    T pre_v[kNC];
    I pre_i[kNC];
#pragma unroll
    for (int q = 0; q < kNC; ++q) {
      pre_v[q] = 0;
      pre_i[q] = I(0);
      if (act[q] && next_od <= odhi) {
        pre_v[q] = dys[next_od * oHW + goff[q]];
        pre_i[q] = ids[next_od * oHW + goff[q]];
      }
    }

    int slot_d = d0 % K, fslot_d = d0 % (K + 1);
    for (int d = d0; d < d1; ++d) {
      // ---- A: empty the slot plane d - 1 used (plane d + K - 1's now), add the output planes that
      // reach plane d for the first time.
      if (d > d0) {
        const int sp = slot_d == 0 ? K - 1 : slot_d - 1;
#pragma unroll
        for (int q = 0; q < kNC; ++q) {
          const int c = tid + q * kBlock;
          if (c < kCols) ring[sp * kCols + c] = empty;
        }
      }
      while (next_od <= odhi && next_od - w.p[0] <= d) {
        const int od = next_od++;
        const int od0 = od - w.p[0];
#pragma unroll
        for (int q = 0; q < kNC; ++q) {
          if (!act[q]) continue;
          const T v = pre_v[q];
          const I ix = pre_i[q];
          if (next_od <= odhi) {
            pre_v[q] = dys[next_od * oHW + goff[q]];
            pre_i[q] = ids[next_od * oHW + goff[q]];
          }
          int ds, hs, xs;
          bool ok;
          if constexpr (std::is_same_v<I, std::int64_t>) {
            // A flat index; one outside the output's window is dropped, as the gathers drop it.
            ok = ix >= 0 && ix < plane_in;
            const std::uint32_t u = static_cast<std::uint32_t>(ix);
            const std::uint32_t qd = sa.by_hw.div(u), rem = u - qd * HW, qh = sa.by_w.div(rem);
            ds = static_cast<int>(qd);
            hs = static_cast<int>(qh);
            xs = static_cast<int>(rem - qh * static_cast<std::uint32_t>(w.W));
            ok = ok && static_cast<unsigned>(ds - od0) < unsigned{K} && static_cast<unsigned>(hs - oh0[q]) < unsigned{K} &&
                 static_cast<unsigned>(xs - ow0[q]) < unsigned{K};
          } else {
            // A cell of the window; one in the padding is dropped.
            const int cell = static_cast<int>(ix);
            const int jw = cell % K, t = cell / K, jh = t % K, jd = t / K;
            ds = od0 + jd;
            hs = oh0[q] + jh;
            xs = ow0[q] + jw;
            ok = static_cast<unsigned>(cell) < unsigned{K * K * K} && static_cast<unsigned>(ds) < static_cast<unsigned>(w.D) &&
                 static_cast<unsigned>(hs) < static_cast<unsigned>(w.H) && static_cast<unsigned>(xs) < static_cast<unsigned>(w.W);
          }
          ok = ok && ds >= d && ds < d1;  // planes before d belong to the chunk before
          if (ok) {
            const int rel = ds - d;
            int slot = slot_d + rel;
            if (slot >= K) slot -= K;
            float2* e = ring + slot * kCols + tid + q * kBlock;
            float2 cur = *e;
            const std::uint32_t code = (static_cast<std::uint32_t>(hs) << 16) | static_cast<std::uint32_t>(xs);
            const std::uint32_t old = __float_as_uint(cur.y);
            cur.x += v;
            if (old == kSepEmpty) {
              cur.y = __uint_as_float(code);
            } else if (old != code && old != kSepConflict) {
              cur.y = __uint_as_float(kSepConflict);
              int fs = fslot_d + rel;
              if (fs > K) fs -= K + 1;
              flags[fs] = 1;
            }
            *e = cur;
          }
        }
      }
      __syncthreads();

      // ---- B: g1[hl][c] from ring rows hl .. hl + K - 1 of plane d's slot, oh ascending. The
      // flag of plane d - 1 is cleared for plane d + K (every reader of it passed the barrier).
      if (tid == 0) flags[fslot_d == 0 ? K : fslot_d - 1] = 0;
      {
        const float2* rs = ring + slot_d * kCols;
#pragma unroll
        for (int q = 0; q < kNB; ++q) {
          const int e = tid + q * kBlock;
          if (e < TH * kC) {
            const int hl = e / kC, cw = e - hl * kC;
            if (hl < THe) {
              const std::uint32_t h = static_cast<std::uint32_t>(h0 + hl);
              const float2* col = rs + hl * kC + cw;
              float acc = 0.f;
              std::uint32_t orc = 0, andc = 0xFFFFFFFFu;
#pragma unroll
              for (int j = 0; j < K; ++j) {
                const float2 t = col[j * kC];
                const std::uint32_t code = __float_as_uint(t.y);
                if ((code >> 16) == h) {
                  acc += t.x;
                  orc |= code;
                  andc &= code;
                }
              }
              std::uint32_t out = kSepEmpty;
              if (orc != 0 || andc != 0xFFFFFFFFu) {  // a match (no code is both 0 and all ones)
                if (orc == andc) out = orc & 0xFFFFu;
                else flags[fslot_d] = 1;
              }
              g1[e] = make_float2(acc, __uint_as_float(out));
            }
          }
        }
      }
      __syncthreads();

      // ---- C: a thread per dx cell, ow ascending; the exact gather where the plane's flag is set.
      if (c_act) {
        T acc = 0;
        if (flags[fslot_d]) {
          acc = sep_gather_cell<K>(w, dys, ids, d, h0 + chl, w0 + cwl);
        } else {
          const std::uint32_t x = static_cast<std::uint32_t>(w0 + cwl);
          const float2* row = g1 + chl * kC + cwl;
#pragma unroll
          for (int j = 0; j < K; ++j) {
            const float2 t = row[j];
            if (__float_as_uint(t.y) == x) acc += t.x;
          }
        }
        a.dx[dxo] = acc;
      }
      dxo += HW;
      if (++slot_d == K) slot_d = 0;
      if (++fslot_d == K + 1) fslot_d = 0;
    }
    __syncthreads();  // the ring and flags are set again for the next plane of (n, c)
  }
}

// Why v15 refuses a case ("" when it takes it).
template <class T>
std::string bwd_v15_refuses(const Window& w) {
  if (w.layout != Layout::ncdhw) return "bwd_v15_separable_stages reads the layout NCDHW only";
  if (w.dilated()) return "bwd_v15_separable_stages takes dilation 1 only";
  if (w.s[0] != 1 || w.s[1] != 1 || w.s[2] != 1) return "bwd_v15_separable_stages takes stride 1 only";
  if (w.k[0] != w.k[1] || w.k[1] != w.k[2] || w.k[0] < kSepMinKernel || w.k[0] > kSepMaxKernel)
    return "bwd_v15_separable_stages takes cubic kernels of 2 to 8 cells per axis";
  if (!plane_fits_32_bits(w)) return "bwd_v15_separable_stages indexes a plane in 32 bits; this one is larger";
  if (w.H >= 65535 || w.W >= 65535) return "bwd_v15_separable_stages packs h and w in 16 bits each: H and W must be below 65535";
  return {};
}

// The grid of the staged backwards (v15, v18): a block per TH x TW tile of a plane and LD planes
// along D, blockIdx.y over the N * C planes (a loop past 65535); `sa` gets the tiling and the index's
// decode. Too many tiles for one grid is refused here, before the launch.
inline dim3 stage_grid(const Window& w, int TH, int TW, int LD, SepArgs& sa, const char* who) {
  sa.LD = LD;
  sa.tiles_h = (w.H + TH - 1) / TH;
  sa.tiles_w = (w.W + TW - 1) / TW;
  sa.by_hw = FastDiv(static_cast<std::int64_t>(w.H) * w.W);
  sa.by_w = FastDiv(w.W);
  const std::int64_t blocks = static_cast<std::int64_t>(sa.tiles_h) * sa.tiles_w * ((w.D + LD - 1) / LD);
  if (blocks > kMaxInt32) throw tut::Unsupported(std::string(who) + ": too many tiles for one grid");
  return dim3(static_cast<unsigned>(blocks), static_cast<unsigned>(std::min<std::int64_t>(w.N * w.C, 65535)));
}

// Calls f(std::integral_constant<int, k>{}) for the cubic kernel size k of a staged backward, 2 to 8
// (the refusals come first, so no other size reaches it).
template <class F>
void with_stage_kernel(int k, F&& f) {
  switch (k) {
    case 2: return f(std::integral_constant<int, 2>{});
    case 3: return f(std::integral_constant<int, 3>{});
    case 4: return f(std::integral_constant<int, 4>{});
    case 5: return f(std::integral_constant<int, 5>{});
    case 6: return f(std::integral_constant<int, 6>{});
    case 7: return f(std::integral_constant<int, 7>{});
    default: return f(std::integral_constant<int, 8>{});
  }
}

template <int K, int TH, int TW, int LD, class I, class T>
void bwd_v15_launch(cudaStream_t s, const BackwardArgs<T>& a, const I* idx) {
  using Sh = SepShape<K, TH, TW>;
  const auto kernel = bwd_v15_separable_stages_kernel<K, TH, TW, I, T>;
  static const bool attr = [&] {  // above 48 KiB (kernel 8: 62 KiB) the launch must ask for it
    TUT_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(Sh::smem_bytes())));
    return true;
  }();
  (void)attr;
  SepArgs sa;
  const dim3 grid = stage_grid(a.w, TH, TW, LD, sa, "bwd_v15_separable_stages");
  kernel<<<grid, Sh::kBlock, Sh::smem_bytes(), s>>>(a, idx, sa);
  TUT_CHECK_LAUNCH("bwd_v15_separable_stages_kernel");
}

// The tiling per kernel size and index format (see "Tiling" above): kernel 3 int64 TH 4 TW 64
// LD 32, uint8 TH 8 TW 32 LD 16; kernel 8 int64 TH 16 TW 32 LD 32, int16 TH 16 TW 16 LD 32;
// kernels 2 to 5 take kernel 3's, 6 and 7 kernel 8's.
template <int K, class T>
void bwd_v15_dispatch(cudaStream_t s, const BackwardArgs<T>& a) {
  if (a.w.indices == IndexFormat::int64) {
    if constexpr (K <= 5) bwd_v15_launch<K, 4, 64, 32>(s, a, a.index);
    else bwd_v15_launch<K, 16, 32, 32>(s, a, a.index);
  } else if constexpr (K * K * K <= kMaxByteCells) {
    if constexpr (K <= 5) bwd_v15_launch<K, 8, 32, 16>(s, a, a.offset8);
    else bwd_v15_launch<K, 16, 16, 32>(s, a, a.offset8);
  } else {
    bwd_v15_launch<K, 16, 16, 32>(s, a, a.offset16);
  }
}

template <class T>
void bwd_v15_separable_stages(cudaStream_t s, const BackwardArgs<T>& a) {
  check_backward(a, "bwd_v15_separable_stages");
  if (const std::string why = bwd_v15_refuses<T>(a.w); !why.empty()) throw tut::Unsupported(why);
  with_stage_kernel(a.w.k[0], [&](auto k) { bwd_v15_dispatch<decltype(k)::value>(s, a); });
}

template <class T>
std::vector<const void*> bwd_v15_kernels() {
  return {TUT_KERNEL(bwd_v15_separable_stages_kernel<3, 4, 64, std::int64_t, T>),
          TUT_KERNEL(bwd_v15_separable_stages_kernel<3, 8, 32, std::uint8_t, T>),
          TUT_KERNEL(bwd_v15_separable_stages_kernel<8, 16, 32, std::int64_t, T>),
          TUT_KERNEL(bwd_v15_separable_stages_kernel<8, 16, 16, std::int16_t, T>)};
}

}  // namespace ch06
