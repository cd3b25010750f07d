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
// NCDHW or of one sample n in NDHWC, chosen on the host (ordered_plan below), and:
//   1. zeroes the tile in shared memory;
//   2. loads the outputs whose windows reach into the tile (its own and a halo), up to 8 per thread,
//      all loads in flight together; for each, decodes the saved cell, keeps it if it lies in the
//      tile (and, for an int64 index, in the output's window: an index from elsewhere is dropped,
//      as the gathers drop it) as its place in the tile and its rank;
//   3. makes P passes, a barrier before each, adding the dy of its outputs of that rank;
//   4. writes the tile to dx, every cell once: no zeroing pass over dx, no global atomics.
//
// What changed since v6 (the staged tile, 148 M warp instructions on the stem case against its
// predicted 27 M, DRAM 19 % busy): v6 staged the outputs, then had one thread per cell search the
// covering outputs for those that chose it, through masks of slots. Here nothing searches: each
// output goes straight to its cell, as in the scatter, and the order comes from P barriers instead.
//
// Prediction, stem case (8x64x16x56x56, kernel 3 stride 2 padding 1): the host picks tiles whose
// covering outputs are about 1.5-2 times the tile's own, so dy and the index are read about 1.5-2
// times (from L2 for the halo), dx written once; per output some 40 instructions (loads, a 32-bit
// decode of the index, the rank), per cell about 8 (zero, add, write): ~6 M warp instructions, a
// small fraction of v6's. Bound by memory: near the floor's bytes, so faster than the scatter (which
// writes dx twice). Kernel 3 stride 1: 27 passes, outputs as many as cells and a halo along D and H,
// still bound by memory. SASS: no RED or ATOM (tests/test_sass.cpp).
//
// Measured: see the lesson's backward section (results/).
#pragma once

#include "kernels/bwd.cuh"

#include <algorithm>
#include <mutex>

namespace ch06 {

inline constexpr int kOrderedBlock = 512;       // threads per block
inline constexpr int kOrderedPerThread = 8;     // outputs a thread holds (their loads in flight together)
inline constexpr int kOrderedMaxOutputs = kOrderedBlock * kOrderedPerThread;
inline constexpr int kOrderedMaxCells = 12288;  // 48 KiB of float
inline constexpr int kOrderedMaxPasses = 64;    // a rank fits 6 bits of the key

struct OrderedTile {
  bool cl = false;                         // NDHWC: TC channels per tile
  int t[4] = {1, 1, 1, 1};                 // TD, TH, TW, TC
  int n[4] = {1, 1, 1, 1};                 // tiles along D, H, W, C
  int m[3] = {1, 1, 1};                    // covering outputs per axis at most: ceil(k / s)
  int passes = 1;                          // m[0] * m[1] * m[2]
  int cells = 1;                           // TD * TH * TW * TC
  std::int64_t leads = 1, tiles = 1;       // planes (n, c) or samples n; every tile
  FastDiv by_W, by_H, by_s[3], by_row, by_TH, by_TC;
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
  for (int a = 3; a >= 0; --a) {
    j[a] = static_cast<int>(t % ot.n[a]);
    t /= ot.n[a];
  }
  b.lead = t;
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

// Output e of the tile's covering outputs (channel fastest in NDHWC, then ow, oh, od): its key,
// (place in the tile << 6) | rank, or -1 when its saved cell is not in the tile; and its dy.
template <class T>
TUT_HD inline int ordered_entry(const BackwardArgs<T>& a, const OrderedTile& ot, const TileBox& b, int e, T& g) {
  const Window& w = a.w;
  int c = 0;
  if (ot.cl) {
    c = e % b.nc;
    e /= b.nc;
  }
  const int ow = b.lo[2] + e % b.cnt[2];
  e /= b.cnt[2];
  const int oh = b.lo[1] + e % b.cnt[1], od = b.lo[0] + e / b.cnt[1];
  const std::int64_t o = ot.cl ? (((b.lead * w.oD + od) * w.oH + oh) * static_cast<std::int64_t>(w.oW) + ow) * w.C + b.c0 + c
                               : ((b.lead * w.oD + od) * w.oH + oh) * static_cast<std::int64_t>(w.oW) + ow;
  g = a.dy[o];
  int x[3];
  if (w.indices == IndexFormat::int64) {
    const std::int64_t f = a.index[o];
    if (f < 0 || f >= w.in_plane()) return -1;
    const std::uint32_t u = static_cast<std::uint32_t>(f), r = ot.by_W.div(u), q = ot.by_H.div(r);
    x[2] = static_cast<int>(u - r * static_cast<std::uint32_t>(w.W));
    x[1] = static_cast<int>(r - q * static_cast<std::uint32_t>(w.H));
    x[0] = static_cast<int>(q);
  } else {
    int jd, jh, jw;
    w.cell_of(saved_window_cell(a, o), jd, jh, jw);
    x[0] = od * w.s[0] - w.p[0] + jd;
    x[1] = oh * w.s[1] - w.p[1] + jh;
    x[2] = ow * w.s[2] - w.p[2] + jw;
  }
  const int os[3] = {od, oh, ow};
  int place = 0, rank = 0;
  for (int ax = 0; ax < 3; ++ax) {
    const int r = x[ax] - (os[ax] * w.s[ax] - w.p[ax]);  // the cell's place in the window
    const int l = x[ax] - b.x0[ax];                       // and in the tile
    if (r < 0 || r >= w.k[ax] || l < 0 || l >= b.nx[ax]) return -1;
    place = place * ot.t[ax] + l;
    rank = rank * ot.m[ax] + (os[ax] - first_covering(x[ax], w.k[ax], w.s[ax], w.p[ax], ot.by_s[ax]));
  }
  place = place * ot.t[3] + c;
  return (place << 6) | rank;
}

// Tile cell i (of ot.cells: rows of TW * TC, TH rows per slice) as an element of dx, or -1 when the
// tile is cut short there.
template <class T>
TUT_HD inline std::int64_t ordered_cell_element(const Window& w, const OrderedTile& ot, const TileBox& b, int i) {
  const std::uint32_t u = static_cast<std::uint32_t>(i), r = ot.by_row.div(u), ld = ot.by_TH.div(r);
  const int q = static_cast<int>(u - r * static_cast<std::uint32_t>(ot.t[2] * ot.t[3]));
  const int lh = static_cast<int>(r - ld * static_cast<std::uint32_t>(ot.t[1]));
  const int lw = static_cast<int>(ot.by_TC.div(static_cast<std::uint32_t>(q))), lc = q - lw * ot.t[3];
  if (static_cast<int>(ld) >= b.nx[0] || lh >= b.nx[1] || lw >= b.nx[2] || lc >= b.nc) return -1;
  const std::int64_t d = b.x0[0] + static_cast<int>(ld), h = b.x0[1] + lh, x = b.x0[2] + lw;
  if (ot.cl) return ((b.lead * w.D + d) * w.H + h) * static_cast<std::int64_t>(w.W) * w.C + x * w.C + b.c0 + lc;
  return ((b.lead * w.D + d) * w.H + h) * static_cast<std::int64_t>(w.W) + x;
}

template <class T>
__global__ void __launch_bounds__(kOrderedBlock) bwd_v9_ordered_tile_kernel(BackwardArgs<T> a, OrderedTile ot) {
  extern __shared__ unsigned char ordered_smem[];
  T* tile = reinterpret_cast<T*>(ordered_smem);
  for (std::int64_t t = blockIdx.x; t < ot.tiles; t += gridDim.x) {
    const TileBox b = tile_box(a.w, ot, t);
    for (int i = threadIdx.x; i < ot.cells; i += kOrderedBlock) tile[i] = T(0);
    const int outputs = tile_outputs(b);
    int key[kOrderedPerThread];
    T g[kOrderedPerThread];
#pragma unroll
    for (int j = 0; j < kOrderedPerThread; ++j) {
      const int e = threadIdx.x + j * kOrderedBlock;
      key[j] = e < outputs ? ordered_entry(a, ot, b, e, g[j]) : -1;
    }
    for (int p = 0; p < ot.passes; ++p) {
      __syncthreads();  // the zeros, then each rank's adds, before the next rank's
#pragma unroll
      for (int j = 0; j < kOrderedPerThread; ++j)
        if (key[j] >= 0 && (key[j] & 63) == p) tile[key[j] >> 6] += g[j];
    }
    __syncthreads();
    for (int i = threadIdx.x; i < ot.cells; i += kOrderedBlock) {
      const std::int64_t e = ordered_cell_element<T>(a.w, ot, b, i);
      if (e >= 0) a.dx[e] = tile[i];
    }
    __syncthreads();  // the tile is read before the next one zeroes it
  }
}

// The most covering outputs along an axis over every tile of T cells.
inline int most_covering(int in, int T, int k, int s, int p, int out) {
  int most = 0;
  const FastDiv by_s(s);
  for (int x0 = 0; x0 < in; x0 += T) {
    const int n = std::min(T, in - x0), lo = first_covering(x0, k, s, p, by_s);
    const int hi = std::min(out - 1, (x0 + n - 1 + p) / s);
    most = std::max(most, hi - lo + 1);
  }
  return most;
}

// The rest of a tiling once its box (t) is chosen: counts, ranks and divisors. The CPU tests call it
// with small boxes of their own, so that small volumes have several tiles and halos between them.
inline void finish_ordered_tile(const Window& w, OrderedTile& ot) {
  const int in[3] = {w.D, w.H, w.W};
  ot.cl = w.layout == Layout::ndhwc && w.C > 1;
  if (!ot.cl) ot.t[3] = 1;
  for (int a = 0; a < 3; ++a) {
    ot.m[a] = (w.k[a] + w.s[a] - 1) / w.s[a];
    ot.n[a] = (in[a] + ot.t[a] - 1) / ot.t[a];
  }
  ot.passes = ot.m[0] * ot.m[1] * ot.m[2];
  ot.n[3] = ot.cl ? static_cast<int>((w.C + ot.t[3] - 1) / ot.t[3]) : 1;
  ot.cells = ot.t[0] * ot.t[1] * ot.t[2] * ot.t[3];
  ot.leads = ot.cl ? w.N : w.N * w.C;
  ot.tiles = ot.leads * ot.n[0] * ot.n[1] * ot.n[2] * ot.n[3];
  ot.by_W = FastDiv(w.W);
  ot.by_H = FastDiv(w.H);
  for (int a = 0; a < 3; ++a) ot.by_s[a] = FastDiv(w.s[a]);
  ot.by_row = FastDiv(ot.t[2] * ot.t[3]);
  ot.by_TH = FastDiv(ot.t[1]);
  ot.by_TC = FastDiv(ot.t[3]);
}

struct OrderedPlan {
  std::string refused;  // "" when taken
  OrderedTile ot;
  double reads_per_cell = 0;  // covering outputs per tile cell, at most
};

// The tiling: among boxes of at most kOrderedMaxCells cells whose covering outputs fit the block
// (kOrderedMaxOutputs), rows of at least 32 elements where the volume has them, the one that reads
// the fewest outputs per cell (the smallest halo).
inline OrderedPlan make_ordered_plan(const Window& w) {
  OrderedPlan plan;
  if (w.dilated()) return plan.refused = "bwd_v9_ordered_tile takes dilation 1 only (v1 takes any)", plan;
  if (!plane_fits_32_bits(w)) return plan.refused = "bwd_v9_ordered_tile indexes a plane in 32 bits; this one is larger", plan;
  OrderedTile& ot = plan.ot;
  ot.cl = w.layout == Layout::ndhwc && w.C > 1;
  for (int a = 0; a < 3; ++a) ot.m[a] = (w.k[a] + w.s[a] - 1) / w.s[a];
  ot.passes = ot.m[0] * ot.m[1] * ot.m[2];
  if (ot.passes > kOrderedMaxPasses)
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
  for (int tw : {64, 32, 16, 8, 4})
    if (tw < w.W) tws.push_back(tw);
  const auto covering = [&](int a, int T) { return most_covering(in[a], T, w.k[a], w.s[a], w.p[a], out[a]); };
  std::vector<int> cd(17), ch(65);
  for (int T = 1; T <= std::min(w.D, 16); ++T) cd[T] = covering(0, T);
  for (int T = 1; T <= std::min(w.H, 64); ++T) ch[T] = covering(1, T);
  const int row_wanted = static_cast<int>(std::min<std::int64_t>(32, static_cast<std::int64_t>(w.W) * C));
  double best = 1e30;
  for (int tc : tcs)
    for (int tw : tws) {
      if (tw * tc < row_wanted) continue;
      const int cw = covering(2, tw);
      for (int td = 1; td <= std::min(w.D, 16); ++td)
        for (int th = 1; th <= std::min(w.H, 64); ++th) {
          const std::int64_t cells = static_cast<std::int64_t>(td) * th * tw * tc;
          const std::int64_t outs = static_cast<std::int64_t>(cd[td]) * ch[th] * cw * tc;
          if (cells > kOrderedMaxCells || outs > kOrderedMaxOutputs) continue;
          const double reads = static_cast<double>(outs) / static_cast<double>(cells);
          if (reads < best - 1e-9) {
            best = reads;
            ot.t[0] = td, ot.t[1] = th, ot.t[2] = tw, ot.t[3] = tc;
          }
        }
    }
  if (best > 1e29) return plan.refused = "bwd_v9_ordered_tile: no tile whose covering outputs fit a block", plan;
  plan.reads_per_cell = best;
  finish_ordered_tile(w, ot);
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

template <class T>
void bwd_v9_ordered_tile(cudaStream_t s, const BackwardArgs<T>& a) {
  check_backward(a, "bwd_v9_ordered_tile");
  const OrderedPlan plan = ordered_plan(a.w);
  if (!plan.refused.empty()) throw tut::Unsupported(plan.refused);
  static const std::int64_t resident = [] {  // blocks the device holds at once
    int dev = 0, sms = 0, per_sm = 0;
    TUT_CUDA(cudaGetDevice(&dev));
    TUT_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    TUT_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, bwd_v9_ordered_tile_kernel<T>, kOrderedBlock,
                                                           kOrderedMaxCells * sizeof(T)));
    return static_cast<std::int64_t>(sms) * std::max(1, per_sm);
  }();
  const unsigned grid = static_cast<unsigned>(std::max<std::int64_t>(1, std::min(plan.ot.tiles, 8 * resident)));
  bwd_v9_ordered_tile_kernel<T><<<grid, kOrderedBlock, static_cast<std::size_t>(plan.ot.cells) * sizeof(T), s>>>(a, plan.ot);
  TUT_CHECK_LAUNCH("bwd_v9_ordered_tile_kernel");
}

}  // namespace ch06
