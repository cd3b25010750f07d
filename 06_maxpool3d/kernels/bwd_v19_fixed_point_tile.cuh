// bwd v19_fixed_point_tile: the scatter, made deterministic by adding integers instead of floats.
//
// Idea. The atomic scatter (v0) is fast where windows overlap a lot (kernel 8 stride 1: one
// thread per output, one add) and nondeterministic only because float addition is not
// associative. Integer addition is. A block owns a tile of dx of one (n, c) plane and reads every
// output whose window reaches the tile (the tile's "box" of outputs); each dy becomes a 63-bit
// fixed-point integer on a scale the block picks, and is added with shared-memory atomics to the
// cell its index names. Any order of those adds gives the same integer, so dx has the same bits on
// every run.
//
// Exactness. A float is m * 2^e with m an integer below 2^24. Pass 1 finds, over the box's dy,
// the largest top bit (2^T above every |dy|) and the lowest set bit. The scale is 2^(T - 51):
// a cell has at most P = prod ceil(k / s) terms (2048 at most here), so every sum stays below
// 2^62 in those units. When every dy's lowest set bit is at or above the scale's unit, every term
// is an exact integer, the sums are exact, and the cell's value is its exact sum rounded to float
// once (twice only where the result is subnormal). That is no worse than any order of float adds,
// and usually better. When it is not so (dy spanning more than about 27 binades in one box, or an
// Inf or NaN in it), the block computes its tile by v1's gather instead: still deterministic, since
// which path a block takes depends only on the data.
//
// Atomics. A 64-bit shared-memory add compiles to a compare-and-swap loop (ATOMS.CAST.SPIN.64), so
// the integer is kept as three 21-bit pieces in three 32-bit counters, each added with the native
// ATOMS.ADD: the two low pieces are in [0, 2^21), so 2048 of them sum below 2^32; the top piece is
// signed and small. The value is pieces[2] * 2^42 + pieces[1] * 2^21 + pieces[0].
//
// Indices. A term counts only where the index names a cell of its own output's window (int64:
// checked; compact: true by construction), as in the gathers, so on indices no forward writes
// v19 still gives v1's set of terms.
//
// Prediction (before any measurement), kernel 8 stride 1 on 1 x 16 x 64^3 with 8 x 8 x 64 tiles:
// a box is 15 x 15 x 57 outputs for 4096 cells (3.1 reads of each output's dy and index, mostly
// from L2), about 35 instructions per output visit over the two passes: near 15 M warp
// instructions against v15's 41.9 M, so about twice v15's speed, ahead of PyTorch's scatter.
//
// Measured (H100, results/NVIDIA_H100_80GB_HBM3.v19.ncu.txt and .v19_race.txt): wrong by 4.2x in
// instructions. With the 8 x 16 x 64 tiles that were fastest of five (results/forms/v19_tiles.txt),
// kernel 8 stride 1 took 62.4 M warp instructions and 122 us, 2.87 M shared-memory bank conflicts
// (neighbouring windows mostly chose the same cell), and raced 0.425x PyTorch (0.468x compact),
// against v15's 0.673x in the same process. A pass reads each output 2.54 times (the tile's halo), and
// there are two. Kernel 3 stride 1: 0.877x (v18 1.144x); the stem: 0.664x (v9 1.217x). Auto does not
// take it. (The form before the index decode was shared, results/sixteenth_run/ and the commit
// 919f632 files, took 55.8 M instructions in the same 122 us.)
//
// Limits, refused before launch: NCDHW, dilation 1, P <= 2048 covering outputs per cell, a plane
// that fits 32-bit offsets.
#pragma once

#include "kernels/bwd.cuh"
#include "kernels/bwd_v1_gather.cuh"  // the fallback: gather_one

#include <climits>
#include <type_traits>

namespace ch06 {

inline constexpr int kFixBlock = 512;
inline constexpr int kFixMaxTerms = 2048;   // P: the low pieces' sums stay below 2^32
inline constexpr int kFixCells = 8192;      // cells of a tile: 96 KiB of counters, 2 blocks per SM
inline constexpr int kFixScaleBits = 51;    // the scale's unit is 2^(T - 51)
inline constexpr std::uint32_t kFixPiece = (1u << 21) - 1;

struct FixArgs {
  int TD = 1, TH = 1, TW = 1;  // a tile's cells along D, H, W
  int tiles_h = 1, tiles_w = 1;
  FastDiv by_tw, by_thw;   // a tile cell's decode
  IndexDecode dec;         // the saved index's
  GatherDivs dv;           // the fallback's
};

// A float's parts: value = m * 2^e, m an integer (the implicit bit included), 0 <= m < 2^24.
struct FloatParts {
  std::uint32_t m;
  int e;
  bool neg, finite;
};
__device__ __forceinline__ FloatParts float_parts(float v) {
  const std::uint32_t u = __float_as_uint(v), E = (u >> 23) & 0xFF, f = u & 0x7FFFFF;
  return {E ? f | 0x800000u : f, E ? static_cast<int>(E) - 150 : -149, (u >> 31) != 0, E != 0xFF};
}

// v as a multiple of 2^unit (exact when v's lowest set bit is at or above it: pass 1 checks).
__device__ __forceinline__ std::int64_t to_fixed(float v, int unit) {
  const FloatParts f = float_parts(v);
  const int sh = f.e - unit;
  const std::uint64_t mag = sh >= 0 ? static_cast<std::uint64_t>(f.m) << sh : static_cast<std::uint64_t>(f.m >> -sh);
  return f.neg ? -static_cast<std::int64_t>(mag) : static_cast<std::int64_t>(mag);
}

// What a set of dy asks of the scale: the top bit above every |dy| (INT_MIN while every dy is 0),
// the lowest set bit, and whether some dy is not finite. v19 gathers it over a box, v21 over a plane.
struct FixBits {
  int top, low, bad;
};
inline constexpr FixBits kFixNoBits{INT_MIN, INT_MAX, 0};

__device__ __forceinline__ void fix_bits_add(FixBits& b, float v) {
  const FloatParts f = float_parts(v);
  b.bad |= !f.finite;
  if (f.finite && f.m != 0) {
    b.top = max(b.top, f.e + 24);
    b.low = min(b.low, f.e + __ffs(f.m) - 1);
  }
}

__device__ __forceinline__ FixBits fix_bits_warp(FixBits b) {
  return {__reduce_max_sync(0xFFFFFFFFu, b.top), __reduce_min_sync(0xFFFFFFFFu, b.low),
          static_cast<int>(__reduce_or_sync(0xFFFFFFFFu, static_cast<unsigned>(b.bad)))};
}

// The unit 2^unit of the integers, and whether every dy is a whole number of units (then every
// term, and every sum of at most kFixMaxTerms of them, is exact in 63 bits).
struct FixScale {
  int unit;
  bool exact;
};
__device__ __forceinline__ FixScale fix_scale(FixBits b) {
  const int unit = b.top == INT_MIN ? 0 : b.top - kFixScaleBits;  // INT_MIN: every dy is 0
  return {unit, !b.bad && (b.top == INT_MIN || b.low >= unit)};
}

template <class I, class T>
__global__ void __launch_bounds__(kFixBlock, 2)
    bwd_v19_fixed_point_tile_kernel(const BackwardArgs<T> a, const I* __restrict__ idx, const FixArgs f) {
  static_assert(std::is_same_v<T, float>, "the fixed-point pieces are built from float32 bits");
  extern __shared__ std::uint32_t fix_smem[];
  __shared__ int top_max, low_min, nonfinite;
  const Window& w = a.w;
  const int cells = f.TD * f.TH * f.TW;
  std::uint32_t* s0 = fix_smem;
  std::uint32_t* s1 = fix_smem + cells;
  int* s2 = reinterpret_cast<int*>(fix_smem + 2 * cells);

  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32, warps = kFixBlock / 32;
  int b = blockIdx.x;
  const int tw = b % f.tiles_w;
  b /= f.tiles_w;
  const int th = b % f.tiles_h, td = b / f.tiles_h;
  const int d0 = td * f.TD, h0 = th * f.TH, w0 = tw * f.TW;
  const int nd = min(f.TD, w.D - d0), nh = min(f.TH, w.H - h0), nw = min(f.TW, w.W - w0);
  int odlo, odhi, ohlo, ohhi, owlo, owhi;
  reaching_outputs(d0, nd, w.k[0], w.s[0], w.p[0], w.oD, odlo, odhi);
  reaching_outputs(h0, nh, w.k[1], w.s[1], w.p[1], w.oH, ohlo, ohhi);
  reaching_outputs(w0, nw, w.k[2], w.s[2], w.p[2], w.oW, owlo, owhi);
  const int bD = max(0, odhi - odlo + 1), bH = max(0, ohhi - ohlo + 1), bW = max(0, owhi - owlo + 1);
  const int rows = bD * bH;
  const std::int64_t planes = w.N * w.C, plane_out = w.out_plane(), plane_in = w.in_plane();

  // Calls g(o, od, oh, ow) for each output of the box, a warp per box row, lanes along ow.
  const auto each_output = [&](std::int64_t obase, auto&& g) {
    int rd = warp / max(bH, 1), rh = warp - rd * max(bH, 1);
    for (int r = warp; r < rows; r += warps) {
      const int od = odlo + rd, oh = ohlo + rh;
      const std::int64_t row = obase + (static_cast<std::int64_t>(od) * w.oH + oh) * w.oW;
      for (int c = lane; c < bW; c += 32) g(row + owlo + c, od, oh, owlo + c);
      rh += warps;
      while (rh >= bH) rh -= bH, ++rd;
    }
  };

  // Calls g(c, e) for each cell of the tile inside the input: its counter c and its element e of dx.
  const auto each_cell = [&](std::int64_t ibase, auto&& g) {
    for (int c = tid; c < cells; c += kFixBlock) {
      const int cd = static_cast<int>(f.by_thw.div(static_cast<std::uint32_t>(c)));
      const int rem = c - cd * f.TH * f.TW;
      const int ch = static_cast<int>(f.by_tw.div(static_cast<std::uint32_t>(rem))), cw = rem - ch * f.TW;
      if (cd < nd && ch < nh && cw < nw) g(c, ibase + (static_cast<std::int64_t>(d0 + cd) * w.H + h0 + ch) * w.W + w0 + cw);
    }
  };

  for (std::int64_t nc = blockIdx.y; nc < planes; nc += gridDim.y) {
    const std::int64_t obase = nc * plane_out, ibase = nc * plane_in;
    if (tid == 0) top_max = INT_MIN, low_min = INT_MAX, nonfinite = 0;
    for (int c = tid; c < cells; c += kFixBlock) s0[c] = 0, s1[c] = 0, s2[c] = 0;
    __syncthreads();

    // Pass 1: the box's dy, its top bit and lowest set bit.
    FixBits bits = kFixNoBits;
    each_output(obase, [&](std::int64_t o, int, int, int) { fix_bits_add(bits, a.dy[o]); });
    bits = fix_bits_warp(bits);
    if (lane == 0) {
      atomicMax(&top_max, bits.top);
      atomicMin(&low_min, bits.low);
      if (bits.bad) nonfinite = 1;
    }
    __syncthreads();
    const FixScale scale = fix_scale({top_max, low_min, nonfinite});
    const int unit = scale.unit;

    if (scale.exact) {
      // Pass 2: each term, as three pieces, to the cell its index names.
      each_output(obase, [&](std::int64_t o, int od, int oh, int ow) {
        const int sd = od * w.s[0] - w.p[0], sh = oh * w.s[1] - w.p[1], sw = ow * w.s[2] - w.p[2];
        const NamedCell named = window_cell(w, f.dec, idx[o], sd, sh, sw);
        if (!named.in_window) return;  // no gather would collect it
        const int d = named.d, h = named.h, x = named.x;
        if (static_cast<unsigned>(d - d0) >= static_cast<unsigned>(nd) ||
            static_cast<unsigned>(h - h0) >= static_cast<unsigned>(nh) ||
            static_cast<unsigned>(x - w0) >= static_cast<unsigned>(nw))
          return;  // another tile's cell (or padding)
        const std::int64_t v = to_fixed(a.dy[o], unit);
        if (v == 0) return;
        const int cell = ((d - d0) * f.TH + (h - h0)) * f.TW + (x - w0);
        atomicAdd(s0 + cell, static_cast<std::uint32_t>(v) & kFixPiece);
        atomicAdd(s1 + cell, static_cast<std::uint32_t>(v >> 21) & kFixPiece);
        atomicAdd(s2 + cell, static_cast<int>(v >> 42));
      });
      __syncthreads();
      // Pass 3: each cell's integer, rounded to float once, stored once.
      each_cell(ibase, [&](int c, std::int64_t e) {
        const std::int64_t total = static_cast<std::int64_t>(s2[c]) * (std::int64_t{1} << 42) +
                                   static_cast<std::int64_t>(s1[c]) * (std::int64_t{1} << 21) + s0[c];
        a.dx[e] = scalbnf(__ll2float_rn(total), unit);
      });
    } else {
      // dy too wide for 63 bits, or not finite: v1's gather for this tile.
      each_cell(ibase, [&](int, std::int64_t e) { a.dx[e] = gather_one<false>(a, f.dv, e); });
    }
    __syncthreads();  // the counters and the scalars are set again for the next plane
  }
}

// Covering outputs per cell at most: prod ceil(k / s) (undilated).
inline std::int64_t fix_terms(const Window& w) {
  std::int64_t p = 1;
  for (int i = 0; i < 3; ++i) p *= (w.k[i] + w.s[i] - 1) / w.s[i];
  return p;
}

// Why a fixed-point version (v19, v21) refuses a case ("" when it takes it): both read NCDHW,
// undilated, with at most kFixMaxTerms outputs covering a cell, a plane in 32-bit offsets.
inline std::string fixed_point_refuses(const Window& w, const std::string& name) {
  if (w.layout != Layout::ncdhw) return name + " reads the layout NCDHW only";
  if (w.dilated()) return name + " takes dilation 1 only";
  if (fix_terms(w) > kFixMaxTerms)
    return name + ": more than " + std::to_string(kFixMaxTerms) + " outputs can cover one cell";
  if (!plane_fits_32_bits(w)) return name + " indexes a plane in 32 bits; this one is larger";
  return {};
}

template <class T>
std::string bwd_v19_refuses(const Window& w) {
  return fixed_point_refuses(w, "bwd_v19_fixed_point_tile");
}

// The tile: a row of up to 64 cells along W, up to 16 rows along H, and as many planes along D as
// keep it within kFixCells (8 x 16 x 64 on 64^3 planes).
inline FixArgs fix_args(const Window& w) {
  FixArgs f;
  f.TW = std::min(w.W, 64);
  f.TH = std::min(w.H, 16);
  f.TD = std::min(w.D, std::max(1, kFixCells / (f.TW * f.TH)));
  f.tiles_h = (w.H + f.TH - 1) / f.TH;
  f.tiles_w = (w.W + f.TW - 1) / f.TW;
  f.by_tw = FastDiv(f.TW);
  f.by_thw = FastDiv(f.TH * f.TW);
  f.dec = index_decode(w);
  f.dv = gather_divs(w);
  return f;
}

template <class I, class T>
void bwd_v19_launch(cudaStream_t s, const BackwardArgs<T>& a, const I* idx) {
  const FixArgs f = fix_args(a.w);
  const std::int64_t tiles = static_cast<std::int64_t>(f.tiles_h) * f.tiles_w * ((a.w.D + f.TD - 1) / f.TD);
  if (tiles > kMaxInt32) throw tut::Unsupported("bwd_v19_fixed_point_tile: too many tiles for one grid");
  const std::size_t smem = sizeof(std::uint32_t) * 3 * static_cast<std::size_t>(f.TD) * f.TH * f.TW;
  const dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>(std::min<std::int64_t>(a.w.N * a.w.C, 65535)));
  const auto kernel = bwd_v19_fixed_point_tile_kernel<I, T>;
  static const bool attr = [&] {  // 96 KiB of counters: past the default 48 KiB
    TUT_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(sizeof(std::uint32_t) * 3 * kFixCells)));
    return true;
  }();
  (void)attr;
  bwd_v19_fixed_point_tile_kernel<I, T><<<grid, kFixBlock, smem, s>>>(a, idx, f);
  TUT_CHECK_LAUNCH("bwd_v19_fixed_point_tile_kernel");
}

template <class T>
void bwd_v19_fixed_point_tile(cudaStream_t s, const BackwardArgs<T>& a) {
  check_backward(a, "bwd_v19_fixed_point_tile");
  if (const std::string why = bwd_v19_refuses<T>(a.w); !why.empty()) throw tut::Unsupported(why);
  with_index(a, [&](const auto* idx) { bwd_v19_launch(s, a, idx); });
}

template <class T>
std::vector<const void*> bwd_v19_kernels() {
  return {TUT_KERNEL(bwd_v19_fixed_point_tile_kernel<std::int64_t, T>),
          TUT_KERNEL(bwd_v19_fixed_point_tile_kernel<std::uint8_t, T>),
          TUT_KERNEL(bwd_v19_fixed_point_tile_kernel<std::int16_t, T>)};
}

}  // namespace ch06
