// bwd v13_prefetch_rows: v10's one pass of 16-byte stores, with the next item's index and dy read
// before this item's rows are written.
//
// What Nsight Compute said about v10 on kernel 8 stride 8 (2x64x64^3, int64 index; results/):
// 47.0 us, DRAM 71.7 % busy where PyTorch's fill reaches 81.3 %, 60 % of the warps resident, and
// the warps stalled on a long scoreboard (waiting for global loads) 77 % of their active cycles.
// A thread of v10 walks its items one after the other: it reads the item's index and dy (one
// output's, on kernel 8), waits for them, since every store of the item depends on the compare,
// then issues the item's 8 row stores, then the next item's loads. So each item costs a load
// latency (about 0.6 us from DRAM) before its stores start, and with one wave of resident blocks
// (v10's grid) nothing else hides it: the stores come in bursts and DRAM idles between them.
//
// Here the loop is software-pipelined: before writing item i's rows a thread issues item i + 1's
// loads (its decode, index and dy into registers), so the latency of i + 1's loads runs under i's
// stores. Everything else is v10's: a thread's chunk column is fixed, the column's part of the
// work is done once, each element of dx is stored once, the same value as v10's.
//
// First form's prediction: the stores stream without the per-item gaps, DRAM busy near the fill's
// 81 %, about 42 us on kernel 8 stride 8. Measured (H100, results/forms/fourth.*): 45.8 us, DRAM
// 73.6 % busy (v10 47.0 and 71.7 %), 47.8 % of the warps resident, still stalled on a long
// scoreboard 82 % of their active cycles; 0.917 and 0.923 of copy (int64, compact) where v10 ran
// 0.928 and 0.938 in the same process; raced, 0.985x PyTorch. On kernel 2 stride 2, 0.883 (int64,
// v10 0.852) and 0.729 (compact, v10 0.823: 68 registers left 3 blocks per SM). The prefetch moved
// the wait, it did not remove it: the stores issue at once, so the thread is soon waiting on the
// next item's loads again.
//
// Second form (this code), two changes. (1) Where every chunk lies in one output's segment along
// W (V divides the stride and the padding: kernel 8 stride 8), an item holds one index and one dy
// instead of V copies (46 registers instead of 64, so 5 blocks per SM instead of 4). (2) Where a
// row has fewer than 32 chunks (16 on kernel 8 stride 8), R = 32 / chunks threads share a column
// and split the item's rows (row j, j + R, ...): a warp's store then covers R adjacent rows of one
// item, 512 contiguous bytes, and an item's 2 KiB are written in 4 stores by one warp instead of
// 8 stores by a half warp while the other half writes another item 2 KiB away. Prediction: more
// warps to hide the loads, and stores that sweep dx more like a fill's: DRAM busy above 75 %,
// faster than PyTorch's fill and scatter on kernel 8 stride 8.
//
// Measured (H100 suite run, results/): wrong. 46.7 us, DRAM 72.1 % busy (compact 47.6 us, 70.3 %),
// 58 % of the warps resident (was 48 %) and still 78 % of their cycles on a long scoreboard;
// 0.915 and 0.914 of copy against v10's 0.936 and 0.930 in the same run, raced 1.001x and 0.993x
// PyTorch. Neither the registers nor the order of the stores was what held v10 below a fill's 81 %.
#pragma once

#include "kernels/bwd_v10_row_writer.cuh"

namespace ch06 {

// v10's launch constants, and the team: R threads share a chunk column of an item and split its
// rows (row j, j + R, ...), so that a warp's store covers R rows of one item side by side.
struct PrefetchArgs {
  RowArgs ra;
  int R = 1;               // rows split per column: 32 / lanes when a row has fewer than 32 chunks, else 1
  int teams_per_block = 1;  // kRowBlock / (lanes * R)
};

// One item's loads: where its rows are and what the chunk's outputs saved. kOne: every chunk lies
// in one output's segment along W (V divides the stride and the padding), so one index and one dy.
template <int V, bool kOne, class T>
struct RowItem {
  static constexpr int kLoads = kOne ? 1 : V;
  std::int64_t flat = 0;  // int64: (d*H + h0)*W + x0
  T* dst = nullptr;
  int h0 = 0, h1 = 0, oh = 0, jd = 0;
  std::int64_t saved[kLoads];
  T grad[kLoads];
};

template <int V, bool kInt64, bool kOne, class T>
TUT_HD inline void fetch_item(const BackwardArgs<T>& a, const RowArgs& ra, const RowColumn<V>& col, std::int64_t it,
                              RowItem<V, kOne, T>& r) {
  const Window& w = a.w;
  std::int64_t lead;
  int d, oh;
  item_place(w, ra, it, lead, d, oh);
  const int od = owning_output(d, w.p[0], w.oD, ra.by_s[0]);
  r.oh = oh;
  r.jd = kInt64 ? 0 : place_in_window(d, od, w.k[0], w.s[0], w.p[0], w.dil[0]);
  r.h0 = oh == 0 ? 0 : oh * w.s[1] - w.p[1];
  r.h1 = oh == w.oH - 1 ? w.H : (oh + 1) * w.s[1] - w.p[1];
  const std::int64_t orow = ((lead * w.oD + od) * w.oH + oh) * static_cast<std::int64_t>(w.oW);
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int l = 0; l < RowItem<V, kOne, T>::kLoads; ++l) {
    if (col.fresh[l]) {
      const std::int64_t o = orow + col.ow[l];
      r.saved[l] = kInt64 ? a.index[o] : saved_window_cell(a, o);
      r.grad[l] = a.dy[o];
    } else {
      r.saved[l] = r.saved[l > 0 ? l - 1 : 0];
      r.grad[l] = r.grad[l > 0 ? l - 1 : 0];
    }
  }
  r.flat = (static_cast<std::int64_t>(d) * w.H + r.h0) * w.W + col.x0;
  r.dst = a.dx + ((lead * w.D + d) * w.H + r.h0) * static_cast<std::int64_t>(w.W) + col.x0;
}

// Rows h0 + j, h0 + j + R, ... of the item.
template <int V, bool kInt64, bool kOne, class T>
TUT_HD inline void write_rows(const BackwardArgs<T>& a, const RowColumn<V>& col, const RowItem<V, kOne, T>& r, int j,
                              int R) {
  const Window& w = a.w;
  std::int64_t flat = r.flat + static_cast<std::int64_t>(j) * w.W;
  T* dst = r.dst + static_cast<std::int64_t>(j) * w.W;
  const std::int64_t step = static_cast<std::int64_t>(R) * w.W;
  for (int h = r.h0 + j; h < r.h1; h += R, flat += step, dst += step) {
    int row_cell = -1;
    if (!kInt64) {
      const int jh = place_in_window(h, r.oh, w.k[1], w.s[1], w.p[1], w.dil[1]);
      row_cell = r.jd < 0 || jh < 0 ? -1 : (r.jd * w.k[1] + jh) * w.k[2];
    }
    tut::ew::Packed<T, V> p;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int l = 0; l < V; ++l) {
      const int s = kOne ? 0 : l;
      const bool named = kInt64 ? r.saved[s] == flat + l
                                : row_cell >= 0 && col.jw[l] >= 0 && r.saved[s] == row_cell + col.jw[l];
      p.elem[l] = named ? r.grad[s] : T(0);
    }
    *reinterpret_cast<tut::ew::Packed<T, V>*>(dst) = p;
  }
}

// Thread t of block `blk` in a grid of `grid` blocks: its team, its place j among the team's R row
// splits, its column(s) g; then its items, each one's loads issued before the previous one's stores.
// Host and device (a CPU test runs every thread of small cases).
template <int V, bool kInt64, bool kOne, class T>
TUT_HD inline void prefetch_rows_thread(const BackwardArgs<T>& a, const PrefetchArgs& pa, int t, std::int64_t blk,
                                        std::int64_t grid) {
  const RowArgs& ra = pa.ra;
  const int span = ra.lanes * pa.R, team = t / span, j = (t % span) / ra.lanes;
  if (team >= pa.teams_per_block) return;
  const std::int64_t step = grid * pa.teams_per_block, first = blk * pa.teams_per_block + team;
  if (first >= ra.items) return;
  for (int g = t % ra.lanes; g < ra.per_row; g += ra.lanes) {
    const RowColumn<V> col = row_column<V>(a, ra, g);
    RowItem<V, kOne, T> cur, next;
    fetch_item<V, kInt64, kOne>(a, ra, col, first, cur);
    for (std::int64_t it = first; it < ra.items; it += step) {
      const bool more = it + step < ra.items;
      if (more) fetch_item<V, kInt64, kOne>(a, ra, col, it + step, next);
      write_rows<V, kInt64, kOne>(a, col, cur, j, pa.R);
      if (more) cur = next;
    }
  }
}

template <int V, bool kInt64, bool kOne, class T>
__global__ void __launch_bounds__(kRowBlock) bwd_v13_prefetch_rows_kernel(BackwardArgs<T> a, PrefetchArgs pa) {
  prefetch_rows_thread<V, kInt64, kOne>(a, pa, static_cast<int>(threadIdx.x), blockIdx.x, gridDim.x);
}

template <class T>
std::string bwd_v13_refuses(const Window& w) {
  return row_writer_refuses(w, "bwd_v13_prefetch_rows");
}

// The team size: a row of fewer than 32 chunks is shared by R = 32 / lanes row splits (at most
// the stride along H, an item's rows but at the edges).
template <class T>
PrefetchArgs prefetch_args(const Window& w, int V) {
  PrefetchArgs pa;
  pa.ra = row_args<T>(w, V);
  pa.R = pa.ra.lanes < 32 ? std::min(32 / pa.ra.lanes, std::max(1, w.s[1])) : 1;  // at most an item's rows (s)
  pa.teams_per_block = std::max(1, kRowBlock / (pa.ra.lanes * pa.R));
  if (pa.ra.lanes * pa.R > kRowBlock) pa.R = 1;
  return pa;
}

// Whether every V-element chunk of a row lies in one output's segment along W.
inline bool chunk_in_one_output(const Window& w, int V) { return w.s[2] % V == 0 && w.p[2] % V == 0; }

// Calls launch(V, int64, one) with each as a compile-time constant (std::integral_constant): the
// kernel forms that v13 and v16 instantiate. One output per chunk is always true for V = 1.
template <class Launch>
void with_row_item_form(int V, bool int64, bool one, Launch&& launch) {
  const auto width = [&](auto i64) {
    using One = std::true_type;
    using Many = std::false_type;
    if (V == 4) one ? launch(std::integral_constant<int, 4>{}, i64, One{}) : launch(std::integral_constant<int, 4>{}, i64, Many{});
    else if (V == 2) one ? launch(std::integral_constant<int, 2>{}, i64, One{}) : launch(std::integral_constant<int, 2>{}, i64, Many{});
    else launch(std::integral_constant<int, 1>{}, i64, One{});
  };
  if (int64) width(std::true_type{});
  else width(std::false_type{});
}

template <class T>
void bwd_v13_prefetch_rows(cudaStream_t s, const BackwardArgs<T>& a) {
  check_backward(a, "bwd_v13_prefetch_rows");
  if (const std::string why = bwd_v13_refuses<T>(a.w); !why.empty()) throw tut::Unsupported(why);
  const int V = bwd_v5_pack(a);
  const PrefetchArgs pa = prefetch_args<T>(a.w, V);
  const bool int64 = a.w.indices == IndexFormat::int64, one = chunk_in_one_output(a.w, V);
  const auto launch = [&](auto v, auto i64, auto o1) {
    constexpr int kV = decltype(v)::value;
    constexpr bool kI = decltype(i64)::value, kO = decltype(o1)::value;
    static const std::int64_t resident =
        resident_blocks(TUT_KERNEL(bwd_v13_prefetch_rows_kernel<kV, kI, kO, T>), kRowBlock, 0);
    const std::int64_t needed = (pa.ra.items + pa.teams_per_block - 1) / pa.teams_per_block;
    const unsigned grid = one_wave_grid(needed, resident);
    bwd_v13_prefetch_rows_kernel<kV, kI, kO, T><<<grid, kRowBlock, 0, s>>>(a, pa);
  };
  with_row_item_form(V, int64, one, launch);
  TUT_CHECK_LAUNCH("bwd_v13_prefetch_rows_kernel");
}

template <class T>
std::vector<const void*> bwd_v13_kernels() {
  return {TUT_KERNEL(bwd_v13_prefetch_rows_kernel<4, true, true, T>), TUT_KERNEL(bwd_v13_prefetch_rows_kernel<4, true, false, T>),
          TUT_KERNEL(bwd_v13_prefetch_rows_kernel<1, true, true, T>), TUT_KERNEL(bwd_v13_prefetch_rows_kernel<4, false, true, T>),
          TUT_KERNEL(bwd_v13_prefetch_rows_kernel<4, false, false, T>), TUT_KERNEL(bwd_v13_prefetch_rows_kernel<1, false, true, T>)};
}

}  // namespace ch06
