// bwd v10_row_writer: the deterministic backward where windows do not overlap, in one pass that
// writes dx the way a fill does: 16-byte stores, each dx element once, no memset before it.
//
// v5 had the same plan (a thread per 16-byte chunk of dx, the value where the owning output's index
// names the cell, else 0) and ran at half a memset's speed because each chunk paid for its own
// place: four divisions to decode the chunk number, the owning output along each axis, 212 warp
// instructions per chunk in all. v7 then split the work into a memset and a store per output, and
// lost to PyTorch by the memset's difference (PyTorch's fill: 41.1 us at 81 % DRAM busy on
// 2x64x64^3; cudaMemsetAsync plus the stores: 0.92x).
//
// What changes here is who computes what. In NCDHW a row of dx (fixed n, c, d, h) is W contiguous
// elements; a block's threads take the chunks of a row side by side, and every row a thread visits
// puts it at the same chunk column, so the part of the work that depends on w (for each of the
// chunk's V elements its owning output ow, its place in ow's window, and whether it starts a new
// output) is computed once per thread.
//
// First form (measured on the H100): a thread visited rows one by one, decoding each (two
// multiply-highs), finding its owning outputs along D and H, and reading their index and dy per row.
// On kernel 8 stride 8 (2x64x64^3, int64 index) 0.620 of copy, 0.70x v7; Nsight Compute: 43.4 M warp
// instructions, 165 per warp's 32 chunks where about 30 were predicted (the 64-bit row and output
// arithmetic, and the index read again by each of the 8 rows that share it), DRAM 47 % busy, warps
// waiting on their loads 42 % of the time. At 1.98 GHz the H100 issues 43 M warp instructions in
// 41 us, the fill's whole time: the kernel was bound by its instructions, as v5 was.
//
// Second form (this code): a thread takes an item, one output row's segment of rows at one depth,
// (n, c, d, oh): it decodes the item, reads the index and dy of its chunk's outputs once, then walks
// the segment's rows h (s1 of them: 8 on kernel 8 stride 8), each row an add to two pointers, a
// compare per element and one 16-byte store. Per row a warp issues about 10 instructions.
// Prediction: about 3 M warp instructions for the whole of kernel 8 stride 8, so bound by the
// stores: a fill's 41 us, against v7's memset and store kernel (48.7 us in the suite). Any kernel
// size and any W: where W is not a multiple of 4 or dx is not 16-byte aligned, the chunks are 2 or
// 1 elements (the same code). NDHWC with more than one channel is refused: there a 16-byte chunk is
// 4 channels of one position, 4 different outputs, v5's and v3's case.
//
// Measured (H100, results/): on kernel 8 stride 8, 48.0 us with the int64 index and 47.7 with the
// compact one (v7 49.0 and 48.7, v0's atomic scatter 50.9 and 49.8); Nsight Compute: the kernel
// 47.0 us with DRAM 71.7 % busy and 11.5 M warp instructions (the prediction said about 3 M: the
// item's setup and the 4-way loads are most of it), where PyTorch's fill alone took 41.2 us at 81 %. Raced against
// PyTorch in one process, 0.987x and 0.993x: PyTorch's fill and scatter and this one pass now take
// the same time within about 1 %. On kernel 2 stride 2 (8 cells per output, 2 outputs per chunk) it
// was the fastest version too, 110.3 and 96.0 us against v3's 119.0 and v9's 113.4: one store per
// chunk beats v3's thread per output's piece of a slice.
#pragma once

#include "kernels/bwd.cuh"
#include "kernels/bwd_v5_chunk_writer.cuh"  // bwd_v5_pack

#include <type_traits>

namespace ch06 {

inline constexpr int kRowBlock = 256;

// What every thread shares, computed once per launch.
struct RowArgs {
  bool narrow = true;        // item numbers fit 32 bits: FastDiv; else 64-bit division
  std::int64_t items = 0;    // N * C * D * oH: one output row's segment of rows at one depth
  int per_row = 1;           // chunks per row, W / V
  int lanes = 1;             // threads per item: min(per_row, kRowBlock)
  int items_per_block = 1;   // kRowBlock / lanes
  FastDiv by_oH, by_D;
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

// Where item `it` lies: lead = n * C + c, the input plane d and the output row oh (items run oh
// fastest, then d, then lead).
TUT_HD inline void item_place(const Window& w, const RowArgs& ra, std::int64_t it, std::int64_t& lead, int& d, int& oh) {
  if (ra.narrow) {
    std::uint32_t u = static_cast<std::uint32_t>(it), q = ra.by_oH.div(u);
    oh = static_cast<int>(u - q * static_cast<std::uint32_t>(w.oH));
    u = q;
    q = ra.by_D.div(u);
    d = static_cast<int>(u - q * static_cast<std::uint32_t>(w.D));
    lead = q;
  } else {
    oh = static_cast<int>(it % w.oH);
    d = static_cast<int>((it / w.oH) % w.D);
    lead = it / w.oH / w.D;
  }
}

// Item `it` at column `col`: its chunk's outputs' index and dy, read once, then every row of the
// segment written. Host and device (a CPU test runs it on every item of small cases).
template <int V, bool kInt64, class T>
TUT_HD inline void write_item(const BackwardArgs<T>& a, const RowArgs& ra, const RowColumn<V>& col, std::int64_t it) {
  const Window& w = a.w;
  std::int64_t lead;  // n * C + c
  int d, oh;
  item_place(w, ra, it, lead, d, oh);
  const int od = owning_output(d, w.p[0], w.oD, ra.by_s[0]);
  const int jd = kInt64 ? 0 : place_in_window(d, od, w.k[0], w.s[0], w.p[0], w.dil[0]);
  // The segment of rows output row oh owns: [oh*s - p, (oh+1)*s - p), the first from 0, the last to H.
  const int h0 = oh == 0 ? 0 : oh * w.s[1] - w.p[1];
  const int h1 = oh == w.oH - 1 ? w.H : (oh + 1) * w.s[1] - w.p[1];
  const std::int64_t orow = ((lead * w.oD + od) * w.oH + oh) * static_cast<std::int64_t>(w.oW);
  std::int64_t saved[V];
  T grad[V];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int l = 0; l < V; ++l) {
    if (col.fresh[l]) {
      const std::int64_t o = orow + col.ow[l];
      saved[l] = kInt64 ? a.index[o] : saved_window_cell(a, o);
      grad[l] = a.dy[o];
    } else {
      saved[l] = saved[l > 0 ? l - 1 : 0];
      grad[l] = grad[l > 0 ? l - 1 : 0];
    }
  }
  // int64: the element's flat index, (d*H + h)*W + x0 + l; compact: its window cell.
  std::int64_t flat = (static_cast<std::int64_t>(d) * w.H + h0) * w.W + col.x0;
  T* dst = a.dx + ((lead * w.D + d) * w.H + h0) * static_cast<std::int64_t>(w.W) + col.x0;
  for (int h = h0; h < h1; ++h, flat += w.W, dst += w.W) {
    int row_cell = -1;
    if (!kInt64) {
      const int jh = place_in_window(h, oh, w.k[1], w.s[1], w.p[1], w.dil[1]);
      row_cell = jd < 0 || jh < 0 ? -1 : (jd * w.k[1] + jh) * w.k[2];
    }
    tut::ew::Packed<T, V> p;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int l = 0; l < V; ++l) {
      const bool named = kInt64 ? saved[l] == flat + l
                                : row_cell >= 0 && col.jw[l] >= 0 && saved[l] == row_cell + col.jw[l];
      p.elem[l] = named ? grad[l] : T(0);
    }
    *reinterpret_cast<tut::ew::Packed<T, V>*>(dst) = p;
  }
}

// Each thread: its column (or columns, when a row has more chunks than a block has threads), then
// its items.
template <int V, bool kInt64, class T>
__global__ void __launch_bounds__(kRowBlock) bwd_v10_row_writer_kernel(BackwardArgs<T> a, RowArgs ra) {
  const int t = static_cast<int>(threadIdx.x);
  const int sub = t / ra.lanes;
  if (sub >= ra.items_per_block) return;
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * ra.items_per_block;
  const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * ra.items_per_block + sub;
  for (int g = t - sub * ra.lanes; g < ra.per_row; g += ra.lanes) {
    const RowColumn<V> col = row_column<V>(a, ra, g);
    for (std::int64_t it = first; it < ra.items; it += step) write_item<V, kInt64>(a, ra, col, it);
  }
}

// What the writers of rows along W (v10, v13, v16) refuse, named as `name`: what every disjoint
// writer refuses, and NDHWC with more than one channel.
inline std::string row_writer_refuses(const Window& w, const char* name) {
  if (const std::string why = disjoint_writer_refuses(w, name); !why.empty()) return why;
  if (w.layout == Layout::ndhwc && w.C > 1)
    return std::string(name) + " writes rows along W: NCDHW, or NDHWC with one channel (v5 and v3 take NDHWC)";
  return {};
}

template <class T>
std::string bwd_v10_refuses(const Window& w) {
  return row_writer_refuses(w, "bwd_v10_row_writer");
}

template <class T>
RowArgs row_args(const Window& w, int V) {
  RowArgs ra;
  ra.items = w.N * w.C * w.D * w.oH;
  ra.per_row = w.W / V;
  ra.lanes = std::min(ra.per_row, kRowBlock);
  ra.items_per_block = kRowBlock / ra.lanes;
  ra.narrow = ra.items <= kMaxInt32;
  if (ra.narrow) {
    ra.by_oH = FastDiv(w.oH);
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
  const bool int64 = a.w.indices == IndexFormat::int64;
  // One wave of resident blocks at most; each covers items_per_block items per step.
  const auto launch = [&](auto v, auto i64) {
    constexpr int kV = decltype(v)::value;
    constexpr bool kI = decltype(i64)::value;
    static const std::int64_t resident = resident_blocks(TUT_KERNEL(bwd_v10_row_writer_kernel<kV, kI, T>), kRowBlock, 0);
    const std::int64_t needed = (ra.items + ra.items_per_block - 1) / ra.items_per_block;
    const unsigned grid = one_wave_grid(needed, resident);
    bwd_v10_row_writer_kernel<kV, kI, T><<<grid, kRowBlock, 0, s>>>(a, ra);
  };
  const auto width = [&](auto i64) {
    if (V == 4) launch(std::integral_constant<int, 4>{}, i64);
    else if (V == 2) launch(std::integral_constant<int, 2>{}, i64);
    else launch(std::integral_constant<int, 1>{}, i64);
  };
  if (int64) width(std::true_type{});
  else width(std::false_type{});
  TUT_CHECK_LAUNCH("bwd_v10_row_writer_kernel");
}

template <class T>
std::vector<const void*> bwd_v10_kernels() {
  return {TUT_KERNEL(bwd_v10_row_writer_kernel<4, true, T>), TUT_KERNEL(bwd_v10_row_writer_kernel<2, true, T>),
          TUT_KERNEL(bwd_v10_row_writer_kernel<1, true, T>), TUT_KERNEL(bwd_v10_row_writer_kernel<4, false, T>),
          TUT_KERNEL(bwd_v10_row_writer_kernel<2, false, T>), TUT_KERNEL(bwd_v10_row_writer_kernel<1, false, T>)};
}

}  // namespace ch06
