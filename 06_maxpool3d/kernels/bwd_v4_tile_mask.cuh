// bwd v4_tile_mask: the deterministic backward where windows overlap. A block owns a tile of dx (a
// box of cells of one plane in NCDHW; of positions x up to 32 channels in NDHWC) and computes it
// whole, in three steps, with a bit mask per cell in shared memory:
//   1. mark: the block reads the index of every output whose window reaches into the tile (the
//      tile's own outputs and a halo around them); for each output that chose a cell of the tile,
//      it sets that cell's bit for the output's "slot" (which of the cell's covering outputs it is),
//      with a shared-memory atomicOr;
//   2. the cells whose mask is 0, which most are (no window chose them), get dx = 0; the others go
//      on a list;
//   3. gather: one thread per listed cell adds the dy its bits name, in v1's order (od, then oh,
//      then ow ascending), and writes dx.
// OR gives the same bits in any order, and every sum is one thread's, in a fixed order: dx has the
// same bits on every run, the same bits as v1's, and no element is written twice. No zeroing pass,
// no global atomics, no scratch memory.
//
// Slots. Along an axis, the outputs covering cell x are t - j for t = floor((x + p) / s) and j = 0 ..
// ceil(k / s) - 1; an output whose saved cell is x at window position jx is slot jx / s. When the
// product of ceil(k / s) over the axes is at most 32 (the stem pooling, kernel 3 stride 2: 8; kernel
// 3 stride 1: 27), a cell's 32-bit mask has one bit per covering output and the gather reads exactly
// the dy of the outputs that chose it. Above that (kernel 8 stride 1: 512) the mask has one bit per
// (D slot, H slot) pair, 64 bits, and the gather scans the ceil(kW / sW) outputs along W of each
// marked pair, comparing their index with the cell, as v1 does for all 512.
//
// What changed since v1 (the gather): v1's thread took every dx element and visited all of its
// covering outputs, one dependent load after another (380 instructions per input on the stem case).
// Here the index of each output is read a few times (once per tile that its window reaches: about
// 2x for kernel 3, 3x for kernel 8), and only the chosen cells, 5-12 % of them in the suite, do any
// gathering. What it costs against the zero-then-scatter backward (v0, PyTorch's): the index is read
// from L2 again for the halo; what it saves: dx is written once instead of zeroed and then
// read-modified-written by float atomics.
//
// Prediction: DRAM bytes near the floor (dy and the index once, dx once); instructions ~40 per
// candidate output in the mark step, ~15 per dx element in the other two. On the stem case that is
// ~25 M warp instructions for 141 MB: memory-bound, at most half of the scatter's 117 us. SASS: the
// only atomics are shared-memory ones (ATOMS), no RED/ATOMG (tests/test_sass.cpp).
//
// Measured (H100, results/): DRAM traffic at the floor, but 195 M warp instructions on the stem case,
// 8 times the prediction, and 32 % of the warps' time at barriers: 0.15 of copy, 0.36x PyTorch's
// atomic scatter (1.1x to 12.6x v1 on the overlapping suite cases). Where the instructions went: every
// thread decodes the block's tile number below with 64-bit / and % (calls to the division routine in
// SASS) at every tile. The next form, bwd_v6_staged_tile.cuh, finds its tiles by adding, reads each
// output's index once per column of tiles into shared memory, and clears the masks as it reads them.
#pragma once

#include "kernels/bwd.cuh"
#include "kernels/bwd_auto_rule.cuh"  // tile_mask_refuses

namespace ch06 {

inline constexpr int kTileBlock = 256;

struct TileArgs {
  int T[3] = {1, 1, 1};   // tile extent along D, H, W (cells or positions)
  int CT = 1;             // channels per tile (NDHWC; 1 in NCDHW), a power of two
  int m[3] = {1, 1, 1};   // the most outputs covering a tile along each axis
  int tiles[3] = {1, 1, 1}, tiles_c = 1;
  int c[3] = {1, 1, 1};   // covering outputs per axis, ceil(k / s)
  bool rows = false;      // 64-bit masks over (D slot, H slot); else 32-bit, a bit per covering output
  int words = 1;          // mask words per cell
  int cells = 1;          // T[0] * T[1] * T[2] * CT
  int log2_ct = 0;
  std::int64_t off[32] = {};  // a bit per output: the output index of bit b = the top output's - off[b]
  FastDiv by_tile[3], by_tiles_c;  // a block's tile number -> its place
  FastDiv by_T[3];                 // a tile cell -> its place
  FastDiv by_mw_ct, by_mh;         // a candidate -> its place
  FastDiv by_s[3], by_kw, by_kh, by_W, by_H, by_c1;
};

// The outputs along one axis whose windows reach into [x0, x0 + T): [lo, hi], clipped.
__device__ __forceinline__ void reaching(int x0, int T, int k, int s, int p, int out, const FastDiv& by_s, int& lo,
                                         int& hi) {
  const int first = x0 + p - (k - 1);  // an output o reaches x0 when o * s >= first
  lo = first <= 0 ? 0 : static_cast<int>(by_s.div(static_cast<std::uint32_t>(first + s - 1)));
  hi = min(out - 1, static_cast<int>(by_s.div(static_cast<std::uint32_t>(x0 + T - 1 + p))));
}

template <class T>
__global__ void __launch_bounds__(kTileBlock) bwd_v4_tile_mask_kernel(BackwardArgs<T> a,
                                                                     const __grid_constant__ TileArgs ta) {
  extern __shared__ unsigned mask[];  // ta.cells * ta.words, then the list of marked cells
  __shared__ int listed;
  unsigned short* list = reinterpret_cast<unsigned short*>(mask + ta.cells * ta.words);
  const Window& w = a.w;
  const bool cl = w.layout == Layout::ndhwc;
  const int tid = static_cast<int>(threadIdx.x);
  const std::int64_t planes = cl ? w.N : w.N * w.C;
  const std::int64_t ntiles = planes * ta.tiles_c * ta.tiles[0] * ta.tiles[1] * ta.tiles[2];
  for (std::int64_t tile = blockIdx.x; tile < ntiles; tile += gridDim.x) {
    // The tile's place: plane (n*C + c in NCDHW, n in NDHWC), channel tile, and its corner.
    std::int64_t r = tile;
    const int tw = static_cast<int>(r % ta.tiles[2]);
    r /= ta.tiles[2];
    const int th = static_cast<int>(r % ta.tiles[1]);
    r /= ta.tiles[1];
    const int td = static_cast<int>(r % ta.tiles[0]);
    r /= ta.tiles[0];
    const int tc = static_cast<int>(r % ta.tiles_c);
    const std::int64_t plane = r / ta.tiles_c;
    const int x0[3] = {td * ta.T[0], th * ta.T[1], tw * ta.T[2]};
    const int c0 = tc * ta.CT;
    for (int i = tid; i < ta.cells * ta.words; i += kTileBlock) mask[i] = 0u;
    if (tid == 0) listed = 0;
    int lo[3], hi[3];
    for (int ax = 0; ax < 3; ++ax)
      reaching(x0[ax], ta.T[ax], w.k[ax], w.s[ax], w.p[ax], ax == 0 ? w.oD : ax == 1 ? w.oH : w.oW, ta.by_s[ax], lo[ax],
               hi[ax]);
    __syncthreads();

    // 1. Mark. Candidates are numbered ((a * m[1] + b) * m[2] + cw) * CT + ch, the channel fastest
    // (NDHWC) or ow fastest (NCDHW): consecutive threads read consecutive indices.
    const int per_row = ta.m[2] * ta.CT, candidates = ta.m[0] * ta.m[1] * per_row;
    for (int q = tid; q < candidates; q += kTileBlock) {
      const int ab = static_cast<int>(ta.by_mw_ct.div(static_cast<std::uint32_t>(q))), x = q - ab * per_row;
      const int aa = static_cast<int>(ta.by_mh.div(static_cast<std::uint32_t>(ab))), bb = ab - aa * ta.m[1];
      const int cw = x >> ta.log2_ct, ch = x & (ta.CT - 1);
      const int od = lo[0] + aa, oh = lo[1] + bb, ow = lo[2] + cw, c = c0 + ch;
      if (od > hi[0] || oh > hi[1] || ow > hi[2] || (cl && c >= w.C)) continue;
      const std::int64_t spatial = (static_cast<std::int64_t>(od) * w.oH + oh) * w.oW + ow;
      const std::int64_t o = cl ? (plane * w.out_plane() + spatial) * w.C + c : plane * w.out_plane() + spatial;
      const int d0 = od * w.s[0] - w.p[0], h0 = oh * w.s[1] - w.p[1], w0 = ow * w.s[2] - w.p[2];
      int jd, jh, jw;
      if (w.indices == IndexFormat::int64) {
        const std::uint32_t f = static_cast<std::uint32_t>(a.index[o]), rr = ta.by_W.div(f), dd = ta.by_H.div(rr);
        jw = static_cast<int>(f - rr * static_cast<std::uint32_t>(w.W)) - w0;
        jh = static_cast<int>(rr - dd * static_cast<std::uint32_t>(w.H)) - h0;
        jd = static_cast<int>(dd) - d0;
      } else {
        const std::uint32_t cell = static_cast<std::uint32_t>(saved_cell(a, o)), rr = ta.by_kw.div(cell);
        jw = static_cast<int>(cell - rr * static_cast<std::uint32_t>(w.k[2]));
        jd = static_cast<int>(ta.by_kh.div(rr));
        jh = static_cast<int>(rr) - jd * w.k[1];
      }
      const int ld = d0 + jd - x0[0], lh = h0 + jh - x0[1], lw = w0 + jw - x0[2];  // in the tile?
      if (static_cast<unsigned>(ld) >= static_cast<unsigned>(ta.T[0]) ||
          static_cast<unsigned>(lh) >= static_cast<unsigned>(ta.T[1]) ||
          static_cast<unsigned>(lw) >= static_cast<unsigned>(ta.T[2]))
        continue;
      const int local = ((ld * ta.T[1] + lh) * ta.T[2] + lw) * ta.CT + ch;
      const int sd = static_cast<int>(ta.by_s[0].div(static_cast<std::uint32_t>(jd)));
      const int sh = static_cast<int>(ta.by_s[1].div(static_cast<std::uint32_t>(jh)));
      if (ta.rows) {
        const int row = sd * ta.c[1] + sh;  // < 64
        atomicOr(&mask[local * 2 + (row >> 5)], 1u << (row & 31));
      } else {
        const int sw = static_cast<int>(ta.by_s[2].div(static_cast<std::uint32_t>(jw)));
        atomicOr(&mask[local], 1u << ((sd * ta.c[1] + sh) * ta.c[2] + sw));
      }
    }
    __syncthreads();

    // 2. Zeros where no output chose the cell; a list of the others.
    for (int i = tid; i < ta.cells; i += kTileBlock) {
      const int ch = i & (ta.CT - 1), pos = i >> ta.log2_ct;
      const int pr = static_cast<int>(ta.by_T[2].div(static_cast<std::uint32_t>(pos))), lw = pos - pr * ta.T[2];
      const int ld = static_cast<int>(ta.by_T[1].div(static_cast<std::uint32_t>(pr))), lh = pr - ld * ta.T[1];
      const int d = x0[0] + ld, h = x0[1] + lh, x = x0[2] + lw, c = c0 + ch;
      if (d >= w.D || h >= w.H || x >= w.W || (cl && c >= w.C)) continue;
      const bool chosen = ta.rows ? (mask[i * 2] | mask[i * 2 + 1]) != 0u : mask[i] != 0u;
      if (chosen) {
        list[atomicAdd(&listed, 1)] = static_cast<unsigned short>(i);
      } else {
        const std::int64_t flat = (static_cast<std::int64_t>(d) * w.H + h) * w.W + x;
        a.dx[cl ? (plane * w.in_plane() + flat) * w.C + c : plane * w.in_plane() + flat] = T(0);
      }
    }
    __syncthreads();

    // 3. Gather, in v1's order.
    const int n_listed = listed;
    for (int j = tid; j < n_listed; j += kTileBlock) {
      const int i = list[j];
      const int ch = i & (ta.CT - 1), pos = i >> ta.log2_ct;
      const int pr = static_cast<int>(ta.by_T[2].div(static_cast<std::uint32_t>(pos))), lw = pos - pr * ta.T[2];
      const int ld = static_cast<int>(ta.by_T[1].div(static_cast<std::uint32_t>(pr))), lh = pr - ld * ta.T[1];
      const int d = x0[0] + ld, h = x0[1] + lh, x = x0[2] + lw, c = c0 + ch;
      // The top covering output along each axis, and its index (a linear function of od, oh, ow).
      const int t0 = static_cast<int>(ta.by_s[0].div(static_cast<std::uint32_t>(d + w.p[0])));
      const int t1 = static_cast<int>(ta.by_s[1].div(static_cast<std::uint32_t>(h + w.p[1])));
      const int t2 = static_cast<int>(ta.by_s[2].div(static_cast<std::uint32_t>(x + w.p[2])));
      const std::int64_t step = cl ? w.C : 1;  // between neighbouring ow
      const std::int64_t top =
          cl ? (plane * w.out_plane() + (static_cast<std::int64_t>(t0) * w.oH + t1) * w.oW + t2) * w.C + c
             : plane * w.out_plane() + (static_cast<std::int64_t>(t0) * w.oH + t1) * w.oW + t2;
      const std::int64_t flat = (static_cast<std::int64_t>(d) * w.H + h) * w.W + x;
      T acc = T(0);
      if (!ta.rows) {
        unsigned m = mask[i];
        while (m) {  // the highest bit first: od, then oh, then ow ascending
          const int b = 31 - __clz(m);
          m &= ~(1u << b);
          acc += a.dy[top - ta.off[b]];
        }
      } else {
        unsigned long long m = (static_cast<unsigned long long>(mask[i * 2 + 1]) << 32) | mask[i * 2];
        // Along W: the slots whose outputs exist and cover x.
        const int rw = x + w.p[2] - t2 * w.s[2];
        const int sw_lo = max(0, t2 - (w.oW - 1));
        const int sw_hi = w.k[2] - 1 - rw < 0 ? -1 : min(t2, static_cast<int>(ta.by_s[2].div(
                                                                 static_cast<std::uint32_t>(w.k[2] - 1 - rw))));
        while (m) {  // the highest row first: od, then oh ascending
          const int row = 63 - __clzll(m);
          m &= ~(1ull << row);
          const int sd = static_cast<int>(ta.by_c1.div(static_cast<std::uint32_t>(row))), sh = row - sd * ta.c[1];
          const int od = t0 - sd, oh = t1 - sh;
          const int cell_row = ((d + w.p[0] - od * w.s[0]) * w.k[1] + (h + w.p[1] - oh * w.s[1])) * w.k[2] + rw;
          const std::int64_t base = top - ((static_cast<std::int64_t>(sd) * w.oH + sh) * w.oW) * step;
          for (int sw = sw_hi; sw >= sw_lo; --sw) {  // ow ascending
            const std::int64_t o = base - sw * step;
            const bool mine = w.indices == IndexFormat::int64 ? a.index[o] == flat
                                                              : saved_cell(a, o) == cell_row + sw * w.s[2];
            if (mine) acc += a.dy[o];
          }
        }
      }
      a.dx[cl ? (plane * w.in_plane() + flat) * w.C + c : plane * w.in_plane() + flat] = acc;
    }
    __syncthreads();  // the mask and the list are the next tile's
  }
}

template <class T>
std::string bwd_v4_refuses(const Window& w) {
  return tile_mask_refuses(w);
}

inline int pow2_ceil(std::int64_t n) {
  int p = 1;
  while (p < n && p < (1 << 20)) p *= 2;
  return p;
}

// The tile of a case: in NCDHW (or one channel) up to 32 cells along W, 8 along H and the rest
// along D; in NDHWC up to 32 channels and a small box of positions. 1024 cells with one mask word,
// 4096 with two: at most 40 KiB of shared memory, under the 48 KiB a block gets without asking.
template <class T>
TileArgs tile_args(const Window& w) {
  TileArgs ta;
  for (int i = 0; i < 3; ++i) ta.c[i] = (w.k[i] + w.s[i] - 1) / w.s[i];
  ta.rows = ta.c[0] * ta.c[1] * ta.c[2] > 32;
  ta.words = ta.rows ? 2 : 1;
  const int target = ta.rows ? 4096 : 1024;
  const bool cl = w.layout == Layout::ndhwc && w.C > 1;
  ta.CT = cl ? std::min(32, pow2_ceil(w.C)) : 1;
  const int in[3] = {w.D, w.H, w.W};
  const int room = target / ta.CT;
  ta.T[2] = std::min(cl ? 4 : 32, pow2_ceil(in[2]));
  ta.T[1] = std::min({cl ? 4 : (ta.rows ? 16 : 8), pow2_ceil(in[1]), std::max(1, room / ta.T[2])});
  ta.T[0] = std::min(pow2_ceil(in[0]), std::max(1, room / (ta.T[2] * ta.T[1])));
  ta.cells = ta.T[0] * ta.T[1] * ta.T[2] * ta.CT;
  while ((1 << ta.log2_ct) < ta.CT) ++ta.log2_ct;
  for (int i = 0; i < 3; ++i) {
    ta.m[i] = (ta.T[i] + w.k[i] - 2) / w.s[i] + 2;
    ta.tiles[i] = (in[i] + ta.T[i] - 1) / ta.T[i];
    ta.by_T[i] = FastDiv(ta.T[i]);
    ta.by_s[i] = FastDiv(w.s[i]);
  }
  ta.tiles_c = cl ? static_cast<int>((w.C + ta.CT - 1) / ta.CT) : 1;
  ta.by_mw_ct = FastDiv(static_cast<std::int64_t>(ta.m[2]) * ta.CT);
  ta.by_mh = FastDiv(ta.m[1]);
  ta.by_kw = FastDiv(w.k[2]);
  ta.by_kh = FastDiv(w.k[1]);
  ta.by_W = FastDiv(w.W);
  ta.by_H = FastDiv(w.H);
  ta.by_c1 = FastDiv(ta.c[1]);
  if (!ta.rows) {
    const std::int64_t step = w.layout == Layout::ndhwc ? w.C : 1;
    for (int sd = 0; sd < ta.c[0]; ++sd)
      for (int sh = 0; sh < ta.c[1]; ++sh)
        for (int sw = 0; sw < ta.c[2]; ++sw)
          ta.off[(sd * ta.c[1] + sh) * ta.c[2] + sw] = ((static_cast<std::int64_t>(sd) * w.oH + sh) * w.oW + sw) * step;
  }
  return ta;
}

inline std::size_t tile_shared_bytes(const TileArgs& ta) {
  return static_cast<std::size_t>(ta.cells) * ta.words * 4 + static_cast<std::size_t>(ta.cells) * 2;
}

template <class T>
void bwd_v4_tile_mask(cudaStream_t s, const BackwardArgs<T>& a) {
  check_backward(a, "bwd_v4_tile_mask");
  const Window& w = a.w;
  if (const std::string why = bwd_v4_refuses<T>(w); !why.empty()) throw tut::Unsupported(why);
  const TileArgs ta = tile_args<T>(w);
  const std::size_t smem = tile_shared_bytes(ta);
  const std::int64_t planes = w.layout == Layout::ndhwc ? w.N : w.N * w.C;
  const std::int64_t ntiles = planes * ta.tiles_c * ta.tiles[0] * ta.tiles[1] * ta.tiles[2];
  const std::int64_t grid =
      std::min<std::int64_t>(ntiles, resident_blocks(TUT_KERNEL(bwd_v4_tile_mask_kernel<T>), kTileBlock, smem) * 4);
  bwd_v4_tile_mask_kernel<T><<<static_cast<unsigned>(grid), kTileBlock, smem, s>>>(a, ta);
  TUT_CHECK_LAUNCH("bwd_v4_tile_mask_kernel");
}

}  // namespace ch06
