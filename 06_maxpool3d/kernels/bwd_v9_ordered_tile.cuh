// bwd v9_ordered_tile: the deterministic backward where windows overlap, as a scatter into a tile
// of dx held in shared memory, the additions made in a fixed order.
//
// The order. Along an axis, the outputs whose windows cover cell x are lo(x), lo(x) + 1, ... with
// lo(x) = max(0, ceil((x + p - k + 1) / s)), at most m = ceil(k / s) of them (undilated windows). Call
// o - lo(x) the rank of output o at cell x, and combine the three axes' ranks into one number,
// (r_d * m_h + r_h) * m_w + r_w, below P = m_d * m_h * m_w (8 for kernel 3 stride 2, 27 for stride 1).
// Two different outputs that chose the same cell have different ranks there; two that have the same
// rank chose different cells. So if a block adds the outputs of rank 0, then (after a barrier) those
// of rank 1, and so on, no two threads ever add to the same cell at once (plain shared-memory adds,
// no atomics), and each cell receives its terms in ascending rank, which is ascending (od, oh, ow):
// v1's order, so dx has v1's bits, on every run.
//
// A block takes a tile, a box of TD x TH x TW cells (x TC channels in NDHWC) of one plane (n, c) in
// NCDHW or of one sample n in NDHWC, chosen on the host (make_ordered_plan below), and:
//   1. loads the outputs whose windows reach into the tile (its own and a halo), up to 8 per thread,
//      all loads in flight while it zeroes the tile in shared memory; then, for each, decodes the
//      saved cell and keeps it if it lies in the tile (and, for an int64 index, in the output's
//      window: an index from elsewhere is dropped, as the gathers drop it), as its place in the tile
//      and its rank;
//   2. makes P passes, a barrier before each, adding the dy of its outputs of that rank (a thread
//      skips the passes of ranks it does not hold: a 64-bit mask);
//   3. writes the tile to dx, a warp per contiguous run (a row of TW cells in NCDHW), every cell
//      once: no zeroing pass over dx, no global atomics.
//
// What changed since v6 (the staged tile, 148 M warp instructions on the stem case against its
// predicted 27 M, DRAM 19 % busy): v6 staged the outputs, then had one thread per cell search the
// covering outputs for those that chose it, through masks of slots. Here nothing searches: each
// output goes straight to its cell, as in the scatter, and the order comes from P barriers instead.
//
// A first form of this kernel (H100, Nsight Compute) ran 127 M warp instructions on the stem case,
// 0.267 of copy (the scatter 0.405): it chose the box by the fewest outputs read per cell alone, so
// up to a third of a tile lay past the volume's end (TH = 24 on H = 56) and on kernel 2 stride 2 it
// took 448-cell tiles (1.33 ms); it found each cell's element in dx with three divisions, and every
// thread compared all 8 slots in every pass. Now the box minimizes an instruction count that charges
// the empty cells and the tiles' fixed cost, a warp writes a run from one base address, the entries'
// rows and columns come from a float reciprocal per tile (small_div), and the mask skips passes.
//
// Prediction, stem case (8x64x16x56x56, kernel 3 stride 2 padding 1): 16 x 19 x 56 boxes, 0.134
// outputs read per cell (the outputs are 0.125 per cell: a halo of 7 %); about 60 instructions per
// output read and 8 per cell: (0.134 x 60 + 8) x 25.7 M / 32 = 13 M warp instructions, so bound by
// memory: about the floor's bytes, dx written once, faster than the scatter (dx written twice).
// Kernel 3 stride 1: 27 passes; the outputs are as many as the cells and a block holds 4096, so
// the boxes are small (16 x 5 x 32) and 1.5 outputs are read per cell. SASS: no RED or ATOM
// (tests/test_sass.cpp).
//
// Measured (H100, results/): a second form (tiles by the count above but rows written one by one,
// the rank by three divisions) ran 93.7 M warp instructions on the stem case. This one: 57.8 M and
// 90.1 us under Nsight Compute (the scatter's kernel 71.0 us after PyTorch's 31.8 us fill), DRAM 40 %
// busy, 0.510 of copy against v0's 0.405: 1.22x PyTorch raced in one process (compact index 0.465,
// 1.36x). Still bound by instructions, at 4.5 times the prediction: 17 warp instructions per
// output read if they all went there, not 2. In NDHWC (the same windows) this kernel ran at 0.366
// of copy with 90.8 M instructions (0.95x PyTorch in that suite run): its box of 4 x 6 x 8 positions
// x 64 channels reads 0.28 outputs per cell, twice NCDHW's halo. The NDHWC form below replaces it
// there where C is a multiple of 4.
// Kernel 3 stride 1: 528 M instructions, 0.132 of copy, below v6 (0.283): 1.45 outputs read per cell
// at some 10 warp instructions each, and 27 passes; the rule keeps v6 there.
//
// The NDHWC form (bwd_v9_ordered_channels_kernel). Where the NDHWC stem case's time went: 90.8 M
// warp instructions against NCDHW's 57.8 M for the same cells, with DRAM 29 % busy, so still bound
// by issue. Its box cannot grow (a block holds 4096 outputs: 64 positions of 64 channels; 96 KiB of
// tile: 384 positions), so the halo stays; what can shrink is the cost per output read. In the SASS
// each output paid its place in the tile twice (small_divs and a 64-bit output number), its own
// 4-byte loads of dy and of the index, and in every one of the 8 passes 11 instructions per slot, 4
// of them rebuilding the tile's shared-memory address (the compiler, at its 64 registers, does not
// keep it). Where C is a multiple of 4 (so every TC and every tile's first channel are) and the
// arrays are aligned, a thread takes 4 consecutive channels of one covering output, at most 2 such
// groups (its 8 outputs): the place once for 4, dy in one 16-byte load, an int64 index in two, the
// tile zeroed and written 16 bytes at a time; a slot's key holds its cell's shared-memory address
// and its rank (a pass: 6 instructions per slot). The keys' ranks and the passes are unchanged, so
// the bits are still v1's. Prediction: about 30 % fewer warp instructions (about 63 M) and, bound
// by issue, about as much less time: NCDHW's 0.51 of copy.
// Measured (H100, results/forms/bwd_stem_r7.*): 0.0910 ms against v0's 0.1140 in one process, 0.514
// of copy, 1.25x v0 (the kernel above: 0.1276 ms against v0's 0.1144, 0.90x, in the next process);
// Nsight Compute 56.7 M warp instructions (0.62 of 90.8 M), 39.2 MB read from DRAM as before. NCDHW
// is untouched: 0.0921 ms, 1.25x v0 (compact 0.0842, 1.29x).
#pragma once

#include "kernels/bwd.cuh"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <type_traits>
#include <vector>

namespace ch06 {

inline constexpr int kOrderedBlock = 512;       // threads per block
inline constexpr int kOrderedPerThread = 8;     // outputs a thread holds (their loads in flight together)
inline constexpr int kOrderedMaxOutputs = kOrderedBlock * kOrderedPerThread;
inline constexpr int kOrderedMaxCells = 24576;  // 96 KiB of float: two blocks per SM
inline constexpr int kOrderedMaxPasses = 64;    // a rank fits 6 bits of the key, the ranks present 64 bits
inline constexpr int kOrderedMaxKernel = 64;    // window cells per axis (the rank table)

struct OrderedTile {
  bool cl = false;                         // NDHWC: TC channels per tile
  int t[4] = {1, 1, 1, 1};                 // TD, TH, TW, TC
  int n[4] = {1, 1, 1, 1};                 // tiles along D, H, W, C
  int m[3] = {1, 1, 1};                    // covering outputs per axis at most: ceil(k / s)
  int passes = 1;                          // m[0] * m[1] * m[2]
  int cells = 1;                           // TD * TH * TW * TC
  int run = 1;                             // a tile's contiguous runs in dx (ordered_run), in cells
  bool slices = false;                     // whole rows (TW = W, and TC = C in NDHWC): a run per slice
  unsigned char rank_of[3][kOrderedMaxKernel];  // per axis and place r in the window: floor((k - 1 - r) / s)
  std::int64_t leads = 1, tiles = 1;       // planes (n, c) or samples n; every tile
  FastDiv by_W, by_H, by_s[3], by_TH, by_TW;
};

// One tile's box: where it starts, its extent (shorter at the volume's end), and the first covering
// output and the count of covering outputs along each axis.
struct TileBox {
  std::int64_t lead = 0;
  int c0 = 0, nc = 1;
  int x0[3] = {0, 0, 0}, nx[3] = {0, 0, 0}, lo[3] = {0, 0, 0}, cnt[3] = {0, 0, 0};
};

// Along an axis: the first output whose window covers cell x (undilated), or 0.
TUT_HD inline int first_covering(int x, int k, int s, int p, const FastDiv& by_s) {
  const int num = x + p - k + 1;
  return num <= 0 ? 0 : static_cast<int>(by_s.div(static_cast<std::uint32_t>(num + s - 1)));
}

TUT_HD inline TileBox tile_box(const Window& w, const OrderedTile& ot, std::int64_t t) {
  TileBox b;
  const int in[3] = {w.D, w.H, w.W}, out[3] = {w.oD, w.oH, w.oW};
  int j[4];
  std::uint32_t u = static_cast<std::uint32_t>(t);  // fewer than 2^31 tiles (make_ordered_plan)
  for (int a = 3; a >= 0; --a) {
    const std::uint32_t q = u / static_cast<std::uint32_t>(ot.n[a]);
    j[a] = static_cast<int>(u - q * static_cast<std::uint32_t>(ot.n[a]));
    u = q;
  }
  b.lead = u;
  b.c0 = j[3] * ot.t[3];
  b.nc = ot.cl ? (static_cast<int>(w.C) - b.c0 < ot.t[3] ? static_cast<int>(w.C) - b.c0 : ot.t[3]) : 1;
  for (int a = 0; a < 3; ++a) {
    b.x0[a] = j[a] * ot.t[a];
    b.nx[a] = in[a] - b.x0[a] < ot.t[a] ? in[a] - b.x0[a] : ot.t[a];
    b.lo[a] = first_covering(b.x0[a], w.k[a], w.s[a], w.p[a], ot.by_s[a]);
    int hi = static_cast<int>(ot.by_s[a].div(static_cast<std::uint32_t>(b.x0[a] + b.nx[a] - 1 + w.p[a])));
    if (hi > out[a] - 1) hi = out[a] - 1;
    b.cnt[a] = hi >= b.lo[a] ? hi - b.lo[a] + 1 : 0;
  }
  return b;
}

TUT_HD inline int tile_outputs(const TileBox& b) { return b.cnt[0] * b.cnt[1] * b.cnt[2] * b.nc; }

// floor(n / d) for 0 <= n and n * d small (below 2^22; here n, d <= 4096 and n * d within the
// tile's outputs times its rows), from a reciprocal computed once per tile: (n + 0.5) / d lies at
// least 0.5 / d from an integer, far more than the float's rounding.
TUT_HD inline int small_div(int n, float inv_d) { return static_cast<int>((static_cast<float>(n) + 0.5f) * inv_d); }

// The reciprocals a tile's threads divide by: output columns (cnt_w * nc), rows (cnt_h), channels.
struct TileRecip {
  float cols = 1, rows = 1, ch = 1;
};
TUT_HD inline float reciprocal(int d) {
#if defined(__CUDA_ARCH__)
  return __fdividef(1.0f, static_cast<float>(d));  // within 2 ulp (MUFU.RCP): small_div's margin is far wider
#else
  return 1.0f / static_cast<float>(d);
#endif
}
TUT_HD inline TileRecip tile_recip(const TileBox& b) {
  TileRecip r;
  r.cols = reciprocal(b.cnt[2] * b.nc > 0 ? b.cnt[2] * b.nc : 1);
  r.rows = reciprocal(b.cnt[1] > 0 ? b.cnt[1] : 1);
  r.ch = reciprocal(b.nc);
  return r;
}

// Output e of the tile's covering outputs (channel fastest in NDHWC, then ow, oh, od), from its
// loads: its output number, and the index and dy read ahead.
template <class T>
TUT_HD inline std::int64_t ordered_output(const Window& w, const OrderedTile& ot, const TileBox& b, const TileRecip& rc,
                                          int e, int& od, int& oh, int& ow, int& c) {
  const int cols = b.cnt[2] * b.nc, row = small_div(e, rc.cols), col = e - row * cols;
  od = small_div(row, rc.rows);
  oh = b.lo[1] + row - od * b.cnt[1];
  od += b.lo[0];
  c = ot.cl ? col - small_div(col, rc.ch) * b.nc : 0;
  ow = b.lo[2] + (ot.cl ? small_div(col, rc.ch) : col);
  // The place in the output plane in 32 bits (an output plane is smaller than the input's, which
  // fits), the rest in 64.
  const int in_plane = (od * w.oH + oh) * w.oW + ow;
  return ot.cl ? (b.lead * w.out_plane() + in_plane) * w.C + b.c0 + c : b.lead * w.out_plane() + in_plane;
}

// Output o's saved index as a 32-bit number: the window cell (compact), or the flat index (int64),
// -1 for one outside the plane (the plane fits 32 bits).
template <class T>
TUT_HD inline int saved_as_int(const BackwardArgs<T>& a, std::int64_t o) {
  if (a.w.indices != IndexFormat::int64) return saved_window_cell(a, o);
  const std::int64_t f = a.index[o];
  return f < 0 || f >= a.w.in_plane() ? -1 : static_cast<int>(f);
}

// The key of an output whose saved index was read (saved_as_int, not -1): (place in the tile << 6)
// | rank, or -1 when its saved cell is not in the tile (or, for an int64 index, not in its window).
template <class T>
TUT_HD inline int ordered_key(const Window& w, const OrderedTile& ot, const TileBox& b, int od, int oh, int ow, int c,
                              int saved) {
  int x[3];
  if (w.indices == IndexFormat::int64) {
    const std::uint32_t u = static_cast<std::uint32_t>(saved), r = ot.by_W.div(u), q = ot.by_H.div(r);
    x[2] = static_cast<int>(u - r * static_cast<std::uint32_t>(w.W));
    x[1] = static_cast<int>(r - q * static_cast<std::uint32_t>(w.H));
    x[0] = static_cast<int>(q);
  } else {
    int jd, jh, jw;
    w.cell_of(static_cast<int>(saved), jd, jh, jw);
    x[0] = od * w.s[0] - w.p[0] + jd;
    x[1] = oh * w.s[1] - w.p[1] + jh;
    x[2] = ow * w.s[2] - w.p[2] + jw;
  }
  const int os[3] = {od, oh, ow};
  int place = 0, rank = 0;
  for (int ax = 0; ax < 3; ++ax) {
    const int r = x[ax] - (os[ax] * w.s[ax] - w.p[ax]);  // the cell's place in the window
    const int l = x[ax] - b.x0[ax];                       // and in the tile
    if ((static_cast<unsigned>(r) >= static_cast<unsigned>(w.k[ax])) |
        (static_cast<unsigned>(l) >= static_cast<unsigned>(b.nx[ax])))
      return -1;
    place = place * ot.t[ax] + l;
    // The rank: o - lo(x), and lo(x) = max(0, o + ceil((r - k + 1) / s)), so it is
    // min(o, floor((k - 1 - r) / s)), a table of r (OrderedTile::rank_of).
    const int from_r = ot.rank_of[ax][r];
    rank = rank * ot.m[ax] + (os[ax] < from_r ? os[ax] : from_r);
  }
  place = place * ot.t[3] + c;
  return (place << 6) | rank;
}

// Run r of the tile (ot.cells / ot.run of them, each ot.run cells of shared memory from r * ot.run):
// its first element in dx, and how many of its cells lie in the volume (0: none). A run is a span of
// dx that is contiguous: in NCDHW a slice's TH rows when the tile has whole rows (TW = W), else one
// row; in NDHWC with every channel (TC = C) the same with C per position, else TC channels of one
// position.
template <class T>
TUT_HD inline std::int64_t ordered_run(const Window& w, const OrderedTile& ot, const TileBox& b, int r, int& len) {
  len = 0;
  const std::int64_t C = ot.cl ? w.C : 1;
  int ld, lh = 0, lw = 0;
  if (ot.slices) {  // whole rows: one run per slice
    ld = r;
  } else {
    std::uint32_t u = static_cast<std::uint32_t>(r);
    if (ot.cl && ot.t[3] < w.C) {  // runs of TC channels at one position
      const std::uint32_t q = ot.by_TW.div(u);
      lw = static_cast<int>(u - q * static_cast<std::uint32_t>(ot.t[2]));
      u = q;
    }
    const std::uint32_t q = ot.by_TH.div(u);
    lh = static_cast<int>(u - q * static_cast<std::uint32_t>(ot.t[1]));
    ld = static_cast<int>(q);
  }
  if (ld >= b.nx[0] || lh >= b.nx[1] || lw >= b.nx[2]) return 0;
  const std::int64_t d = b.x0[0] + ld, h = b.x0[1] + lh;
  if (ot.slices) len = b.nx[1] * w.W * static_cast<int>(C);
  else if (ot.cl && ot.t[3] < w.C) len = b.nc;
  else len = b.nx[2] * static_cast<int>(C);
  return (((b.lead * w.D + d) * w.H + h) * static_cast<std::int64_t>(w.W) + b.x0[2] + lw) * C + b.c0;
}

template <class T>
__global__ void __launch_bounds__(kOrderedBlock, 2) bwd_v9_ordered_tile_kernel(BackwardArgs<T> a, OrderedTile ot) {
  extern __shared__ unsigned char ordered_smem[];
  T* tile = reinterpret_cast<T*>(ordered_smem);
  const Window& w = a.w;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, runs = ot.cells / ot.run;
  for (std::int64_t t = blockIdx.x; t < ot.tiles; t += gridDim.x) {
    const TileBox b = tile_box(w, ot, t);
    const TileRecip rc = tile_recip(b);
    const int outputs = tile_outputs(b);
    // The loads first, all in flight while the tile is zeroed.
    int key[kOrderedPerThread];  // first the saved index (an int64 one outside the plane: -1), then the key
    T g[kOrderedPerThread];
#pragma unroll
    for (int j = 0; j < kOrderedPerThread; ++j) {
      const int e = threadIdx.x + j * kOrderedBlock;
      key[j] = -1;
      g[j] = T(0);
      if (e < outputs) {
        int od, oh, ow, c;
        const std::int64_t o = ordered_output<T>(w, ot, b, rc, e, od, oh, ow, c);
        key[j] = saved_as_int(a, o);
        g[j] = a.dy[o];
      }
    }
    for (int i = threadIdx.x; i < ot.cells; i += kOrderedBlock) tile[i] = T(0);
    std::uint64_t present = 0;  // the ranks this thread holds
#pragma unroll
    for (int j = 0; j < kOrderedPerThread; ++j) {
      const int e = threadIdx.x + j * kOrderedBlock;
      if (e < outputs && key[j] >= 0) {
        int od, oh, ow, c;
        ordered_output<T>(w, ot, b, rc, e, od, oh, ow, c);
        key[j] = ordered_key<T>(w, ot, b, od, oh, ow, c, key[j]);
      } else {
        key[j] = -1;
      }
      if (key[j] >= 0) present |= std::uint64_t{1} << (key[j] & 63);
    }
    for (int p = 0; p < ot.passes; ++p) {
      __syncthreads();  // the zeros, then each rank's adds, before the next rank's
      if ((present >> p) & 1u) {
#pragma unroll
        for (int j = 0; j < kOrderedPerThread; ++j)
          if (key[j] >= 0 && (key[j] & 63) == p) tile[key[j] >> 6] += g[j];
      }
    }
    __syncthreads();
    // A warp per run of contiguous dx, its lanes along the run.
    for (int r = warp; r < runs; r += kOrderedBlock / 32) {
      int len;
      const std::int64_t base = ordered_run<T>(w, ot, b, r, len);
      const T* src = tile + r * ot.run;
      for (int q = lane; q < len; q += 32) a.dx[base + q] = src[q];
    }
    __syncthreads();  // the tile is read before the next one zeroes it
  }
}

// The NDHWC form: 4 channels per thread. Where C is a multiple of 4 (so is every tile's TC, and
// every tile's channels start at a multiple of 4) and dy, dx and the index are aligned for packs of
// 4, a thread takes a group of 4 consecutive channels of one covering output, up to 2 groups (its 8
// outputs as before): the group's place (ordered_output) is worked out once for its 4 outputs, not
// twice for each; dy comes in one 16-byte load, an int64 index in two (compact: one of 4 or 8
// bytes); the tile is zeroed and written to dx 16 bytes at a time. The keys, the ranks and the
// passes are v9's, slot for slot, so each cell still receives its terms in ascending rank: v1's bits.
inline constexpr int kOrderedPack = 4;  // channels per thread in the NDHWC form

template <class T>
struct alignas(4 * sizeof(T)) OrderedPack4 {
  T v[4];
};

template <class T>
__global__ void __launch_bounds__(kOrderedBlock, 2) bwd_v9_ordered_channels_kernel(BackwardArgs<T> a, OrderedTile ot) {
  static_assert(std::is_same<T, float>::value, "the NDHWC form moves 4 floats as 16 bytes");
  constexpr int V = kOrderedPack, G = kOrderedPerThread / V;  // G groups of V outputs per thread
  extern __shared__ __align__(16) unsigned char ordered_pack_smem[];
  T* tile = reinterpret_cast<T*>(ordered_pack_smem);
  const Window& w = a.w;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, runs = ot.cells / ot.run;
  const std::int64_t in_plane = w.in_plane();
  // The tile's address in the shared window: a slot's key becomes (its cell's address << 6) | rank,
  // so that a pass reads and writes the cell without rebuilding its address from the tile's.
  const std::uint32_t tile_at = static_cast<std::uint32_t>(__cvta_generic_to_shared(tile));
  for (std::int64_t t = blockIdx.x; t < ot.tiles; t += gridDim.x) {
    const TileBox b = tile_box(w, ot, t);
    const TileRecip rc = tile_recip(b);
    const int outputs = tile_outputs(b);  // a multiple of V: b.nc is
    int key[kOrderedPerThread];  // first the saved index (an int64 one outside the plane: -1), then the key
    T g[kOrderedPerThread];
#pragma unroll
    for (int j = 0; j < G; ++j) {
      const int e = (threadIdx.x + j * kOrderedBlock) * V;
#pragma unroll
      for (int v = 0; v < V; ++v) key[j * V + v] = -1, g[j * V + v] = T(0);
      if (e < outputs) {
        int od, oh, ow, c;
        const std::int64_t o = ordered_output<T>(w, ot, b, rc, e, od, oh, ow, c);  // a multiple of V
        const OrderedPack4<T> d = *reinterpret_cast<const OrderedPack4<T>*>(a.dy + o);
        if (w.indices == IndexFormat::int64) {
          const longlong2 lo = *reinterpret_cast<const longlong2*>(a.index + o);
          const longlong2 hi = *reinterpret_cast<const longlong2*>(a.index + o + 2);
          const long long f[4] = {lo.x, lo.y, hi.x, hi.y};
#pragma unroll
          for (int v = 0; v < V; ++v) key[j * V + v] = f[v] < 0 || f[v] >= in_plane ? -1 : static_cast<int>(f[v]);
        } else if (w.compact8()) {
          const uchar4 q = *reinterpret_cast<const uchar4*>(a.offset8 + o);
          key[j * V + 0] = q.x, key[j * V + 1] = q.y, key[j * V + 2] = q.z, key[j * V + 3] = q.w;
        } else {
          const short4 q = *reinterpret_cast<const short4*>(a.offset16 + o);
          key[j * V + 0] = q.x, key[j * V + 1] = q.y, key[j * V + 2] = q.z, key[j * V + 3] = q.w;
        }
#pragma unroll
        for (int v = 0; v < V; ++v) g[j * V + v] = d.v[v];
      }
    }
    for (int i = threadIdx.x; i < ot.cells / V; i += kOrderedBlock)
      reinterpret_cast<OrderedPack4<T>*>(tile)[i] = OrderedPack4<T>{{T(0), T(0), T(0), T(0)}};
    std::uint64_t present = 0;  // the ranks this thread holds
#pragma unroll
    for (int j = 0; j < G; ++j) {
      const int e = (threadIdx.x + j * kOrderedBlock) * V;
      if (e < outputs) {
        int od, oh, ow, c;
        ordered_output<T>(w, ot, b, rc, e, od, oh, ow, c);
#pragma unroll
        for (int v = 0; v < V; ++v) {
          int& k = key[j * V + v];
          if (k >= 0) k = ordered_key<T>(w, ot, b, od, oh, ow, c + v, k);
          if (k >= 0) {
            present |= std::uint64_t{1} << (k & 63);
            const std::uint32_t cell_at = tile_at + static_cast<std::uint32_t>(k >> 6) * 4u;
            k = static_cast<int>((cell_at << 6) | static_cast<std::uint32_t>(k & 63));
          }
        }
      }
    }
    for (int p = 0; p < ot.passes; ++p) {
      __syncthreads();  // the zeros, then each rank's adds, before the next rank's
      if ((present >> p) & 1u) {
#pragma unroll
        for (int j = 0; j < kOrderedPerThread; ++j)
          // A key (not -1: the sign bit) of rank p.
          if ((static_cast<std::uint32_t>(key[j]) & 0x8000003fu) == static_cast<std::uint32_t>(p)) {
            const std::uint32_t at = static_cast<std::uint32_t>(key[j]) >> 6;
            float sum;
            asm volatile("ld.shared.f32 %0, [%1];" : "=f"(sum) : "r"(at));
            sum += g[j];
            asm volatile("st.shared.f32 [%0], %1;" ::"r"(at), "f"(sum) : "memory");
          }
      }
    }
    __syncthreads();
    // A warp per run of contiguous dx (a multiple of V cells from a multiple of V), 16 bytes a lane.
    for (int r = warp; r < runs; r += kOrderedBlock / 32) {
      int len;
      const std::int64_t base = ordered_run<T>(w, ot, b, r, len);
      const OrderedPack4<T>* src = reinterpret_cast<const OrderedPack4<T>*>(tile + r * ot.run);
      OrderedPack4<T>* dst = reinterpret_cast<OrderedPack4<T>*>(a.dx + base);
      for (int q = lane; q < len / V; q += 32) dst[q] = src[q];
    }
    __syncthreads();  // the tile is read before the next one zeroes it
  }
}

// Whether a case runs the NDHWC form: float, NDHWC with C a multiple of 4, the arrays aligned for
// packs of 4 (else the kernel above, a channel per output).
template <class T>
bool ordered_takes_channels(const BackwardArgs<T>& a, const OrderedTile& ot) {
  if constexpr (sizeof(T) != 4) {
    return false;
  } else {
    constexpr int V = kOrderedPack;
    const Window& w = a.w;
    if (!ot.cl || w.C % V != 0 || ot.t[3] % V != 0) return false;
    const auto at = [](const void* ptr, std::size_t bytes) {
      return reinterpret_cast<std::uintptr_t>(ptr) % bytes == 0;
    };
    const bool idx = w.indices == IndexFormat::int64 ? at(a.index, 16)
                     : w.compact8()                  ? at(a.offset8, V)
                                                     : at(a.offset16, 2 * V);
    return idx && at(a.dy, V * sizeof(T)) && at(a.dx, V * sizeof(T));
  }
}

// Along an axis, over the tiles of T cells: the most covering outputs of one tile, and their sum.
struct AxisTiles {
  int most = 0;
  std::int64_t sum = 0, tiles = 0;
};
inline AxisTiles axis_tiles(int in, int T, int k, int s, int p, int out) {
  AxisTiles at;
  const FastDiv by_s(s);
  for (int x0 = 0; x0 < in; x0 += T) {
    const int n = std::min(T, in - x0), lo = first_covering(x0, k, s, p, by_s);
    const int hi = std::min(out - 1, (x0 + n - 1 + p) / s);
    const int cnt = std::max(0, hi - lo + 1);
    at.most = std::max(at.most, cnt);
    at.sum += cnt;
    ++at.tiles;
  }
  return at;
}

// The rest of a tiling once its box (t) is chosen: counts, ranks and divisors. The CPU tests call it
// with small boxes of their own, so that small volumes have several tiles and halos between them.
inline void finish_ordered_tile(const Window& w, OrderedTile& ot) {
  const int in[3] = {w.D, w.H, w.W};
  ot.cl = w.layout == Layout::ndhwc && w.C > 1;
  if (!ot.cl) ot.t[3] = 1;
  if (ot.t[3] > w.C) ot.t[3] = static_cast<int>(w.C);
  for (int a = 0; a < 3; ++a) {
    if (ot.t[a] > in[a]) ot.t[a] = in[a];
    ot.m[a] = (w.k[a] + w.s[a] - 1) / w.s[a];
    ot.n[a] = (in[a] + ot.t[a] - 1) / ot.t[a];
  }
  ot.passes = ot.m[0] * ot.m[1] * ot.m[2];
  for (int a = 0; a < 3; ++a)
    for (int r = 0; r < kOrderedMaxKernel; ++r)
      ot.rank_of[a][r] = static_cast<unsigned char>(r < w.k[a] ? (w.k[a] - 1 - r) / w.s[a] : 0);
  ot.n[3] = ot.cl ? static_cast<int>((w.C + ot.t[3] - 1) / ot.t[3]) : 1;
  ot.cells = ot.t[0] * ot.t[1] * ot.t[2] * ot.t[3];
  ot.slices = ot.t[2] == w.W && (!ot.cl || ot.t[3] == w.C);
  ot.run = ot.slices ? ot.t[1] * ot.t[2] * ot.t[3] : !ot.cl ? ot.t[2] : ot.t[3] < w.C ? ot.t[3] : ot.t[2] * ot.t[3];
  ot.leads = ot.cl ? w.N : w.N * w.C;
  ot.tiles = ot.leads * ot.n[0] * ot.n[1] * ot.n[2] * ot.n[3];
  ot.by_W = FastDiv(w.W);
  ot.by_H = FastDiv(w.H);
  for (int a = 0; a < 3; ++a) ot.by_s[a] = FastDiv(w.s[a]);
  ot.by_TH = FastDiv(ot.t[1]);
  ot.by_TW = FastDiv(ot.t[2]);
}

struct OrderedPlan {
  std::string refused;  // "" when taken
  OrderedTile ot;
  double reads_per_cell = 0;  // covering outputs read per cell of dx, over every tile
};

// The tiling: among boxes of at most kOrderedMaxCells cells whose covering outputs fit the block
// (kOrderedMaxOutputs), with runs of at least 32 elements where the volume has them, the one with
// the fewest warp instructions by a count from the first measured form: about 10 per output read
// (its halo included), per run of dx 40 and 6 per 32 cells (cells past the volume's end included),
// 2 per 32 cells to zero, and per tile and warp 6 per pass and 40.
inline OrderedPlan make_ordered_plan(const Window& w) {
  OrderedPlan plan;
  if (w.dilated()) return plan.refused = "bwd_v9_ordered_tile takes dilation 1 only (v1 takes any)", plan;
  if (!plane_fits_32_bits(w)) return plan.refused = "bwd_v9_ordered_tile indexes a plane in 32 bits; this one is larger", plan;
  OrderedTile& ot = plan.ot;
  ot.cl = w.layout == Layout::ndhwc && w.C > 1;
  int passes = 1;
  for (int a = 0; a < 3; ++a) passes *= (w.k[a] + w.s[a] - 1) / w.s[a];
  if (w.k[0] > kOrderedMaxKernel || w.k[1] > kOrderedMaxKernel || w.k[2] > kOrderedMaxKernel)
    return plan.refused = "bwd_v9_ordered_tile takes windows of at most 64 cells per axis", plan;
  if (passes > kOrderedMaxPasses)
    return plan.refused = "bwd_v9_ordered_tile: more than 64 ranks (ceil(k / s) over the three axes)", plan;
  const int in[3] = {w.D, w.H, w.W}, out[3] = {w.oD, w.oH, w.oW};
  const int C = static_cast<int>(std::min<std::int64_t>(w.C, 1 << 20));
  std::vector<int> tcs = {1};
  if (ot.cl) {
    tcs = {};
    for (int tc : {C, 64, 32, 16, 8})
      if (tc <= C && std::find(tcs.begin(), tcs.end(), tc) == tcs.end()) tcs.push_back(tc);
  }
  std::vector<int> tws = {w.W};
  for (int tw : {128, 64, 32, 16, 8, 4})
    if (tw < w.W) tws.push_back(tw);
  const auto axis = [&](int a, int T) { return axis_tiles(in[a], T, w.k[a], w.s[a], w.p[a], out[a]); };
  const int maxd = std::min(w.D, 32), maxh = std::min(w.H, 64);
  std::vector<AxisTiles> ad(static_cast<std::size_t>(maxd) + 1), ah(static_cast<std::size_t>(maxh) + 1);
  for (int T = 1; T <= maxd; ++T) ad[static_cast<std::size_t>(T)] = axis(0, T);
  for (int T = 1; T <= maxh; ++T) ah[static_cast<std::size_t>(T)] = axis(1, T);
  const std::int64_t leads = ot.cl ? w.N : w.N * w.C;
  const double useful = static_cast<double>(w.in_numel());
  // A row of dx holds W elements in NCDHW, W * C in NDHWC.
  const int row_wanted = static_cast<int>(std::min<std::int64_t>(32, static_cast<std::int64_t>(w.W) * (ot.cl ? C : 1)));
  double best = 1e300, best_reads = 0;
  for (int tc : tcs)
    for (int tw : tws) {
      const int run = !ot.cl ? tw : tc < C ? tc : tw * tc;
      if (run < row_wanted && !(ot.cl && tc < C && tc >= 8)) continue;
      const AxisTiles aw = axis(2, tw);
      const std::int64_t ctiles = ot.cl ? (C + tc - 1) / tc : 1;
      for (int td = 1; td <= maxd; ++td)
        for (int th = 1; th <= maxh; ++th) {
          const AxisTiles& x = ad[static_cast<std::size_t>(td)];
          const AxisTiles& y = ah[static_cast<std::size_t>(th)];
          const std::int64_t cells = static_cast<std::int64_t>(td) * th * tw * tc;
          const std::int64_t most = static_cast<std::int64_t>(x.most) * y.most * aw.most * tc;
          if (cells > kOrderedMaxCells || most > kOrderedMaxOutputs) continue;
          const double tiles = static_cast<double>(leads) * x.tiles * y.tiles * aw.tiles * ctiles;
          const double reads = static_cast<double>(leads) * x.sum * y.sum * aw.sum * (ot.cl ? C : 1);
          const bool slices = tw == w.W && (!ot.cl || tc == C);
          const int run_cells = slices ? th * tw * tc : run;
          const double runs = static_cast<double>(cells / run_cells);
          const double cost = 10.0 * reads +
                              tiles * (runs * (40.0 + 6.0 * std::ceil(run_cells / 32.0)) + 2.0 * std::ceil(cells / 32.0) +
                                       (kOrderedBlock / 32) * (6.0 * passes + 40.0));
          if (cost < best * (1 - 1e-9)) {
            best = cost;
            best_reads = reads / useful;
            ot.t[0] = td, ot.t[1] = th, ot.t[2] = tw, ot.t[3] = tc;
          }
        }
    }
  if (best > 1e299) return plan.refused = "bwd_v9_ordered_tile: no tile whose covering outputs fit a block", plan;
  plan.reads_per_cell = best_reads;
  finish_ordered_tile(w, ot);
  if (ot.tiles > kMaxInt32) return plan.refused = "bwd_v9_ordered_tile numbers its tiles in 32 bits; this case has more", plan;
  return plan;
}

// The plan of the last window asked for, kept so that a launch does not search again (the search
// is host work between the timed events).
inline OrderedPlan ordered_plan(const Window& w) {
  static std::mutex lock;
  static Window last;
  static OrderedPlan kept;
  static bool have = false;
  const auto same = [](const Window& x, const Window& y) {
    bool eq = x.N == y.N && x.C == y.C && x.D == y.D && x.H == y.H && x.W == y.W && x.oD == y.oD && x.oH == y.oH &&
              x.oW == y.oW && x.layout == y.layout && x.indices == y.indices;
    for (int a = 0; a < 3; ++a) eq = eq && x.k[a] == y.k[a] && x.s[a] == y.s[a] && x.p[a] == y.p[a] && x.dil[a] == y.dil[a];
    return eq;
  };
  std::lock_guard<std::mutex> g(lock);
  if (!have || !same(last, w)) {
    kept = make_ordered_plan(w);
    last = w;
    have = true;
  }
  return kept;
}

template <class T>
std::string bwd_v9_refuses(const Window& w) {
  return ordered_plan(w).refused;
}

// One launch of either ordered kernel over a plan's tiles: at most 8 waves of the blocks the device
// holds at once with the largest tile (counted once per kernel), each block its tile's cells of
// dynamic shared memory. The caller checks the launch.
template <auto Kernel, class T>
void launch_ordered(cudaStream_t s, const BackwardArgs<T>& a, const OrderedTile& ot) {
  static const std::int64_t resident = [] {
    TUT_CUDA(cudaFuncSetAttribute(Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(kOrderedMaxCells * sizeof(T))));
    return resident_blocks(reinterpret_cast<const void*>(Kernel), kOrderedBlock, kOrderedMaxCells * sizeof(T));
  }();
  const unsigned grid = static_cast<unsigned>(std::max<std::int64_t>(1, std::min(ot.tiles, 8 * resident)));
  Kernel<<<grid, kOrderedBlock, static_cast<std::size_t>(ot.cells) * sizeof(T), s>>>(a, ot);
}

template <class T>
void bwd_v9_ordered_tile(cudaStream_t s, const BackwardArgs<T>& a) {
  check_backward(a, "bwd_v9_ordered_tile");
  const OrderedPlan plan = ordered_plan(a.w);
  if (!plan.refused.empty()) throw tut::Unsupported(plan.refused);
  if constexpr (sizeof(T) == 4) {
    if (ordered_takes_channels(a, plan.ot)) {
      launch_ordered<bwd_v9_ordered_channels_kernel<T>>(s, a, plan.ot);
      TUT_CHECK_LAUNCH("bwd_v9_ordered_channels_kernel");
      return;
    }
  }
  launch_ordered<bwd_v9_ordered_tile_kernel<T>>(s, a, plan.ot);
  TUT_CHECK_LAUNCH("bwd_v9_ordered_tile_kernel");
}

}  // namespace ch06
