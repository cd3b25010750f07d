// fwd v11_columns_max: NDHWC, v10's maximum first on v9's columns. A block takes Q output items (a
// position and V channels each, consecutive in memory) and splits each item's window cells over R
// rows of its threads; each cell is one 16-byte load, and each channel's batch of cells is reduced
// with max.NaN (FMNMX.NAN) before any compare against the best so far.
//
// What changed since v9 and v7. Both apply PyTorch's rule cell by cell and channel by channel (two
// compares and two selects per value), and v9 merges its rows with `outranks`, a thread per
// channel. Nsight Compute on the H200 (results/NVIDIA_H200.gaps.ncu.*): v9 on the two NDHWC
// windows of 512 cells issues 21.95 M warp instructions for 134 MB, about 84 per warp-wide 16-byte
// load, with the issue slots 57 % busy and DRAM 70 % busy (0.748 of copy). v10 took the rule's
// compares out of v9's NCDHW runs and rose from 0.62 to 0.89 of copy there.
//
// Here:
//  - the window's cells are numbered in scan order and row g of R takes cells g, g + R, ..., a
//    batch of kB loads (16 values a thread) issued before the first max;
//  - where no index is wanted, a batch's maximum per channel goes into the best with max.NaN, and
//    the rows meet with max.NaN; a result of zero or NaN (whose sign or payload is the rule's
//    business) makes the whole block scan its items again with the cells (__syncthreads_or);
//  - with the cells, a batch's maximum is searched for its cell only when it would replace the
//    best so far (locate: the first cell equal to it, or the last NaN), PyTorch's rule batch by
//    batch, and the rows meet with `outranks` (v8's argument: any grouping, any order);
//  - the rows meet in shared memory, each thread's V values in one 16-byte store and read back by
//    consecutive threads on consecutive words; one row (R = 1) stores from its registers.
// R is chosen on the host: doubled from 1 while the doubled rows each keep a batch of cells and
// the items times the doubled R still fit one wave of the threads the launch bounds keep resident
// (4 blocks of 256 a SM; kernel 8 on 8^3: R = 8, 64 cells a thread; kernel 2 on the suite's large
// volumes: R = 1).
//
// Prediction: about 20 instructions per cell (its decode, bounds, address, load and V max.NaN)
// against v9's 84, and the NDHWC memory-bound suite cases nearer the copy ceiling. SASS: LDG.E.128
// and FMNMX.NAN (tests/test_sass.cpp).
//
// Measured (H200, one process per form with v7, v9 and auto beside it, and Nsight Compute on six
// NDHWC memory-bound cases: results/forms/v11_first.*, v11_second.*, v11_third.*). This form (the
// third): on the two windows of 512 cells 0.792 and 0.794 of copy against v9's 0.746 and 0.757;
// 19.6 M warp instructions against v9's 21.95 M, DRAM 73 % busy against 68 to 70 %, 16 % of the
// cycles at the barrier against 8 %, shared-memory bank conflicts 3.8 K against 206 K. Far from
// the prediction. The benchmark's inputs carry no NaN (tut::InstanceOptions: only the tests draw
// the special values), and on these windows no maximum is a zero, so no block scans twice: its
// global load requests are one pass's, 262,144 for 134 MB (results/forms/v11_rows.ncu.csv). On the
// windows of 8 and 64 cells v11 loses to v7 (0.590 of copy against 0.786 on 33^3 in ceil mode,
// 0.765 against 0.848 on 4^3 with kernel 4); why was not measured. The second form, which scanned
// with the cells always and never twice, reached 0.726 on the same 33^3 case and 0.857 on
// 2 x 64 x 32 x 112^2 (v7 0.943), but 0.676 on kernel 8 (v9 0.743); the first, which took the
// second pass at the block with R = 1 too, 0.42 to 0.49 on kernel 2. Auto takes v11 where it took
// v9 (NDHWC windows of at least 128 cells), and since the sweep of results/forms/ndhwc_split.* every
// disjoint NDHWC window of 64 cells or more, and half NDHWC windows of 16 or more
// (kernels/fwd_auto_rule.cuh). Not run on an H100.
//
// The rows. Until commit 2bf6ec9 the rule doubled R while the items times R fell short of two
// waves of 2048 threads a SM, which gave R = 32 on both windows of 512 cells: 16 cells a thread,
// then the block's merge at a barrier, about four waves of resident threads. With R fixed
// at 1 to 32 in one process (results/forms/v11_rows.*, H200): 0.296, 0.519, 0.768, 0.876, 0.834
// and 0.788 of copy on 8^3, and 0.860 at R = 8 on 2 x 64 x 64^3 against 0.787 at R = 32; with an
// int64 index 0.829 against 0.585. Nsight Compute: 36.5 us against 39.2. Raced against PyTorch,
// R = 8 ran 10.59x and 7.06x where the rule's R = 32 ran 9.67x and 6.51x. The rule now aims at one
// resident wave. A trial, fwd v16_nan_cells (commit c87c970), kept a NaN's cell in registers so
// that no NaN would send a block through its cells again; with no NaN in the benchmark it only
// added instructions (22.4 M warp instructions against 19.6 M, 43.5 us against 39.2) and left.
#pragma once

#include "kernels/fwd_v10_max_first.cuh"  // max_nan, max_of, locate, bits_unsure
#include "kernels/fwd_v7_channels_last.cuh"  // fwd_v7_pack

namespace ch06 {

inline constexpr int kV11Block = 256;
inline constexpr int kV11BlocksPerSm = 4;  // the launch bounds' minimum

// Loads a thread issues before its first max: 16 values (4 packs of 4 floats, 2 of 8 halves), at
// least 2 and at most 8 loads.
template <int V>
inline constexpr int kV11Batch = 16 / V < 2 ? 2 : (16 / V > 8 ? 8 : 16 / V);

template <int V, class T>
__global__ void __launch_bounds__(kV11Block, kV11BlocksPerSm)
    fwd_v11_columns_kernel(ForwardArgs<T> a, int rows_log2, FastDiv by_groups, FastDiv by_ow, FastDiv by_oh,
                           FastDiv by_od, FastDiv by_kw, FastDiv by_kh) {
  using Pack = tut::ew::Packed<T, V>;
  constexpr int kB = kV11Batch<V>;
  __shared__ Pack s_best[kV11Block];
  __shared__ int s_cell[kV11Block * V];
  const Window& w = a.w;
  const int R = 1 << rows_log2, Q = kV11Block >> rows_log2;
  const int q = static_cast<int>(threadIdx.x) & (Q - 1), g = static_cast<int>(threadIdx.x) >> (8 - rows_log2);
  const std::int64_t groups = w.C / V, items = w.N * w.out_plane() * groups;
  const bool narrow = items <= kMaxInt32, want_cell = w.indices != IndexFormat::none;
  const int cells = w.cells();
  for (std::int64_t base = blockIdx.x * static_cast<std::int64_t>(Q); base < items;
       base += static_cast<std::int64_t>(gridDim.x) * Q) {
    const std::int64_t item = base + q;
    const bool live = item < items;
    ChannelItem it{0, 0, 0, 0, 0};
    if (live) it = channel_item(item, groups, narrow, w, by_groups, by_ow, by_oh, by_od);
    const int d0 = it.od * w.s[0] - w.p[0], h0 = it.oh * w.s[1] - w.p[1], w0 = it.ow * w.s[2] - w.p[2];
    const T* x = a.x + it.n * w.in_plane() * w.C + it.g * V;

    // The row's scan. Value only: a batch's maximum per channel into the best. With the cell: the
    // batch's maximum, and its cell looked up only when it replaces the best so far (a padding cell
    // is -inf and never replaces).
    T best[V];
    int cell[V];
    const auto scan = [&](bool with_cell) {
      start_channels(w, d0, h0, w0, best, cell);
      if (!live) return;
      for (int c0 = g; c0 < cells; c0 += kB * R) {
        Pack pk[kB];
#pragma unroll
        for (int u = 0; u < kB; ++u) {
          // v7's disjoint kernel decodes its cells the same way. One shared function for both
          // changed the SASS of all 12 of their kernels (cuobjdump), whose measurements are of
          // these lines, so each keeps its own.
          const int c = c0 + u * R;
          const std::uint32_t t = by_kw.div(static_cast<std::uint32_t>(c));
          const int jw = c - static_cast<int>(t) * w.k[2];
          const int jd = static_cast<int>(by_kh.div(t)), jh = static_cast<int>(t) - jd * w.k[1];
          const int d = d0 + jd * w.dil[0], h = h0 + jh * w.dil[1], xw = w0 + jw * w.dil[2];
          const bool in = c < cells && static_cast<unsigned>(d) < static_cast<unsigned>(w.D) &&
                          static_cast<unsigned>(h) < static_cast<unsigned>(w.H) &&
                          static_cast<unsigned>(xw) < static_cast<unsigned>(w.W);
          if (in) {
            pk[u] = *reinterpret_cast<const Pack*>(x + ((static_cast<std::int64_t>(d) * w.H + h) * w.W + xw) * w.C);
          } else {
#pragma unroll
            for (int l = 0; l < V; ++l) pk[u].elem[l] = lowest<T>();
          }
        }
#pragma unroll
        for (int l = 0; l < V; ++l) {
          T v[kB];
#pragma unroll
          for (int u = 0; u < kB; ++u) v[u] = pk[u].elem[l];
          const T m = max_of(v);
          if (!with_cell) {
            best[l] = max_nan(best[l], m);
          } else if (replaces(best[l], m)) {
            int j;
            locate(v, m, j, best[l]);
            cell[l] = c0 + j * R;
          }
        }
      }
    };
    const auto unsure = [&]() {
      bool u = false;
#pragma unroll
      for (int l = 0; l < V; ++l) u |= bits_unsure(best[l]);
      return u;
    };

    if (R == 1) {  // one row (the same for the whole launch): the thread's result is its item's
      scan(want_cell);
      if (!want_cell && live && unsure()) scan(true);  // a zero or a NaN: its bits are the rule's
      if (live) store_channels<V>(a, item * V, best, cell, d0, h0, w0);
      continue;
    }

    // The rows meet in shared memory: thread e of the block merges value e of the Q * V over the R
    // rows (row gg's values of the block's items start at gg * Q * V). Returns whether a value-only
    // result was a zero or a NaN.
    const auto merge = [&](bool with_cell) {
      Pack mine;
#pragma unroll
      for (int l = 0; l < V; ++l) mine.elem[l] = best[l];
      s_best[threadIdx.x] = mine;
      if (with_cell) {
#pragma unroll
        for (int l = 0; l < V; ++l) s_cell[threadIdx.x * V + l] = cell[l];
      }
      __syncthreads();
      const T* sb = reinterpret_cast<const T*>(s_best);
      bool again = false;
      for (int e = static_cast<int>(threadIdx.x); e < Q * V; e += kV11Block) {
        if (base + e / V >= items) break;
        T mb = sb[e];
        int mc = with_cell ? s_cell[e] : 0;
        for (int gg = 1; gg < R; ++gg) {
          const T v = sb[gg * Q * V + e];
          if (!with_cell) {
            mb = max_nan(mb, v);
          } else {
            const int c = s_cell[gg * Q * V + e];
            if (outranks(v, c, mb, mc)) {
              mb = v;
              mc = c;
            }
          }
        }
        const std::int64_t o = base * V + e;
        a.y[o] = mb;
        if (!with_cell) {
          again |= bits_unsure(mb);
        } else if (w.indices == IndexFormat::int64) {
          const ChannelItem mi = channel_item(base + e / V, groups, narrow, w, by_groups, by_ow, by_oh, by_od);
          a.index[o] = flat_index_of(w, mi.od * w.s[0] - w.p[0], mi.oh * w.s[1] - w.p[1], mi.ow * w.s[2] - w.p[2], mc);
        } else if (w.indices == IndexFormat::compact) {
          if (w.compact8()) a.offset8[o] = static_cast<std::uint8_t>(mc);
          else a.offset16[o] = static_cast<std::int16_t>(mc);
        }
      }
      return again;
    };
    scan(want_cell);
    // The barrier also keeps the merge's reads before the next items' stores to shared memory.
    if (__syncthreads_or(merge(want_cell))) {  // a zero or a NaN somewhere: the block again, with cells
      scan(true);
      merge(true);
      __syncthreads();
    }
  }
}

// ---- host side -----------------------------------------------------------------------------------

template <class T>
std::string fwd_v11_refuses(const Window& w) {
  if (w.layout != Layout::ndhwc) return "fwd_v11_columns_max reads the layout NDHWC only";
  return {};
}

// log2 of R: doubled from 1 while R < 32, the doubled rows each keep at least a batch of cells, and
// the items times the doubled R fit one wave of the threads the launch bounds keep resident.
inline int fwd_v11_rows_log2(const Window& w, int V, int batch, int sms) {
  const std::int64_t items = w.N * w.out_plane() * (w.C / V),
                     wave = static_cast<std::int64_t>(sms) * kV11BlocksPerSm * kV11Block;
  int lg = 0;
  while (lg < 5 && w.cells() >= (2 << lg) * batch && items * (2 << lg) <= wave) ++lg;
  return lg;
}

template <class T>
void fwd_v11_columns_max(cudaStream_t s, const ForwardArgs<T>& a) {
  check_forward(a, "fwd_v11_columns_max");
  if (const std::string why = fwd_v11_refuses<T>(a.w); !why.empty()) throw tut::Unsupported(why);
  const Window& w = a.w;
  constexpr int kV = 16 / sizeof(T);
  const int V = fwd_v7_pack(a);  // 16 bytes where C and the pointers allow, else 8, else one element
  const int sms = device_sms();
  const std::int64_t groups = w.C / V, items = w.N * w.out_plane() * groups;
  const ChannelDivs cd = channel_divs(w, groups, items <= kMaxInt32);
  const FastDiv kw(w.k[2]), kh(w.k[1]);
  const auto go = [&](auto v) {
    constexpr int kPV = decltype(v)::value;
    const int lg = fwd_v11_rows_log2(w, kPV, kV11Batch<kPV>, sms);
    const std::int64_t per_block = kV11Block >> lg;
    const unsigned grid = grid_for((items + per_block - 1) / per_block * kV11Block, kV11Block, "fwd_v11_columns_max");
    fwd_v11_columns_kernel<kPV, T><<<grid, kV11Block, 0, s>>>(a, lg, cd.groups, cd.ow, cd.oh, cd.od, kw, kh);
  };
  if (V == kV) go(std::integral_constant<int, kV>{});
  else if (V == kV / 2) go(std::integral_constant<int, kV / 2>{});
  else go(std::integral_constant<int, 1>{});
  TUT_CHECK_LAUNCH("fwd_v11_columns_max");
}

template <class T>
std::vector<const void*> fwd_v11_kernels() {
  constexpr int kV = 16 / sizeof(T);
  return {TUT_KERNEL(fwd_v11_columns_kernel<kV, T>), TUT_KERNEL(fwd_v11_columns_kernel<kV / 2, T>),
          TUT_KERNEL(fwd_v11_columns_kernel<1, T>)};
}

}  // namespace ch06
