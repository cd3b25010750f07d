// bwd v10_row_writer: the deterministic backward where windows do not overlap, in one pass that
// writes dx the way a fill does: 16-byte stores, each dx element once, no memset before it.
//
// v5 had the same plan (a thread per 16-byte chunk of dx, the value where the owning output's index
// names the cell, else 0) and ran at half a memset's speed because each chunk paid for its own
// place: four divisions to decode the chunk number, the owning output along each axis, 212 warp
// instructions per chunk in all, with 80 registers per thread. v7 then split the work into a
// memset and a store per output, and lost to PyTorch by the memset's difference (PyTorch's fill:
// 41.1 us at 81 % DRAM busy on 2x64x64^3; cudaMemsetAsync plus the stores: 0.92x).
//
// What changes here is who computes what. In NCDHW a row of dx (fixed n, c, d, h) is W contiguous
// elements; a block's threads take the chunks of a row side by side (thread t the chunk t mod the
// row's chunks, the rows t / chunks), and every row a thread visits puts it at the same chunk
// column. So the part of the work that depends on w (for each of the chunk's V elements, its
// owning output ow, its place in ow's window, and whether it starts a new output) is computed once
// per thread, before the loop over rows. Per row a thread decodes the row (two multiply-highs for
// h and d), finds the owning outputs along D and H (two more), reads the index and dy of the
// chunk's outputs (on kernel 8 stride 8 one output for two chunks, and the eight rows of an output
// row read the same ones: L1 and L2 serve them) and stores the V elements at once. Two rows' loads
// are issued before their stores.
//
// Prediction: on 2x64x64^3 with kernel 8 stride 8 (dx 134 MB written, dy 0.26 MB and the index 2 MB
// read) about 30 warp instructions per chunk instead of v5's 212, so about 8 M in all: the issue
// rate leaves the kernel bound by its stores, at a fill's speed, PyTorch's 41 us (its fill alone)
// plus nothing, since there is no second pass. Against v7 the saving is the store kernel and the
// memset's lower DRAM throughput. Any kernel size and any W: where W is not a multiple of 4 or dx
// is not 16-byte aligned, the chunks are 2 or 1 elements (the same code). NDHWC with more than one
// channel is refused: there a 16-byte chunk is 4 channels of one position, 4 different outputs,
// v5's and v3's case.
//
// Measured: see the lesson (not measured when written).
#pragma once

#include "kernels/bwd.cuh"
#include "kernels/bwd_v5_chunk_writer.cuh"  // bwd_v5_pack

#include <type_traits>

namespace ch06 {

inline constexpr int kRowBlock = 256;

// What every thread shares, computed once per launch.
struct RowArgs {
  bool narrow = true;        // row numbers fit 32 bits: FastDiv; else 64-bit division
  std::int64_t rows = 0;     // N * C * D * H
  int per_row = 1;           // chunks per row, W / V
  int lanes = 1;             // threads per row: min(per_row, kRowBlock)
  int rows_per_block = 1;    // kRowBlock / lanes
  FastDiv by_H, by_D;
  FastDiv by_s[3];
};

// The part of a chunk that depends only on its column g: per element, the owning output along W,
// its place in that output's window (-1: in a gap or in no window) and whether it starts a new
// output within the chunk (the first element always does).
template <int V>
struct RowColumn {
  int x0 = 0;
  int ow[V], jw[V];
  bool fresh[V];
};

template <int V, class T>
TUT_HD inline RowColumn<V> row_column(const BackwardArgs<T>& a, const RowArgs& ra, int g) {
  const Window& w = a.w;
  RowColumn<V> col;
  col.x0 = g * V;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int l = 0; l < V; ++l) {
    const int x = col.x0 + l;
    col.ow[l] = owning_output(x, w.p[2], w.oW, ra.by_s[2]);
    col.jw[l] = place_in_window(x, col.ow[l], w.k[2], w.s[2], w.p[2], w.dil[2]);
    col.fresh[l] = l == 0 || col.ow[l] != col.ow[l - 1];
  }
  return col;
}

// One chunk between its loads and its store: where it goes, the saved index and dy of each
// element's owning output, and what an element's saved index must equal to name it: int64, the
// element's flat index, base + l; compact, its window cell, row_cell + the column's jw[l] (row_cell
// -1: the row is in no window).
template <int V, class T>
struct RowJob {
  T* dst = nullptr;
  std::int64_t base = 0;
  int row_cell = -1;
  std::int64_t saved[V];
  T grad[V];
};

// Row r's chunk at column `col`: the loads of its outputs' index and dy. Host and device (a CPU
// test runs it on every chunk of small cases).
template <int V, class T>
TUT_HD inline void load_row_chunk(const BackwardArgs<T>& a, const RowArgs& ra, const RowColumn<V>& col, std::int64_t r,
                                  RowJob<V, T>& job) {
  const Window& w = a.w;
  const bool int64 = w.indices == IndexFormat::int64;
  std::int64_t lead;  // n * C + c
  int d, h;
  if (ra.narrow) {
    std::uint32_t u = static_cast<std::uint32_t>(r), q = ra.by_H.div(u);
    h = static_cast<int>(u - q * static_cast<std::uint32_t>(w.H));
    u = q;
    q = ra.by_D.div(u);
    d = static_cast<int>(u - q * static_cast<std::uint32_t>(w.D));
    lead = q;
  } else {
    h = static_cast<int>(r % w.H);
    d = static_cast<int>((r / w.H) % w.D);
    lead = r / w.H / w.D;
  }
  const int od = owning_output(d, w.p[0], w.oD, ra.by_s[0]), oh = owning_output(h, w.p[1], w.oH, ra.by_s[1]);
  job.row_cell = -1;
  if (!int64) {
    const int jd = place_in_window(d, od, w.k[0], w.s[0], w.p[0], w.dil[0]);
    const int jh = place_in_window(h, oh, w.k[1], w.s[1], w.p[1], w.dil[1]);
    job.row_cell = jd < 0 || jh < 0 ? -1 : (jd * w.k[1] + jh) * w.k[2];
  }
  const std::int64_t orow = ((lead * w.oD + od) * w.oH + oh) * static_cast<std::int64_t>(w.oW);
  job.base = (static_cast<std::int64_t>(d) * w.H + h) * w.W + col.x0;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int l = 0; l < V; ++l) {
    if (col.fresh[l]) {
      const std::int64_t o = orow + col.ow[l];
      job.saved[l] = int64 ? a.index[o] : saved_window_cell(a, o);
      job.grad[l] = a.dy[o];
    } else {
      job.saved[l] = job.saved[l > 0 ? l - 1 : 0];
      job.grad[l] = job.grad[l > 0 ? l - 1 : 0];
    }
  }
  job.dst = a.dx + r * w.W + col.x0;
}

// The chunk's V elements, each dy where the saved index names it, else 0, stored at once.
template <int V, class T>
TUT_HD inline void store_row_chunk(const BackwardArgs<T>& a, const RowColumn<V>& col, const RowJob<V, T>& job) {
  const bool int64 = a.w.indices == IndexFormat::int64;
  tut::ew::Packed<T, V> p;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int l = 0; l < V; ++l) {
    const bool named = int64 ? job.saved[l] == job.base + l
                             : job.row_cell >= 0 && col.jw[l] >= 0 && job.saved[l] == job.row_cell + col.jw[l];
    p.elem[l] = named ? job.grad[l] : T(0);
  }
  *reinterpret_cast<tut::ew::Packed<T, V>*>(job.dst) = p;
}

// Each thread: its column (or columns, when a row has more chunks than a block has threads), then
// its rows, two at a time: both rows' loads, then both stores.
template <int V, class T>
__global__ void __launch_bounds__(kRowBlock, 4) bwd_v10_row_writer_kernel(BackwardArgs<T> a, RowArgs ra) {
  const int t = static_cast<int>(threadIdx.x);
  const int sub = t / ra.lanes;
  if (sub >= ra.rows_per_block) return;
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * ra.rows_per_block;
  const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * ra.rows_per_block + sub;
  for (int g = t - sub * ra.lanes; g < ra.per_row; g += ra.lanes) {
    const RowColumn<V> col = row_column<V>(a, ra, g);
    for (std::int64_t r = first; r < ra.rows; r += 2 * step) {
      RowJob<V, T> job[2];
      load_row_chunk(a, ra, col, r, job[0]);
      const bool second = r + step < ra.rows;
      if (second) load_row_chunk(a, ra, col, r + step, job[1]);
      store_row_chunk(a, col, job[0]);
      if (second) store_row_chunk(a, col, job[1]);
    }
  }
}

template <class T>
std::string bwd_v10_refuses(const Window& w) {
  if (const std::string why = disjoint_writer_refuses(w, "bwd_v10_row_writer"); !why.empty()) return why;
  if (w.layout == Layout::ndhwc && w.C > 1)
    return "bwd_v10_row_writer writes rows along W: NCDHW, or NDHWC with one channel (v5 and v3 take NDHWC)";
  return {};
}

template <class T>
RowArgs row_args(const Window& w, int V) {
  RowArgs ra;
  ra.rows = w.in_numel() / w.W;
  ra.per_row = w.W / V;
  ra.lanes = std::min(ra.per_row, kRowBlock);
  ra.rows_per_block = kRowBlock / ra.lanes;
  ra.narrow = ra.rows <= kMaxInt32;
  if (ra.narrow) {
    ra.by_H = FastDiv(w.H);
    ra.by_D = FastDiv(w.D);
  }
  for (int i = 0; i < 3; ++i) ra.by_s[i] = FastDiv(w.s[i]);
  return ra;
}

template <class T>
void bwd_v10_row_writer(cudaStream_t s, const BackwardArgs<T>& a) {
  check_backward(a, "bwd_v10_row_writer");
  if (const std::string why = bwd_v10_refuses<T>(a.w); !why.empty()) throw tut::Unsupported(why);
  const int V = bwd_v5_pack(a);  // 4 where rows are whole 16-byte chunks and dx is aligned, else 2, else 1
  const RowArgs ra = row_args<T>(a.w, V);
  // One wave of resident blocks at most; each covers rows_per_block rows per step.
  const auto launch = [&](auto v) {
    constexpr int kV = decltype(v)::value;
    static const std::int64_t resident = resident_blocks(TUT_KERNEL(bwd_v10_row_writer_kernel<kV, T>), kRowBlock, 0);
    const std::int64_t needed = (ra.rows + ra.rows_per_block - 1) / ra.rows_per_block;
    const unsigned grid = static_cast<unsigned>(std::max<std::int64_t>(1, std::min(needed, resident)));
    bwd_v10_row_writer_kernel<kV, T><<<grid, kRowBlock, 0, s>>>(a, ra);
  };
  if (V == 4) launch(std::integral_constant<int, 4>{});
  else if (V == 2) launch(std::integral_constant<int, 2>{});
  else launch(std::integral_constant<int, 1>{});
  TUT_CHECK_LAUNCH("bwd_v10_row_writer_kernel");
}

template <class T>
std::vector<const void*> bwd_v10_kernels() {
  return {TUT_KERNEL(bwd_v10_row_writer_kernel<4, T>), TUT_KERNEL(bwd_v10_row_writer_kernel<2, T>),
          TUT_KERNEL(bwd_v10_row_writer_kernel<1, T>)};
}

}  // namespace ch06
