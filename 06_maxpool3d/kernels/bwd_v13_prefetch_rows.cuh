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
// 8 stores. Everything else is v10's: a thread's chunk column is fixed, the column's part of the
// work is done once, each element of dx is stored once, the same value as v10's.
//
// Prediction: the stores stream without the per-item gaps: DRAM busy near the fill's 81 %, about
// 42 us on kernel 8 stride 8 against v10's 47, so one pass at about a fill's speed, faster than
// PyTorch's fill plus scatter (45.9 us in Nsight Compute). Same registers plus one item's loads
// (V indices and V values). On kernel 2 stride 2 the items have 2 rows: the same prefetch.
#pragma once

#include "kernels/bwd_v10_row_writer.cuh"

namespace ch06 {

// One item's loads: where its rows are and what the chunk's outputs saved.
template <int V, class T>
struct RowItem {
  std::int64_t flat = 0;  // int64: (d*H + h0)*W + x0
  T* dst = nullptr;
  int h0 = 0, h1 = 0, oh = 0, jd = 0;
  std::int64_t saved[V];
  T grad[V];
};

template <int V, bool kInt64, class T>
TUT_HD inline void fetch_item(const BackwardArgs<T>& a, const RowArgs& ra, const RowColumn<V>& col, std::int64_t it,
                              RowItem<V, T>& r) {
  const Window& w = a.w;
  std::int64_t lead;
  int d, oh;
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
  const int od = owning_output(d, w.p[0], w.oD, ra.by_s[0]);
  r.oh = oh;
  r.jd = kInt64 ? 0 : place_in_window(d, od, w.k[0], w.s[0], w.p[0], w.dil[0]);
  r.h0 = oh == 0 ? 0 : oh * w.s[1] - w.p[1];
  r.h1 = oh == w.oH - 1 ? w.H : (oh + 1) * w.s[1] - w.p[1];
  const std::int64_t orow = ((lead * w.oD + od) * w.oH + oh) * static_cast<std::int64_t>(w.oW);
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int l = 0; l < V; ++l) {
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

template <int V, bool kInt64, class T>
TUT_HD inline void write_rows(const BackwardArgs<T>& a, const RowColumn<V>& col, const RowItem<V, T>& r) {
  const Window& w = a.w;
  std::int64_t flat = r.flat;
  T* dst = r.dst;
  for (int h = r.h0; h < r.h1; ++h, flat += w.W, dst += w.W) {
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
      const bool named = kInt64 ? r.saved[l] == flat + l
                                : row_cell >= 0 && col.jw[l] >= 0 && r.saved[l] == row_cell + col.jw[l];
      p.elem[l] = named ? r.grad[l] : T(0);
    }
    *reinterpret_cast<tut::ew::Packed<T, V>*>(dst) = p;
  }
}

template <int V, bool kInt64, class T>
__global__ void __launch_bounds__(kRowBlock) bwd_v13_prefetch_rows_kernel(BackwardArgs<T> a, RowArgs ra) {
  const int t = static_cast<int>(threadIdx.x);
  const int sub = t / ra.lanes;
  if (sub >= ra.items_per_block) return;
  const std::int64_t step = static_cast<std::int64_t>(gridDim.x) * ra.items_per_block;
  const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * ra.items_per_block + sub;
  for (int g = t - sub * ra.lanes; g < ra.per_row; g += ra.lanes) {
    const RowColumn<V> col = row_column<V>(a, ra, g);
    if (first >= ra.items) break;
    RowItem<V, T> cur, next;
    fetch_item<V, kInt64>(a, ra, col, first, cur);
    for (std::int64_t it = first; it < ra.items; it += step) {
      const bool more = it + step < ra.items;
      if (more) fetch_item<V, kInt64>(a, ra, col, it + step, next);
      write_rows<V, kInt64>(a, col, cur);
      if (more) cur = next;
    }
  }
}

template <class T>
std::string bwd_v13_refuses(const Window& w) {
  if (const std::string why = disjoint_writer_refuses(w, "bwd_v13_prefetch_rows"); !why.empty()) return why;
  if (w.layout == Layout::ndhwc && w.C > 1)
    return "bwd_v13_prefetch_rows writes rows along W: NCDHW, or NDHWC with one channel (v5 and v3 take NDHWC)";
  return {};
}

template <class T>
void bwd_v13_prefetch_rows(cudaStream_t s, const BackwardArgs<T>& a) {
  check_backward(a, "bwd_v13_prefetch_rows");
  if (const std::string why = bwd_v13_refuses<T>(a.w); !why.empty()) throw tut::Unsupported(why);
  const int V = bwd_v5_pack(a);
  const RowArgs ra = row_args<T>(a.w, V);
  const bool int64 = a.w.indices == IndexFormat::int64;
  const auto launch = [&](auto v, auto i64) {
    constexpr int kV = decltype(v)::value;
    constexpr bool kI = decltype(i64)::value;
    static const std::int64_t resident =
        resident_blocks(TUT_KERNEL(bwd_v13_prefetch_rows_kernel<kV, kI, T>), kRowBlock, 0);
    const std::int64_t needed = (ra.items + ra.items_per_block - 1) / ra.items_per_block;
    const unsigned grid = static_cast<unsigned>(std::max<std::int64_t>(1, std::min(needed, resident)));
    bwd_v13_prefetch_rows_kernel<kV, kI, T><<<grid, kRowBlock, 0, s>>>(a, ra);
  };
  const auto width = [&](auto i64) {
    if (V == 4) launch(std::integral_constant<int, 4>{}, i64);
    else if (V == 2) launch(std::integral_constant<int, 2>{}, i64);
    else launch(std::integral_constant<int, 1>{}, i64);
  };
  if (int64) width(std::true_type{});
  else width(std::false_type{});
  TUT_CHECK_LAUNCH("bwd_v13_prefetch_rows_kernel");
}

template <class T>
std::vector<const void*> bwd_v13_kernels() {
  return {TUT_KERNEL(bwd_v13_prefetch_rows_kernel<4, true, T>), TUT_KERNEL(bwd_v13_prefetch_rows_kernel<2, true, T>),
          TUT_KERNEL(bwd_v13_prefetch_rows_kernel<1, true, T>), TUT_KERNEL(bwd_v13_prefetch_rows_kernel<4, false, T>),
          TUT_KERNEL(bwd_v13_prefetch_rows_kernel<2, false, T>), TUT_KERNEL(bwd_v13_prefetch_rows_kernel<1, false, T>)};
}

}  // namespace ch06
