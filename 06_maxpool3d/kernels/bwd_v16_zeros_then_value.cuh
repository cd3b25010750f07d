// bwd v16_zeros_then_value: where windows do not overlap, a thread first stores zeros over its
// chunks of an item's rows, which needs nothing loaded, then stores dy alone into the one cell the
// item's index names, if that cell is one of the chunks it has just zeroed.
//
// What Nsight Compute said about v10 and v13 on kernel 8 stride 8 (2x64x64^3, int64 index;
// results/): 47.0 and 46.7 us, DRAM 71.7 and 72.1 % busy where PyTorch's fill reaches 81 %, and
// warps stalled on a long scoreboard (waiting for a global load) 77-78 % of their active cycles.
// dx is 134 MB and dy with the index about 4 MB: the kernel is a stream of stores, yet in v10 and
// v13 every 16-byte store carries values chosen by a compare with the loaded index, so no store of
// an item can issue before that item's index and dy have arrived. v13's prefetch moved the wait
// (the next item's loads ahead of this item's stores), it did not remove it.
//
// The cells of disjoint windows are 0 but for the one per output that its index names. So the
// zeros do not depend on any load: a thread issues the loads of U items (U = 4 where a chunk lies
// in one output, else 2), then the zero stores of all U items' rows (a fill's stores: 32 per
// thread on kernel 8 stride 8), and only then waits for the loads, to store each named cell's dy
// as one 4-byte store. The second store goes to a line this thread has just written: program
// order within the thread orders the two stores to the same address (no race, no atomics, the same
// bits every run), and the line is still in L2, so DRAM sees the bytes of one pass. Which cell
// gets dy is decided by v10's compare, element by element (the element's own output's index names
// it), so the result is v10's bit for bit on any index, a corrupt one included: an index that
// names a cell outside its output's segment gives nothing, and that cell keeps the zero or the
// value its own output's index gives it. Chunks, alignment (V = 4, 2 or 1 elements), tails,
// padding, gaps, both index formats and v10's 64-bit item decode are v10's.
//
// Prediction, kernel 8 stride 8 (2x64x64^3): the stores of an item no longer wait, so DRAM busy
// near the fill's 81 %, about 42 us (v13 46.7), at or just past PyTorch's fill and scatter
// (0.99x-1.00x for v10 and v13 in the race). The value stores add one 4-byte store per output
// (262144 of them, 1/512 of the cells), a few percent of the instructions. On kernel 2 stride 2
// (8 cells per output) they are one store per 8 cells: no gain is expected there.
//
// Measured (H100, results/NVIDIA_H100_80GB_HBM3.v16_backward.*, one suite process): wrong. On
// kernel 8 stride 8, 0.841 of copy with the int64 index and 0.769 with the compact one, where v10
// ran 0.945 and 0.909 and v13 0.938 and 0.906 in the same process; raced as auto, 0.876x and
// 0.824x PyTorch. Nsight Compute (int64): 52.4 us against v10's 46.9 and v13's 46.4, DRAM 65.4 %
// busy against 71.7 and 72.5; 113.4 MB written (v10 111.9: the value stores cost no DRAM pass,
// as predicted). The long-scoreboard stall fell from 80.6 % (v10) to 50.5 % of the warps' active
// cycles, but the LSU's queue took its place (lg_throttle 26.6 %, v10 6.8 %: 32 16-byte stores
// issued back to back per thread, then the value loop's predicated stores), and 64 registers
// (v10 43) left 45 % of the warps resident instead of 60 %. On kernel 2 stride 2, 0.740 and 0.646
// (v10 0.847 and 0.822). Removing the wait did not make the stores stream faster: the rule keeps v13
// and v10.
#pragma once

#include "kernels/bwd_v13_prefetch_rows.cuh"  // RowItem, fetch_item, chunk_in_one_output, with_row_item_form

namespace ch06 {

// Items in flight per thread: loads of all of them issued before any of their zeros.
template <bool kOne>
inline constexpr int kZeroItems = kOne ? 4 : 2;

// The named cells of an item's rows in this thread's chunk column, each stored alone: v10's
// compare, run after the zeros.
template <int V, bool kInt64, bool kOne, class T>
TUT_HD inline void store_named(const BackwardArgs<T>& a, const RowColumn<V>& col, const RowItem<V, kOne, T>& r) {
  const Window& w = a.w;
  std::int64_t flat = r.flat;
  T* dst = r.dst;
  for (int h = r.h0; h < r.h1; ++h, flat += w.W, dst += w.W) {
    int row_cell = -1;
    if (!kInt64) {
      const int jh = place_in_window(h, r.oh, w.k[1], w.s[1], w.p[1], w.dil[1]);
      row_cell = r.jd < 0 || jh < 0 ? -1 : (r.jd * w.k[1] + jh) * w.k[2];
    }
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int l = 0; l < V; ++l) {
      const int s = kOne ? 0 : l;
      const bool named = kInt64 ? r.saved[s] == flat + l
                                : row_cell >= 0 && col.jw[l] >= 0 && r.saved[s] == row_cell + col.jw[l];
      if (named) dst[l] = r.grad[s];
    }
  }
}

// Thread t of block `blk` in a grid of `grid` blocks (v10's layout: lanes threads per item, its
// column fixed): per group of U items, every load, then every zero, then the named cells. Host and
// device (a CPU test runs every thread of small cases).
template <int V, bool kInt64, bool kOne, class T>
TUT_HD inline void zeros_then_value_thread(const BackwardArgs<T>& a, const RowArgs& ra, int t, std::int64_t blk,
                                           std::int64_t grid) {
  constexpr int U = kZeroItems<kOne>;
  const int sub = t / ra.lanes;
  if (sub >= ra.items_per_block) return;
  const std::int64_t step = grid * ra.items_per_block, first = blk * ra.items_per_block + sub;
  const std::int64_t W = a.w.W;
  for (int g = t - sub * ra.lanes; g < ra.per_row; g += ra.lanes) {
    const RowColumn<V> col = row_column<V>(a, ra, g);
    for (std::int64_t it = first; it < ra.items; it += U * step) {
      RowItem<V, kOne, T> r[U];
      bool live[U];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
      for (int u = 0; u < U; ++u) {
        live[u] = it + u * step < ra.items;
        if (live[u]) fetch_item<V, kInt64, kOne>(a, ra, col, it + u * step, r[u]);
      }
      const tut::ew::Packed<T, V> zero{};
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
      for (int u = 0; u < U; ++u) {
        if (!live[u]) continue;
        T* dst = r[u].dst;
        for (int h = r[u].h0; h < r[u].h1; ++h, dst += W) *reinterpret_cast<tut::ew::Packed<T, V>*>(dst) = zero;
      }
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
      for (int u = 0; u < U; ++u)
        if (live[u]) store_named<V, kInt64, kOne>(a, col, r[u]);
    }
  }
}

template <int V, bool kInt64, bool kOne, class T>
__global__ void __launch_bounds__(kRowBlock) bwd_v16_zeros_then_value_kernel(BackwardArgs<T> a, RowArgs ra) {
  zeros_then_value_thread<V, kInt64, kOne>(a, ra, static_cast<int>(threadIdx.x), blockIdx.x, gridDim.x);
}

template <class T>
std::string bwd_v16_refuses(const Window& w) {
  return row_writer_refuses(w, "bwd_v16_zeros_then_value");
}

template <class T>
void bwd_v16_zeros_then_value(cudaStream_t s, const BackwardArgs<T>& a) {
  check_backward(a, "bwd_v16_zeros_then_value");
  if (const std::string why = bwd_v16_refuses<T>(a.w); !why.empty()) throw tut::Unsupported(why);
  const int V = bwd_v5_pack(a);  // 4 where rows are whole 16-byte chunks and dx is aligned, else 2, else 1
  const RowArgs ra = row_args<T>(a.w, V);
  const bool int64 = a.w.indices == IndexFormat::int64, one = chunk_in_one_output(a.w, V);
  const auto launch = [&](auto v, auto i64, auto o1) {
    constexpr int kV = decltype(v)::value;
    constexpr bool kI = decltype(i64)::value, kO = decltype(o1)::value;
    static const std::int64_t resident =
        resident_blocks(TUT_KERNEL(bwd_v16_zeros_then_value_kernel<kV, kI, kO, T>), kRowBlock, 0);
    const std::int64_t needed = (ra.items + ra.items_per_block - 1) / ra.items_per_block;
    const unsigned grid = one_wave_grid(needed, resident);
    bwd_v16_zeros_then_value_kernel<kV, kI, kO, T><<<grid, kRowBlock, 0, s>>>(a, ra);
  };
  with_row_item_form(V, int64, one, launch);
  TUT_CHECK_LAUNCH("bwd_v16_zeros_then_value_kernel");
}

template <class T>
std::vector<const void*> bwd_v16_kernels() {
  std::vector<const void*> k;
  const auto add = [&](auto i64) {
    constexpr bool kI = decltype(i64)::value;
    k.push_back(TUT_KERNEL(bwd_v16_zeros_then_value_kernel<4, kI, true, T>));
    k.push_back(TUT_KERNEL(bwd_v16_zeros_then_value_kernel<4, kI, false, T>));
    k.push_back(TUT_KERNEL(bwd_v16_zeros_then_value_kernel<2, kI, true, T>));
    k.push_back(TUT_KERNEL(bwd_v16_zeros_then_value_kernel<2, kI, false, T>));
    k.push_back(TUT_KERNEL(bwd_v16_zeros_then_value_kernel<1, kI, true, T>));
  };
  add(std::true_type{});
  add(std::false_type{});
  return k;
}

}  // namespace ch06
