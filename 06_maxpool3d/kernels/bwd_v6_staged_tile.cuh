// bwd v6_staged_tile: the deterministic backward where windows overlap, reading dy and the index
// into shared memory once per block, and gathering there.
//
// A block owns a column of tiles of dx: tiles of T0 x T1 x T2 cells of one plane in NCDHW (of
// positions x CT channels in NDHWC; powers of two, chosen on the host, below), L of them one after
// another along D. It walks down the column, one tile per step, in two steps between barriers:
//   1. stage: the outputs whose windows reach into this tile and were not staged for the one before
//      (all of them at the first tile: the tile's own and a halo of (k - 1) / s along each axis),
//      four per thread with their loads in flight together. For an output whose saved cell lies in
//      this tile or the next, the block keeps the cell's number (16 bits) and dy in a ring of
//      output slices in shared memory, and marks the cell: one bit of a 32- or 64-bit mask per
//      (D slot, H slot), the slot along an axis being which of the cell's covering outputs it is,
//      floor((x + p) / s) - o. Marking is a shared-memory atomicOr, and OR gives the same bits in
//      any order. There are two masks, this tile's and the next's: a window reaches at most one
//      tile further down when T0 >= k - 1.
//   2. gather: one thread per cell reads its mask and clears it. No bit: dx = 0, as for most cells.
//      Else, for each marked (D, H) slot from the highest bit down (od, then oh ascending), it scans
//      the outputs along W that cover the cell (ow ascending) and adds the dy of those whose staged
//      cell is this one: v1's order, so dx has v1's bits, on every run.
// Every dx element is written once, by one thread; no zeroing pass, no global atomics, no scratch.
//
// What changed since v4 (the tile mask; Nsight Compute counted 195 M warp instructions on the stem
// case, 8 times its prediction): v4 read the index again from global memory in its gather, divided
// each block's tile number in 64 bits at every tile, and listed the marked cells behind one more
// barrier; its tiles re-read the whole halo. Here a block walks its column, so the halo along D is
// read once per column, not once per tile; it finds its next column by adding; cells are numbered
// by shifts; and the gather writes the zeros and clears the masks. What it costs against the
// scatter (PyTorch's): the halo along H and W is read again, from L2, by the neighbouring columns;
// what it saves: dx is written once, not zeroed and then read-modified-written by atomics.
//
// Prediction: some 50 instructions per staged output and 25 per cell. On the stem case (kernel 3,
// stride 2, about 1.4 staged outputs per output) that is ~27 M warp instructions against v4's 195 M,
// and DRAM bytes near the floor: bound by memory, faster than the scatter. On kernel 8 stride 1
// (2.5 staged outputs per output) the staging is most of the work. SASS: ATOMS.OR for the marks, no
// RED or ATOMG, no division routine (tests/test_sass.cpp).
//
// Measured (H100, results/): on the stem case 148 M warp instructions (v4: 195 M) in 205 us (v4:
// 321 us), DRAM 19 % busy: still bound by instructions, at 5.5 times the prediction, and at 0.56x
// PyTorch's atomic backward; kernel 3 stride 1 0.78x, kernel 8 stride 1 0.40x. The step-2 list is
// there because nearly every warp holds a marked cell: a first form that summed in step 2 made
// nearly every warp run the whole gather.
// Where the 148 M go (Nsight Compute's executed instructions per SASS line, results/<gpu>.v6_source.txt):
// 88 M (59 %) in step 2's loop over cells, 96 instructions per pass of a warp where the prediction
// had 25 per cell: 40 to compute one zero store's 64-bit address from the tile's coordinates, 42 to
// read the masks, vote and take a list slot. Staging and the gather are the other 41 %. The cost is
// per cell, and a cell here costs more than a whole output in the scatter (v0: 15 M for 3.2 M
// outputs). bwd_v9 writes a tile's cells from shared memory, a run of contiguous dx per warp.
#pragma once

#include "kernels/bwd.cuh"

#include <algorithm>
#include <cmath>

namespace ch06 {

inline constexpr int kStagedBlock = 256;  // threads per block
inline constexpr int kStagedBatch = 4;    // outputs per thread whose loads are in flight together
inline constexpr unsigned kNoCell = 0xFFFFu;
inline constexpr int kStagedMaxCells = 4096;
inline constexpr std::size_t kStagedMaxSmem = 100 * 1024;
inline constexpr std::int64_t kStagedColumnsWanted = 512;  // enough columns to fill a GPU of ~128 SMs

// A case's tiling, computed once on the host (staged_tile below).
struct StagedTile {
  bool cl = false;          // NDHWC with C > 1: CT channels per tile; else one plane (n, c) per column
  int T[3] = {1, 1, 1};     // tile extent along D, H, W (cells or positions), powers of two
  int lT[3] = {0, 0, 0};    // their log2
  int CT = 1, lCT = 0;      // channels per tile, a power of two (1 unless cl), and its log2
  int L = 1;                // tiles per column
  int m[3] = {1, 1, 1};     // outputs reaching one tile along each axis: (T + k - 2) / s + 1
  int R = 1, lR = 0;        // output slices (along D) in the ring: a power of two >= m[0]
  int c[3] = {1, 1, 1};     // outputs covering a cell along each axis, at most: ceil(k / s)
  int words = 1;            // mask words per cell: 1 when c0 * c1 <= 32, else 2
  int cells = 1;            // T0 * T1 * T2 * CT
  int slice = 1;            // staged outputs per output slice: m1 * m2 * CT
  int tiles[3] = {1, 1, 1}, columns_d = 1, tiles_c = 1;  // columns_d: columns along D, ceil(tiles0 / L)
  std::uint32_t per_plane = 1;       // columns per plane (n in NDHWC)
  std::int64_t planes = 1;           // N * C, or N in NDHWC
  std::int64_t volume = 1;           // D * H * W: the int64 index's range
  std::int64_t in_stride = 1, out_stride = 1;  // elements between planes (n in NDHWC) of x and y
  std::int64_t cstride = 1;          // elements between neighbouring positions: C in NDHWC, else 1
  int channels = 1;                  // channels inside a plane: C in NDHWC, else 1
  std::int64_t step_planes = 0;      // a block's next column: gridDim.x = step_planes * per_plane + step_rest
  std::uint32_t step_rest = 0;
  FastDiv by_per_plane, by_tiles1, by_tiles2, by_columns_d;
  FastDiv by_slice_row, by_m1;       // a staged output's place: (slice, oh, ow * CT + channel)
  FastDiv by_s[3], by_W, by_H, by_kw, by_kh, by_c1;

  std::size_t shared_bytes() const {  // masks, the ring (dy and cell numbers), the list
    return static_cast<std::size_t>(2 * cells) * words * 4 + static_cast<std::size_t>(R) * slice * (4 + 2) +
           static_cast<std::size_t>(cells) * 2;
  }
};

// Device atomics, or plain code when the CPU tests run the same functions on the host.
TUT_HD inline void mark_bit(unsigned* word, unsigned bit) {
#if defined(__CUDA_ARCH__)
  atomicOr(word, bit);
#else
  *word |= bit;
#endif
}
TUT_HD inline int highest_bit(unsigned long long m) {
#if defined(__CUDA_ARCH__)
  return 63 - __clzll(static_cast<long long>(m));
#else
  return 63 - __builtin_clzll(m);
#endif
}

// The first and last output along an axis whose windows reach into [x0, x0 + T), clipped.
TUT_HD inline void reaching_outputs(int x0, int T, int k, int s, int p, int out, const FastDiv& by_s, int& lo,
                                    int& hi) {
  const int first = x0 + p - (k - 1);  // output o reaches x0 when o*s - p + k - 1 >= x0
  lo = first <= 0 ? 0 : static_cast<int>(by_s.div(static_cast<std::uint32_t>(first + s - 1)));
  const int last = static_cast<int>(by_s.div(static_cast<std::uint32_t>(x0 + T - 1 + p)));
  hi = last < out - 1 ? last : out - 1;
}

// One column: its plane's first input and output elements, its first channel, its place along H
// and W (and the outputs reaching it there), and its tiles along D, [j0, j1).
struct Column {
  std::int64_t in_base = 0, out_base = 0;
  int c0 = 0, x0h = 0, x0w = 0;
  int lo1 = 0, hi1 = 0, lo2 = 0, hi2 = 0;
  int j0 = 0, j1 = 0;
};

TUT_HD inline Column column_at(const Window& w, const StagedTile& st, std::int64_t plane, std::uint32_t within) {
  Column col;
  col.in_base = plane * st.in_stride;
  col.out_base = plane * st.out_stride;
  std::uint32_t q = st.by_tiles2.div(within);
  col.x0w = static_cast<int>(within - q * static_cast<std::uint32_t>(st.tiles[2])) << st.lT[2];
  std::uint32_t r = q;
  q = st.by_tiles1.div(r);
  col.x0h = static_cast<int>(r - q * static_cast<std::uint32_t>(st.tiles[1])) << st.lT[1];
  r = q;
  q = st.by_columns_d.div(r);
  col.j0 = static_cast<int>(r - q * static_cast<std::uint32_t>(st.columns_d)) * st.L;
  col.j1 = col.j0 + st.L < st.tiles[0] ? col.j0 + st.L : st.tiles[0];
  col.c0 = static_cast<int>(q) << st.lCT;
  reaching_outputs(col.x0h, st.T[1], w.k[1], w.s[1], w.p[1], w.oH, st.by_s[1], col.lo1, col.hi1);
  reaching_outputs(col.x0w, st.T[2], w.k[2], w.s[2], w.p[2], w.oW, st.by_s[2], col.lo2, col.hi2);
  return col;
}

// One step of the walk: tile j, the output slices reaching it [lo0, hi0], and the first one not
// staged before, first_new (past hi0 when every one was).
struct Step {
  int j = 0, x0d = 0, lo0 = 0, hi0 = 0, first_new = 0;
  TUT_HD int fresh() const { return hi0 >= first_new ? hi0 - first_new + 1 : 0; }  // output slices to stage
};

TUT_HD inline Step step_at(const Window& w, const StagedTile& st, const Column& col, int j, int last_hi0) {
  Step sp;
  sp.j = j;
  sp.x0d = j << st.lT[0];
  reaching_outputs(sp.x0d, st.T[0], w.k[0], w.s[0], w.p[0], w.oD, st.by_s[0], sp.lo0, sp.hi0);
  sp.first_new = j == col.j0 ? sp.lo0 : (last_hi0 + 1 > sp.lo0 ? last_hi0 + 1 : sp.lo0);
  return sp;
}

// The q-th output staged at this step: its place, its slot in the ring, and its element number, or
// -1 where it is past the output along H or W (or past C).
struct Staged {
  std::int64_t o = -1;
  int od = 0, oh = 0, ow = 0, ch = 0, slot = 0;
};

TUT_HD inline Staged staged_output(const Window& w, const StagedTile& st, const Column& col, const Step& sp, int q) {
  Staged s;
  std::uint32_t r = static_cast<std::uint32_t>(q), n = st.by_slice_row.div(r);
  const int in_row = static_cast<int>(r - n * static_cast<std::uint32_t>(st.m[2] << st.lCT));  // ow * CT + ch
  r = n;
  n = st.by_m1.div(r);
  const int b = static_cast<int>(r - n * static_cast<std::uint32_t>(st.m[1]));
  s.od = sp.first_new + static_cast<int>(n);
  s.oh = col.lo1 + b;
  s.ow = col.lo2 + (in_row >> st.lCT);
  s.ch = in_row & (st.CT - 1);
  s.slot = ((((s.od & (st.R - 1)) * st.m[1] + b) * st.m[2]) << st.lCT) + in_row;
  const int c = col.c0 + s.ch;
  if (s.oh > col.hi1 || s.ow > col.hi2 || c >= st.channels) return s;
  const int spatial = (s.od * w.oH + s.oh) * w.oW + s.ow;  // within a plane: 32 bits (plane_fits_32_bits)
  s.o = col.out_base + static_cast<std::int64_t>(spatial) * st.cstride + c;
  return s;
}

// What the ring keeps of an output whose saved index is `saved` (int64: the flat position; compact:
// the window cell): the number of its cell among this tile's and the next's (within the column), or
// kNoCell; and the mask bit it sets there, (D slot) * c1 + (H slot).
TUT_HD inline unsigned stage_cell(const Window& w, const StagedTile& st, const Column& col, const Step& sp,
                                  const Staged& s, std::int64_t saved, int& row) {
  const int d0 = s.od * w.s[0] - w.p[0], h0 = s.oh * w.s[1] - w.p[1], w0 = s.ow * w.s[2] - w.p[2];
  int td, th, tw;
  if (w.indices == IndexFormat::int64) {
    // The flat position of a cell of the output's own window (a forward writes nothing else).
    if (saved < 0 || saved >= st.volume) return kNoCell;
    const std::uint32_t f = static_cast<std::uint32_t>(saved), r = st.by_W.div(f), q = st.by_H.div(r);
    tw = static_cast<int>(f - r * static_cast<std::uint32_t>(w.W));
    th = static_cast<int>(r - q * static_cast<std::uint32_t>(w.H));
    td = static_cast<int>(q);
    if ((static_cast<unsigned>(td - d0) >= static_cast<unsigned>(w.k[0])) |
        (static_cast<unsigned>(th - h0) >= static_cast<unsigned>(w.k[1])) |
        (static_cast<unsigned>(tw - w0) >= static_cast<unsigned>(w.k[2])))
      return kNoCell;
  } else {
    if (saved < 0 || saved >= w.cells()) return kNoCell;
    const std::uint32_t cell = static_cast<std::uint32_t>(saved), r = st.by_kw.div(cell), q = st.by_kh.div(r);
    tw = w0 + static_cast<int>(cell - r * static_cast<std::uint32_t>(w.k[2]));
    th = h0 + static_cast<int>(r - q * static_cast<std::uint32_t>(w.k[1]));
    td = d0 + static_cast<int>(q);
    if ((td < 0) | (th < 0) | (tw < 0) | (td >= w.D)) return kNoCell;  // padding
  }
  const int tile = td >> st.lT[0], lh = th - col.x0h, lw = tw - col.x0w;
  const int last = sp.j + 1 < col.j1 ? sp.j + 1 : sp.j;  // this tile, or the next within the column
  if ((tile < sp.j) | (tile > last) | (static_cast<unsigned>(lh) >= static_cast<unsigned>(st.T[1])) |
      (static_cast<unsigned>(lw) >= static_cast<unsigned>(st.T[2])) | (th >= w.H) | (tw >= w.W))
    return kNoCell;
  const int sd = static_cast<int>(st.by_s[0].div(static_cast<std::uint32_t>(td + w.p[0]))) - s.od;
  const int sh = static_cast<int>(st.by_s[1].div(static_cast<std::uint32_t>(th + w.p[1]))) - s.oh;
  row = sd * st.c[1] + sh;
  const int local = (((((td & (st.T[0] - 1)) << st.lT[1]) + lh) << st.lT[2]) + lw) << st.lCT;
  return static_cast<unsigned>((tile & 1) * st.cells + local + s.ch);
}

// Step 1 for thread `tid` of the block: its outputs of this step, kStagedBatch at a time with their
// loads in flight together, into the ring, with their marks.
template <class T>
TUT_HD inline void stage_thread(const BackwardArgs<T>& a, const StagedTile& st, const Column& col, const Step& sp,
                                int tid, unsigned* mask, unsigned short* cell_of, T* dy_of) {
  const Window& w = a.w;
  const int fresh = sp.fresh() * st.slice;
  for (int q0 = tid; q0 < fresh; q0 += kStagedBatch * kStagedBlock) {
    Staged s[kStagedBatch];
    std::int64_t saved[kStagedBatch];
    T g[kStagedBatch];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int u = 0; u < kStagedBatch; ++u) {
      const int q = q0 + u * kStagedBlock;
      if (q < fresh) s[u] = staged_output(w, st, col, sp, q);
      saved[u] = -1;
      g[u] = T(0);
      if (s[u].o >= 0) {
        saved[u] = w.indices == IndexFormat::int64 ? a.index[s[u].o] : saved_window_cell(a, s[u].o);
        g[u] = a.dy[s[u].o];
      }
    }
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int u = 0; u < kStagedBatch; ++u) {
      if (q0 + u * kStagedBlock >= fresh) break;
      int row = 0;
      const unsigned cell = s[u].o >= 0 ? stage_cell(w, st, col, sp, s[u], saved[u], row) : kNoCell;
      cell_of[s[u].slot] = static_cast<unsigned short>(cell);
      if (cell != kNoCell) {
        dy_of[s[u].slot] = g[u];
        mark_bit(&mask[cell * st.words + (row >> 5)], 1u << (row & 31));
      }
    }
  }
}

// Appends a marked cell to the block's list: on the device one shared-memory atomic per warp (the
// lanes that have one agree on their places with a ballot); on the host, in turn.
TUT_HD inline void list_cell(unsigned short* list, unsigned* listed, bool marked, unsigned cell) {
#if defined(__CUDA_ARCH__)
  const unsigned lanes = __activemask(), hits = __ballot_sync(lanes, marked);
  if (hits == 0) return;
  const int lane = static_cast<int>(threadIdx.x & 31), leader = __ffs(hits) - 1;
  unsigned first = 0;
  if (lane == leader) first = atomicAdd(listed, static_cast<unsigned>(__popc(hits)));
  first = __shfl_sync(lanes, first, leader);
  if (marked) list[first + __popc(hits & ((1u << lane) - 1u))] = static_cast<unsigned short>(cell);
#else
  if (marked) list[(*listed)++] = static_cast<unsigned short>(cell);
#endif
}

// Step 2 for thread `tid`: one column of cells of each row of the tile (rows of T2 * CT cells, so a
// thread keeps its W position and channel and walks down the rows). A cell with no mark gets
// dx = 0 here; a marked one goes on the list, for step 3. (Summing here would make every warp with
// one marked lane, nearly all of them, run the whole gather.)
template <class T>
TUT_HD inline void zero_or_list_thread(const BackwardArgs<T>& a, const StagedTile& st, const Column& col,
                                       const Step& sp, int tid, const unsigned* mask, unsigned short* list,
                                       unsigned* listed) {
  const Window& w = a.w;
  const int lrow = st.lT[2] + st.lCT, r = tid & ((1 << lrow) - 1);
  const int x = col.x0w + (r >> st.lCT), c = col.c0 + (r & (st.CT - 1));
  if (x >= w.W || c >= st.channels) return;
  T* dx_xc = a.dx + col.in_base + static_cast<std::int64_t>(x) * st.cstride + c;
  const int rows = st.T[0] << st.lT[1], half = (sp.j & 1) * st.cells;
  for (int rid = tid >> lrow; rid < rows; rid += kStagedBlock >> lrow) {
    const int d = sp.x0d + (rid >> st.lT[1]), h = col.x0h + (rid & (st.T[1] - 1));
    if ((d >= w.D) | (h >= w.H)) continue;
    const int i = (rid << lrow) + r;
    const unsigned* my = mask + (half + i) * st.words;
    const bool marked = (my[0] | (st.words == 2 ? my[1] : 0u)) != 0u;
    list_cell(list, listed, marked, static_cast<unsigned>(i));
    if (!marked) dx_xc[static_cast<std::int64_t>(d * w.H + h) * w.W * st.cstride] = T(0);
  }
}

// Step 3, for listed cell i of this step's tile: dx from its mask and the ring, in v1's order; its
// mask is cleared.
template <class T>
TUT_HD inline void gather_listed(const BackwardArgs<T>& a, const StagedTile& st, const Column& col, const Step& sp,
                                 int i, unsigned* mask, const unsigned short* cell_of, const T* dy_of) {
  const Window& w = a.w;
  const int ch = i & (st.CT - 1), pos = i >> st.lCT;
  const int lw = pos & (st.T[2] - 1), lh = (pos >> st.lT[2]) & (st.T[1] - 1), ld = pos >> (st.lT[2] + st.lT[1]);
  const int d = sp.x0d + ld, h = col.x0h + lh, x = col.x0w + lw;
  const unsigned id = static_cast<unsigned>((sp.j & 1) * st.cells + i);
  unsigned* my = mask + id * st.words;
  unsigned long long m = my[0];
  my[0] = 0u;
  if (st.words == 2) {
    m |= static_cast<unsigned long long>(my[1]) << 32;
    my[1] = 0u;
  }
  // The last output covering the cell along D and H; along W, the first and the last.
  const int t0 = static_cast<int>(st.by_s[0].div(static_cast<std::uint32_t>(d + w.p[0])));
  const int t1 = static_cast<int>(st.by_s[1].div(static_cast<std::uint32_t>(h + w.p[1])));
  int ow_first, ow_last;
  reaching_outputs(x, 1, w.k[2], w.s[2], w.p[2], w.oW, st.by_s[2], ow_first, ow_last);
  T acc = T(0);
  while (m) {  // the highest bit first: od, then oh ascending
    const int row = highest_bit(m);
    m &= ~(1ull << row);
    const int sd = static_cast<int>(st.by_c1.div(static_cast<std::uint32_t>(row))), sh = row - sd * st.c[1];
    const int base =
        (((((t0 - sd) & (st.R - 1)) * st.m[1] + (t1 - sh - col.lo1)) * st.m[2] - col.lo2) << st.lCT) + ch;
    for (int ow = ow_first; ow <= ow_last; ++ow) {  // ow ascending
      const int q = base + (ow << st.lCT);
      if (cell_of[q] == id) acc += dy_of[q];
    }
  }
  const std::int64_t flat = static_cast<std::int64_t>(d * w.H + h) * w.W + x;
  a.dx[col.in_base + flat * st.cstride + col.c0 + ch] = acc;
}

template <class T>
__global__ void __launch_bounds__(kStagedBlock) bwd_v6_staged_tile_kernel(BackwardArgs<T> a,
                                                                         const __grid_constant__ StagedTile st) {
  // Two tiles' masks (2 * cells * words), the ring: dy (R * slice) and cell numbers (16 bits), then
  // the list of marked cells (16 bits each).
  extern __shared__ unsigned staged[];
  __shared__ unsigned listed;
  unsigned* mask = staged;
  T* dy_of = reinterpret_cast<T*>(mask + 2 * st.cells * st.words);
  unsigned short* cell_of = reinterpret_cast<unsigned short*>(dy_of + st.R * st.slice);
  unsigned short* list = cell_of + st.R * st.slice;
  const int tid = static_cast<int>(threadIdx.x);
  // The masks start clear, and every walk leaves them clear: it marks only its own tiles, and each
  // tile's gather clears its marks.
  for (int i = tid; i < 2 * st.cells * st.words; i += kStagedBlock) mask[i] = 0u;
  std::int64_t plane = st.by_per_plane.div(blockIdx.x);
  std::uint32_t within = blockIdx.x - static_cast<std::uint32_t>(plane) * st.per_plane;
  while (plane < st.planes) {
    const Column col = column_at(a.w, st, plane, within);
    int last_hi0 = -1;
    for (int j = col.j0; j < col.j1; ++j) {
      const Step sp = step_at(a.w, st, col, j, last_hi0);
      last_hi0 = sp.hi0;
      __syncthreads();  // the last step's gather is done with the ring, its mask and the list
      if (tid == 0) listed = 0;
      stage_thread(a, st, col, sp, tid, mask, cell_of, dy_of);
      __syncthreads();
      zero_or_list_thread(a, st, col, sp, tid, mask, list, &listed);
      __syncthreads();
      const int n = static_cast<int>(listed);
      for (int k = tid; k < n; k += kStagedBlock) gather_listed(a, st, col, sp, list[k], mask, cell_of, dy_of);
    }
    within += st.step_rest;
    plane += st.step_planes;
    if (within >= st.per_plane) {
      within -= st.per_plane;
      ++plane;
    }
  }
}

inline bool staged_tiling(const Window& w, int t0, int t1, int t2, int ct, int len, StagedTile& out);

// The tiling of a case: over tile extents (powers of two), tiles per column and, in NDHWC, channels
// per tile, the one that stages the fewest outputs and cells in all (a staged output costs a read
// from L2 and some 50 instructions, a cell about a quarter of that), within kStagedMaxCells cells
// and kStagedMaxSmem bytes of shared memory, counting a tiling of fewer than kStagedColumnsWanted
// columns as if the missing ones cost as much (an idle SM). Rows of at least 16 cells along W in
// NCDHW, 8 channels in NDHWC, so that the stores fill whole 32-byte sectors; a column of more than
// one tile needs T0 >= k0 - 1 (a window reaches at most one tile down). Returns false when no
// tiling fits. (The CPU tests ask for fewer columns, to walk long columns on small cases.)
inline bool staged_tile(const Window& w, StagedTile& out, std::int64_t columns_wanted = kStagedColumnsWanted) {
  StagedTile st;
  st.cl = w.layout == Layout::ndhwc && w.C > 1;
  for (int i = 0; i < 3; ++i) st.c[i] = (w.k[i] + w.s[i] - 1) / w.s[i];
  if (st.c[0] * st.c[1] > 64 || w.C > kMaxInt32) return false;
  st.words = st.c[0] * st.c[1] > 32 ? 2 : 1;
  const auto pow2_at_least = [](std::int64_t n) {
    int p = 1;
    while (p < n && p < (1 << 30)) p *= 2;
    return p;
  };
  const int in[3] = {w.D, w.H, w.W}, out_d = w.oD;
  const int ct_max = st.cl ? static_cast<int>(std::min<std::int64_t>(32, pow2_at_least(w.C))) : 1;
  const int ct_min = st.cl ? std::min(8, ct_max) : 1;
  const int w_min = st.cl ? 1 : std::min(16, pow2_at_least(w.W));
  const std::int64_t planes = st.cl ? w.N : w.N * w.C;
  double best = -1;
  for (int ct = ct_min; ct <= ct_max; ct *= 2)
    for (int t0 = 1; t0 <= pow2_at_least(in[0]); t0 *= 2)
      for (int t1 = 1; t1 <= pow2_at_least(in[1]); t1 *= 2)
        for (int t2 = w_min; t2 <= pow2_at_least(in[2]); t2 *= 2) {
          const std::int64_t cells = static_cast<std::int64_t>(t0) * t1 * t2 * ct;
          if (cells > kStagedMaxCells || t2 * ct > kStagedBlock) continue;  // a row of cells per thread group
          const int T[3] = {t0, t1, t2};
          int m[3];
          for (int i = 0; i < 3; ++i) m[i] = (T[i] + w.k[i] - 2) / w.s[i] + 1;
          const std::int64_t slice = static_cast<std::int64_t>(m[1]) * m[2] * ct;
          const std::size_t smem = static_cast<std::size_t>(2 * cells) * st.words * 4 +
                                   static_cast<std::size_t>(pow2_at_least(m[0])) * slice * 6 +
                                   static_cast<std::size_t>(cells) * 2;
          if (smem > kStagedMaxSmem) continue;
          // Blocks per SM, of the 4 that the registers allow: fewer leave the barriers' waits unhidden.
          const double resident = std::min(4.0, std::floor(227.0 * 1024 / static_cast<double>(smem + 1024)));
          const std::int64_t tiles0 = (in[0] + t0 - 1) / t0;
          const std::int64_t across = planes * (st.cl ? (w.C + ct - 1) / ct : 1) * ((in[1] + t1 - 1) / t1) *
                                      ((in[2] + t2 - 1) / t2);  // columns per tile row along D
          for (std::int64_t len = 1; len <= tiles0; len *= 2) {
            if (len > 1 && t0 < w.k[0] - 1) break;
            const std::int64_t per_d = (tiles0 + len - 1) / len, columns = across * per_d;
            // Output slices staged per column: those reaching its len tiles.
            const std::int64_t reach = std::min<std::int64_t>(out_d, (len * t0 + w.k[0] - 2) / w.s[0] + 1);
            const double work = static_cast<double>(columns) *
                                (static_cast<double>(reach) * slice + len * (0.25 * cells + 64));
            const double cost =
                work * std::max(1.0, static_cast<double>(columns_wanted) / columns) * (4.0 / std::max(1.0, resident));
            if (best >= 0 && cost >= best) continue;
            best = cost;
            st.T[0] = t0, st.T[1] = t1, st.T[2] = t2, st.CT = ct, st.L = static_cast<int>(len);
          }
        }
  if (best < 0) return false;
  return staged_tiling(w, st.T[0], st.T[1], st.T[2], st.CT, st.L, out);
}

// The rest of a tiling, from its tile extents, channels per tile and tiles per column (powers of
// two; the search above picks them): the box, the ring, the counts and the divisors.
inline bool staged_tiling(const Window& w, int t0, int t1, int t2, int ct, int len, StagedTile& out) {
  StagedTile st;
  st.cl = w.layout == Layout::ndhwc && w.C > 1;
  for (int i = 0; i < 3; ++i) st.c[i] = (w.k[i] + w.s[i] - 1) / w.s[i];
  if (st.c[0] * st.c[1] > 64 || w.C > kMaxInt32 || (!st.cl && ct != 1) || (len > 1 && t0 < w.k[0] - 1)) return false;
  st.words = st.c[0] * st.c[1] > 32 ? 2 : 1;
  const auto log2 = [](int v) {
    int l = 0;
    while ((1 << l) < v) ++l;
    return l;
  };
  st.T[0] = t0, st.T[1] = t1, st.T[2] = t2, st.CT = ct, st.L = len;
  const int in[3] = {w.D, w.H, w.W};
  st.cells = st.T[0] * st.T[1] * st.T[2] * st.CT;
  st.lCT = log2(st.CT);
  for (int i = 0; i < 3; ++i) {
    st.lT[i] = log2(st.T[i]);
    if ((1 << st.lT[i]) != st.T[i]) return false;
    st.m[i] = (st.T[i] + w.k[i] - 2) / w.s[i] + 1;
    st.tiles[i] = (in[i] + st.T[i] - 1) / st.T[i];
    st.by_s[i] = FastDiv(w.s[i]);
  }
  if ((1 << st.lCT) != st.CT || st.cells > kStagedMaxCells || st.T[2] * st.CT > kStagedBlock) return false;
  st.R = 1 << log2(st.m[0]);
  st.lR = log2(st.R);
  st.slice = st.m[1] * st.m[2] * st.CT;
  st.columns_d = (st.tiles[0] + st.L - 1) / st.L;
  st.tiles_c = st.cl ? static_cast<int>((w.C + st.CT - 1) / st.CT) : 1;
  const std::int64_t per_plane = static_cast<std::int64_t>(st.tiles_c) * st.columns_d * st.tiles[1] * st.tiles[2];
  if (per_plane > kMaxInt32 || st.shared_bytes() > kStagedMaxSmem) return false;  // column numbers are 32-bit
  st.per_plane = static_cast<std::uint32_t>(per_plane);
  st.planes = st.cl ? w.N : w.N * w.C;
  st.cstride = st.cl ? w.C : 1;
  st.channels = st.cl ? static_cast<int>(w.C) : 1;
  st.volume = w.in_plane();
  st.in_stride = w.in_plane() * st.cstride;
  st.out_stride = w.out_plane() * st.cstride;
  st.by_per_plane = FastDiv(st.per_plane);
  st.by_tiles1 = FastDiv(st.tiles[1]);
  st.by_tiles2 = FastDiv(st.tiles[2]);
  st.by_columns_d = FastDiv(st.columns_d);
  st.by_slice_row = FastDiv(static_cast<std::int64_t>(st.m[2]) << st.lCT);
  st.by_m1 = FastDiv(st.m[1]);
  st.by_W = FastDiv(w.W);
  st.by_H = FastDiv(w.H);
  st.by_kw = FastDiv(w.k[2]);
  st.by_kh = FastDiv(w.k[1]);
  st.by_c1 = FastDiv(st.c[1]);
  out = st;
  return true;
}

// Whether two windows are the same case (every field the kernels read).
inline bool same_window(const Window& a, const Window& b) {
  bool same = a.N == b.N && a.C == b.C && a.D == b.D && a.H == b.H && a.W == b.W && a.oD == b.oD && a.oH == b.oH &&
              a.oW == b.oW && a.ceil_mode == b.ceil_mode && a.layout == b.layout && a.indices == b.indices;
  for (int i = 0; i < 3; ++i) same = same && a.k[i] == b.k[i] && a.s[i] == b.s[i] && a.p[i] == b.p[i] && a.dil[i] == b.dil[i];
  return same;
}

// A case's tiling and grid, or why v6 refuses it. The search above and the occupancy query take
// tens of microseconds, which a timed launch would count: they are made once per case (the last
// case's plan is kept) and looked up after that.
struct StagedPlan {
  Window w;
  std::string refused;  // empty when v6 takes the case
  StagedTile st;
  std::size_t smem = 0;
  std::int64_t blocks = 0;
};

inline std::string staged_refusal(const Window& w, StagedTile& st) {
  if (w.dilated()) return "bwd_v6_staged_tile takes dilation 1 only (v1 takes any)";
  if (!plane_fits_32_bits(w)) return "bwd_v6_staged_tile indexes a plane in 32 bits; this one is larger";
  if (!staged_tile(w, st))
    return "bwd_v6_staged_tile: more than 64 covering outputs over D and H, or no tile fits its shared memory (v1 "
           "takes any)";
  return {};
}

template <class T>
const StagedPlan& staged_plan(const Window& w, bool with_grid) {
  static StagedPlan plan;
  static bool made = false;
  if (!made || !same_window(plan.w, w)) {
    plan = StagedPlan{};
    plan.w = w;
    plan.refused = staged_refusal(w, plan.st);
    made = true;
  }
  if (with_grid && plan.refused.empty() && plan.blocks == 0) {
    // As many blocks as fit on the device at once, each walking its columns gridDim.x apart.
    plan.smem = plan.st.shared_bytes();
    if (plan.smem > 48 * 1024)
      TUT_CUDA(cudaFuncSetAttribute(bwd_v6_staged_tile_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(plan.smem)));
    const std::int64_t columns = plan.st.planes * plan.st.per_plane;
    const std::int64_t resident = resident_blocks(TUT_KERNEL(bwd_v6_staged_tile_kernel<T>), kStagedBlock, plan.smem);
    plan.blocks = std::min<std::int64_t>({columns, resident, kMaxInt32});
    plan.st.step_planes = plan.blocks / plan.st.per_plane;
    plan.st.step_rest = static_cast<std::uint32_t>(plan.blocks % plan.st.per_plane);
  }
  return plan;
}

template <class T>
std::string bwd_v6_refuses(const Window& w) {
  return staged_plan<T>(w, false).refused;
}

template <class T>
void bwd_v6_staged_tile(cudaStream_t s, const BackwardArgs<T>& a) {
  check_backward(a, "bwd_v6_staged_tile");
  const StagedPlan& plan = staged_plan<T>(a.w, true);
  if (!plan.refused.empty()) throw tut::Unsupported(plan.refused);
  bwd_v6_staged_tile_kernel<T><<<static_cast<unsigned>(plan.blocks), kStagedBlock, plan.smem, s>>>(a, plan.st);
  TUT_CHECK_LAUNCH("bwd_v6_staged_tile_kernel");
}

}  // namespace ch06
