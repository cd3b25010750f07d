// fwd v9_run_reduce: a large window read as a plain stream, every load instruction of a warp on
// consecutive 16-byte pieces of memory, and the pieces' bests merged afterwards.
//
// What changed since v8: v8 gives an NCDHW window to one thread. On 4^3 planes with kernel 4 a
// window is a run of 64 floats; 32 threads of a warp then load 32 pieces 256 bytes apart, 32
// sectors per request, and each thread holds its eight 16-byte loads, its decode and its compares
// in 78 registers: 34 % occupancy, DRAM 72 % busy, 0.77 of copy (Nsight Compute, results/). Here
// the two layouts get the shape of the read a copy has.
//
// NCDHW, windows whose cells are one contiguous run of each plane: kW = W with no padding along W,
// and either kH = H with no padding along H, or kD = 1 (global pooling is the common case: the
// window is the whole volume). G lanes (a power of two up to 32) share one window; lane r loads
// the run's pieces r, r + G, r + 2G, ..., so the lanes of a window read consecutive 16-byte
// pieces, every sector whole, and a lane has at least 4 of them in flight (G = pieces / 4: 4 lanes
// on a run of 64 floats, 32 on a run of 512). Each lane scans its pieces in order with PyTorch's
// rule, and the G lanes merge with `outranks` in an XOR butterfly (v8's order: a maximum, whatever
// the grouping). A window's cell is its offset in the run (kW = W, and kH = H or kD = 1, make scan
// order the memory order).
//
// NDHWC, any undilated window: a block takes one output position and CW groups of V channels
// (CW lanes, 8 to 32), and splits the window's cells over R = 128 / CW rows of threads: row g
// takes cells g, g + R, ..., each one CW x 16-byte load, contiguous along C. The rows' bests meet
// in shared memory, merged with `outranks` by one thread per channel. CW shrinks until there are
// blocks for two waves of the device, so a few large windows (256 planes of 8^3) still fill it.
//
// Prediction: both layouts read each input byte once in fully used sectors with 8 loads in flight
// per thread; on the memory-bound suite cases with windows of 64 and 512 cells, near the copy
// ceiling (>= 0.85). SASS: LDG.E.128 in both, SHFL.BFLY in NCDHW, BAR in NDHWC (tests/test_sass.cpp).
//
// Measured, first form (H100, results/forms/fourth.*): in NCDHW the first form gave a window
// G = pieces lanes (at most 32) and, where that left a lane 2 pieces or fewer, 4 windows per lane.
// On runs of 512 floats (256 planes of 8^3, kernel 8) 0.849 of copy against v8's 0.735: 52.0 us,
// DRAM 78.5 % busy, 35.9 M warp instructions. On runs of 64 (1024 x 512 planes of 4^3, kernel 4)
// 0.343 against v8's 0.790: 16 lanes per window and 4 windows per lane cost 68.2 M warp
// instructions (the butterfly's 4 rounds for each of the 4 windows, about 1040 per warp) in 97
// registers, 23.5 % of the warps resident, DRAM 31 % busy: bound by its instructions. Hence G =
// pieces / 4 (the 512-float runs keep their 32 lanes; the 64-float runs get 4 lanes, 8 windows
// per warp, 2 butterfly rounds). In NDHWC 0.812 of copy on 4^3 with kernel 4 (v7 0.810), 0.794 on
// 8^3 with kernel 8 (v8 0.672), 0.797 on 2 x 64 x 64^3 with kernel 8 (v8 0.678): 53.6 to 55.2 us,
// DRAM 74 to 77 % busy, 80 registers, 36 % of the warps resident, 13 to 24 % of the cycles at the
// block's barrier. Not the ceiling: the blocks are short (8 to 16 loads per thread, then the
// merge), and the merge's barrier and one-thread-per-channel loop leave the loads idle.
//
// Measured, this form (H100 suite run, results/): on runs of 64 floats 0.890 of copy (v8 0.790
// in the first run), Nsight Compute 49.7 us, DRAM 82.8 % busy, 31.2 M warp instructions (0.46 of
// the first form's); on runs of 512, 0.848 (51.0 us, DRAM 80.0 %, the same 32 lanes as before).
// NDHWC (code unchanged): 0.813, 0.789 and 0.789 of copy, 53.8 to 56.1 us.
//
// NDHWC, whole waves. Both 512-cell NDHWC suite cases (256 planes of 8^3 with C = 256, and
// 2 x 64^3 with C = 64, kernel 8 stride 8) come to 2048 blocks. With blocks of 256 threads in 80
// registers, 3 fit on an SM: 396 at a time, 5.17 waves (Nsight Compute's "Waves Per SM"), the
// last one a sixth full, and 35.7 % of the warps resident; DRAM 64.7 % busy over 63.2 us under
// the profiler. The rule that picks CW already counts on 8 blocks per SM, so the blocks are now
// 128 threads held to 64 registers (__launch_bounds__(128, 8), 4 cells in flight per thread
// instead of 8, which would spill at that bound): 1056 at a time, 2048 blocks in 1.94 waves.
// Prediction: the tail goes, so nearer the copy ceiling. Measured (H100, one process, the old
// and new forms side by side, results/NVIDIA_H100_80GB_HBM3.v9_waves.txt): 0.796 and 0.799 of
// copy before, 0.857 and 0.855 after. The forms between: 128 threads with 8 cells in flight in 80
// registers (6 blocks per SM, 2.59 waves) 0.805 and 0.809; 4 cells without the bound (92
// registers, 5 per SM) 0.769 on both. A first try held blocks of 256 to 64 registers with 8 cells
// (4 per SM, 3.88 waves): 76 bytes spilt and 0.568 (results/forms/fwd_r8_first.*, where that form
// is named v9_run_reduce and the old one x_v9_before). Nsight Compute on 2 x 64^3 (results/
// NVIDIA_H100_80GB_HBM3.r8.ncu.csv): 51.1 us, DRAM 79.8 % busy, 46.7 % of the warps resident,
// 5.9 % of the cycles at the barrier, against 56.1 us, 72.8 %, 35.6 % and 24.1 % before.
#pragma once

#include "kernels/fwd_v8_wide_loads.cuh"  // take, combine_lanes, pow2_at_most

namespace ch06 {

// Whether the cells of every window are one contiguous run of its plane in NCDHW, in scan order.
inline bool window_is_one_run(const Window& w) {
  if (w.dilated() || w.k[2] != w.W || w.p[2] != 0) return false;
  return (w.k[1] == w.H && w.p[1] == 0) || w.k[0] == 1;
}

// ---- NCDHW ---------------------------------------------------------------------------------------

// Output o's run (NCDHW, a window that is one run of its plane): where its inside part starts in
// x, how many pieces of V it holds, and the window cell of its first element. Every window holds a
// cell (window_of), so count >= 1.
template <class T>
struct RunOf {
  const T* x;
  int lo, count, first;
};
template <int V, class T>
__device__ __forceinline__ RunOf<T> run_of(const ForwardArgs<T>& a, std::int64_t o, bool narrow, FastDiv by_oh,
                                           FastDiv by_od) {
  const Window& w = a.w;
  std::int64_t pl;
  int od, oh;
  if (narrow) {
    const std::uint32_t q = by_oh.div(static_cast<std::uint32_t>(o));
    oh = static_cast<int>(static_cast<std::uint32_t>(o) - q * w.oH);
    const std::uint32_t q2 = by_od.div(q);
    od = static_cast<int>(q - q2 * w.oD);
    pl = q2;
  } else {
    oh = static_cast<int>(o % w.oH);
    od = static_cast<int>(o / w.oH % w.oD);
    pl = o / w.oH / w.oD;
  }
  const int d0 = od * w.s[0] - w.p[0], h0 = oh * w.s[1] - w.p[1];
  const int dlo = max(d0, 0), dhi = min(d0 + w.k[0], w.D), hlo = max(h0, 0), hhi = min(h0 + w.k[1], w.H);
  const int start = (d0 * w.H + h0) * w.W;  // where cell 0 would be (in the padding if d0 or h0 < 0)
  RunOf<T> run;
  run.lo = (dlo * w.H + hlo) * w.W;
  run.count = (((dhi - 1) * w.H + hhi) * w.W - run.lo) / V;
  run.first = run.lo - start;
  run.x = a.x + pl * w.in_plane() + run.lo;
  return run;
}

// Lane r of the G that share a run scans its pieces r, r + G, r + 2G, ... in order with PyTorch's
// rule, kBatch of them loaded before the first compare.
template <int V, class T>
__device__ __forceinline__ void scan_run(const T* x, int count, int first, int pieces, int G, int r, T& best,
                                         int& cell) {
  using Pack = tut::ew::Packed<T, V>;
  for (int p0 = 0; p0 < pieces; p0 += kBatch * G) {
    Pack v[kBatch];
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      const int piece = p0 + b * G + r;
      if (piece < count) v[b] = *reinterpret_cast<const Pack*>(x + static_cast<std::int64_t>(piece) * V);
    }
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      const int piece = p0 + b * G + r;
      if (piece < count) {
#pragma unroll
        for (int l = 0; l < V; ++l) take(v[b].elem[l], first + piece * V + l, best, cell);
      }
    }
  }
}

// The lane that stores output o's result (r == 0): y, and the index in the case's format.
template <class T>
__device__ __forceinline__ void store_run(const ForwardArgs<T>& a, std::int64_t o, int lo, int first, T best, int cell) {
  const Window& w = a.w;
  a.y[o] = best;
  if (w.indices == IndexFormat::int64) a.index[o] = static_cast<std::int64_t>(lo - first) + cell;
  else if (w.indices == IndexFormat::compact) {
    if (w.compact8()) a.offset8[o] = static_cast<std::uint8_t>(cell);
    else a.offset16[o] = static_cast<std::int16_t>(cell);
  }
}

// Thread (warp, lane): lane = group * G + r. Per round a warp takes 32 / G consecutive outputs,
// output `group` of the round is this group's. Every lane of a warp runs the same rounds (the
// butterfly needs all 32).
template <int V, class T>
__global__ void __launch_bounds__(256) fwd_v9_runs_kernel(ForwardArgs<T> a, int groups_log2, int pieces,
                                                         FastDiv by_oh, FastDiv by_od) {
  const Window& w = a.w;
  const int G = 32 >> groups_log2, lane = static_cast<int>(threadIdx.x) & 31, r = lane & (G - 1),
            group = lane / G;
  const std::int64_t total = w.out_numel(), per_round = 32 / G;
  const bool narrow = total <= kMaxInt32;
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * (blockDim.x / 32);
  for (std::int64_t base = (blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x) / 32 * per_round;
       base < total; base += warps * per_round) {
    const std::int64_t o = base + group;
    RunOf<T> run{a.x, 0, 0, 0};  // no run: the lanes past the last output scan nothing
    if (o < total) run = run_of<V>(a, o, narrow, by_oh, by_od);
    T best = lowest<T>();
    int cell = -1;
    scan_run<V>(run.x, run.count, run.first, pieces, G, r, best, cell);
    combine_lanes(best, cell, G);
    if (r == 0 && o < total) store_run(a, o, run.lo, run.first, best, cell);
  }
}

// ---- NDHWC ---------------------------------------------------------------------------------------

inline constexpr int kV9Block = 128, kV9Batch = 4;  // threads per block; cells a thread loads before comparing

// Block b: output position b / tiles, channel tile b % tiles (CW groups of V channels). Thread
// t = g * CW + col: row g of R, column col.
template <int V, class T>
__global__ void __launch_bounds__(kV9Block, 8) fwd_v9_columns_kernel(ForwardArgs<T> a, int cw, int rows, std::int64_t tiles,
                                                                 FastDiv by_kw, FastDiv by_kh) {
  using Pack = tut::ew::Packed<T, V>;
  __shared__ T s_best[kV9Block * V];
  __shared__ int s_cell[kV9Block * V];
  const Window& w = a.w;
  const int col = static_cast<int>(threadIdx.x) % cw, g = static_cast<int>(threadIdx.x) / cw;
  const std::int64_t groups = w.C / V, work = w.N * w.out_plane() * tiles;
  const int cells = w.cells();
  for (std::int64_t b = blockIdx.x; b < work; b += gridDim.x) {
    const std::int64_t pos = b / tiles, grp = (b - pos * tiles) * cw + col;  // (n, od, oh, ow); channel group
    const int ow = static_cast<int>(pos % w.oW), oh = static_cast<int>(pos / w.oW % w.oH),
              od = static_cast<int>(pos / w.oW / w.oH % w.oD);
    const std::int64_t n = pos / w.oW / w.oH / w.oD;
    const int d0 = od * w.s[0] - w.p[0], h0 = oh * w.s[1] - w.p[1], w0 = ow * w.s[2] - w.p[2];
    const T* x = a.x + n * w.in_plane() * w.C + grp * V;
    T best[V];
    int cell[V];
#pragma unroll
    for (int l = 0; l < V; ++l) {
      best[l] = lowest<T>();
      cell[l] = -1;
    }
    if (g < rows && grp < groups) {
      for (int c0 = g; c0 < cells; c0 += kV9Batch * rows) {
        Pack v[kV9Batch];
        bool in[kV9Batch];
#pragma unroll
        for (int u = 0; u < kV9Batch; ++u) {
          const int c = c0 + u * rows;
          const std::uint32_t t = by_kw.div(static_cast<std::uint32_t>(c));
          const int jw = c - static_cast<int>(t) * w.k[2];
          const int jd = static_cast<int>(by_kh.div(t)), jh = static_cast<int>(t) - jd * w.k[1];
          const int d = d0 + jd, h = h0 + jh, xw = w0 + jw;
          in[u] = c < cells && static_cast<unsigned>(d) < static_cast<unsigned>(w.D) &&
                  static_cast<unsigned>(h) < static_cast<unsigned>(w.H) && static_cast<unsigned>(xw) < static_cast<unsigned>(w.W);
          if (in[u]) v[u] = *reinterpret_cast<const Pack*>(x + ((static_cast<std::int64_t>(d) * w.H + h) * w.W + xw) * w.C);
        }
#pragma unroll
        for (int u = 0; u < kV9Batch; ++u)
          if (in[u]) {
#pragma unroll
            for (int l = 0; l < V; ++l) take(v[u].elem[l], c0 + u * rows, best[l], cell[l]);
          }
      }
    }
#pragma unroll
    for (int l = 0; l < V; ++l) {
      s_best[threadIdx.x * V + l] = best[l];
      s_cell[threadIdx.x * V + l] = cell[l];
    }
    __syncthreads();
    // Thread t < cw * V merges channel t of the tile over the rows.
    if (static_cast<int>(threadIdx.x) < cw * V) {
      const int mc = static_cast<int>(threadIdx.x) / V, ml = static_cast<int>(threadIdx.x) % V;
      T mb = s_best[mc * V + ml];
      int mcell = s_cell[mc * V + ml];
      for (int gg = 1; gg < rows; ++gg) {
        const T v = s_best[(gg * cw + mc) * V + ml];
        const int c = s_cell[(gg * cw + mc) * V + ml];
        if (outranks(v, c, mb, mcell)) {
          mb = v;
          mcell = c;
        }
      }
      const std::int64_t mg = (b - pos * tiles) * cw + mc;
      if (mg < groups) {
        const std::int64_t o = pos * w.C + mg * V + ml;
        a.y[o] = mb;
        if (w.indices == IndexFormat::int64) a.index[o] = flat_index_of(w, d0, h0, w0, mcell);
        else if (w.indices == IndexFormat::compact) {
          if (w.compact8()) a.offset8[o] = static_cast<std::uint8_t>(mcell);
          else a.offset16[o] = static_cast<std::int16_t>(mcell);
        }
      }
    }
    __syncthreads();
  }
}

// ---- host side -----------------------------------------------------------------------------------

template <class T>
std::string fwd_v9_refuses(const Window& w) {
  if (w.dilated()) return "fwd_v9_run_reduce takes dilation 1 only";
  if (!plane_fits_32_bits(w)) return "fwd_v9_run_reduce indexes a plane in 32 bits; this one is larger";
  if (w.layout == Layout::ncdhw && !window_is_one_run(w))
    return "fwd_v9_run_reduce takes, in NCDHW, windows that are one run of the plane (kW = W, and kH = H or kD = 1, "
           "no padding along W or H)";
  return {};
}

// NCDHW: the piece width (16 bytes when every run starts on a 16-byte boundary: W a multiple of
// V and x aligned; the run is whole rows).
template <class T>
int fwd_v9_piece(const ForwardArgs<T>& a) {
  constexpr int kV = 16 / sizeof(T);
  for (int V : {kV, 2})
    if (a.w.W % V == 0 && reinterpret_cast<std::uintptr_t>(a.x) % (V * sizeof(T)) == 0) return V;
  return 1;
}

// The launch of a runs kernel (v9's, v10's): pieces of V = fwd_v9_piece, and G lanes per window,
// the largest power of two <= pieces / per_lane, at most 32, so that a lane has at least per_lane
// pieces of its window in flight (v9, 4 per lane: a run of 64 floats takes 4 lanes; of 512, 32).
// `launch(V, grid, log2 of 32 / G, pieces, by_oh, by_od)` launches the kernel for V (an
// integral_constant) on blocks of 256.
template <class T, class Launch>
void launch_runs(const ForwardArgs<T>& a, int per_lane, const char* who, Launch launch) {
  const Window& w = a.w;
  constexpr int kV = 16 / sizeof(T);
  const int V = fwd_v9_piece(a);
  const int pieces = w.k[0] * w.k[1] * (w.W / V);  // the longest run, in pieces (W % V == 0)
  const int G = pow2_at_most(std::max(1, pieces / per_lane), 32);
  int log2 = 0;
  while ((32 >> log2) != G) ++log2;
  const bool narrow = w.out_numel() <= kMaxInt32;
  const FastDiv oh = narrow ? FastDiv(w.oH) : FastDiv(), od = narrow ? FastDiv(w.oD) : FastDiv();
  const std::int64_t warps = (w.out_numel() + (32 / G) - 1) / (32 / G);
  const unsigned grid = grid_for(warps * 32, 256, who);
  const auto go = [&](auto v) { launch(v, grid, log2, pieces, oh, od); };
  if (V == kV) go(std::integral_constant<int, kV>{});
  else if (V == 2) go(std::integral_constant<int, 2>{});
  else go(std::integral_constant<int, 1>{});
}

// NDHWC: CW column lanes per row (32, 16 or 8, at most the channel groups rounded up to a power of
// two), halved while the blocks would not fill two waves of 8 blocks per SM (the kernel's launch
// bound); R = 128 / CW rows, at most the cells rounded up to a power of two.
struct V9Columns {
  int cw = 32, rows = 8;
  std::int64_t tiles = 1;
};
inline V9Columns fwd_v9_columns(const Window& w, int V, int sms) {
  const std::int64_t groups = w.C / V, positions = w.N * w.out_plane();
  V9Columns c;
  c.cw = 1;
  while (c.cw < 32 && c.cw < groups) c.cw *= 2;
  const auto tiles = [&](int cw) { return (groups + cw - 1) / cw; };
  while (c.cw > 8 && positions * tiles(c.cw) < 2LL * 8 * sms) c.cw /= 2;
  c.tiles = tiles(c.cw);
  c.rows = 1;
  while (c.rows * 2 <= kV9Block / c.cw && c.rows < w.cells()) c.rows *= 2;
  return c;
}

template <class T>
void fwd_v9_run_reduce(cudaStream_t s, const ForwardArgs<T>& a) {
  check_forward(a, "fwd_v9_run_reduce");
  if (const std::string why = fwd_v9_refuses<T>(a.w); !why.empty()) throw tut::Unsupported(why);
  const Window& w = a.w;
  constexpr int kV = 16 / sizeof(T);
  if (w.layout == Layout::ncdhw) {
    launch_runs(a, 4, "fwd_v9_run_reduce", [&](auto v, unsigned grid, int log2, int pieces, FastDiv oh, FastDiv od) {
      fwd_v9_runs_kernel<decltype(v)::value, T><<<grid, 256, 0, s>>>(a, log2, pieces, oh, od);
    });
  } else {
    const int V = fwd_v8_pack(a);  // v7's pack rule: C a multiple of V, x and y aligned
    const V9Columns c = fwd_v9_columns(w, V, device_sms());
    const std::int64_t work = w.N * w.out_plane() * c.tiles;
    const unsigned grid = static_cast<unsigned>(std::min<std::int64_t>(work, std::int64_t{1} << 30));
    const FastDiv kw(w.k[2]), kh(w.k[1]);
    const int block = c.cw * c.rows;
    if (V == kV) fwd_v9_columns_kernel<kV, T><<<grid, block, 0, s>>>(a, c.cw, c.rows, c.tiles, kw, kh);
    else if (V == 2) fwd_v9_columns_kernel<2, T><<<grid, block, 0, s>>>(a, c.cw, c.rows, c.tiles, kw, kh);
    else fwd_v9_columns_kernel<1, T><<<grid, block, 0, s>>>(a, c.cw, c.rows, c.tiles, kw, kh);
  }
  TUT_CHECK_LAUNCH("fwd_v9_run_reduce");
}

template <class T>
std::vector<const void*> fwd_v9_kernels() {
  constexpr int kV = 16 / sizeof(T);
  return {TUT_KERNEL(fwd_v9_runs_kernel<kV, T>), TUT_KERNEL(fwd_v9_runs_kernel<1, T>),
          TUT_KERNEL(fwd_v9_columns_kernel<kV, T>),
          TUT_KERNEL(fwd_v9_columns_kernel<1, T>)};
}

}  // namespace ch06
