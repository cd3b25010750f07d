// bwd v25_clean_counters and v26_marked_sectors: v24's scatter, with counters nobody zeroes.
//
// Why. On kernel 8 stride 1, 1 x 16 x 64^3, int64 (results/NVIDIA_H200.v24.kept.ncu.csv, the L2 left
// as the kernel before left it), v24's three kernels took 17.2 + 20.2 + 12.7 us against PyTorch's
// 45.7 us for the whole backward (the same session's race): the scatter alone was already faster
// than PyTorch's atomic scatter, and the two kernels around it cost more than PyTorch's fill of dx.
// Kernel 1 writes 33.5 MB of zeros to the counters (35.3 MB written to DRAM) to read 11.9 MB of dy;
// kernel 3 reads those 33.5 MB back, although few cells ever receive a term: where windows overlap,
// neighbouring windows share their maximum, and on random data about (2 / (k + 1))^3 of the cells
// are some window's maximum, 1 % for k = 8.
//
// v25: the launch leaves the counters as it found them, zero. The scratch is zeroed once when it is
// allocated (tut::Workspace does), kernel 1 only reads dy, and kernel 3 stores zeros over each pair
// of counters it read that was not zero. Kernel 1's 33.5 MB of writes become the few lines the
// scatter touched. The price is a contract: the scratch must be zero before the first launch and
// must not be shared by two launches in flight at once; a launch that fails part-way leaves it dirty.
//
// v26: also a bit per 4 consecutive cells (32 bytes of counters), set by the scatter next to each
// add (one more reduction, RED.E.OR). Kernel 3 reads the bits, a warp 4 words (512 cells) at a time,
// reads and re-zeroes only the counters of marked sectors, clears the words it read, and writes
// zeros over the rest of dx: it reads the counters some output reached instead of all of them.
//
// Prediction (before any run), the same case: kernel 1 from 17.2 us to about dy's read (11.9 MB,
// 3 to 4 us); v25's kernel 3 near v24's (it still reads every counter, now from DRAM); v26's kernel 3
// dx's 16.8 MB of stores and about 4 % of the counters, about 5 us; the scatter within a few percent
// of v24's (v26: one more reduction per add). So v25 about 0.97x PyTorch and v26 about 1.3x.
//
// Measured (H200; kernel times with the L2 kept, all three versions in one session,
// results/forms/v25_first.kept.ncu.csv; races results/NVIDIA_H200.v25_race.txt; sweep
// results/NVIDIA_H200.v25_sweep.txt):
//   v25: kernel 1 8.0 us (v24 17.0), the scatter 21.5 (v24 19.7), the rounding 15.0 (v24 12.8):
//        kernel 1 halved, not quartered. Raced 1.011x PyTorch (1.044x compact) where v24 ran
//        0.859x (0.897x). The fastest deterministic version on kernels 4 to 8 of the sweep, so auto
//        takes it there. On kernel 3 stride 1 it lost to v24 (0.700x against 0.754x): an eighth of
//        the cells are reached there, and the rounding's stores of zeros took it from v24's 52.9 us
//        to 114.6 (results/forms/v25_first_s1.kept.ncu.csv).
//   v26: the rounding read 1.0 MB from DRAM (v25 23.6) but took 12.0 us, and the scatter took 33.7
//        us: raced 0.864x (0.943x compact), behind v25 on every kernel of the sweep. Wrong; auto
//        does not take it. Its scatter issued 7 % more instructions than v25's at the same
//        occupancy, and its warps waited on loads 38.9 % of the time against 24.1 %
//        (results/NVIDIA_H200.v26.ncu.txt); the reductions themselves hold 0.9 % of the stall
//        samples (.v26_source.txt).
//
// Limits: v21's. Scratch: v21's, and for v26 a bit per 4 cells of every plane.
#pragma once

#include "kernels/bwd_v23_lane_runs.cuh"

#include <cstdint>

namespace ch06 {

inline constexpr int kMarkWordsPerWarp = 4;  // words of marks a warp reads before it loads counters

// Four consecutive counters from cell c of a plane of n cells (those past n read as zero), by two
// 16-byte loads where the plane's counters start on 16 bytes and all four are in it.
__device__ __forceinline__ void load_quad(const unsigned long long* cp, std::uint32_t c, std::uint32_t n, bool pairs,
                                          unsigned long long (&q)[4]) {
  if (pairs && c + 4 <= n) {
    const ulonglong2 lo = __ldcs(reinterpret_cast<const ulonglong2*>(cp + c));
    const ulonglong2 hi = __ldcs(reinterpret_cast<const ulonglong2*>(cp + c) + 1);
    q[0] = lo.x, q[1] = lo.y, q[2] = hi.x, q[3] = hi.y;
    return;
  }
#pragma unroll
  for (int j = 0; j < 4; ++j) q[j] = c + j < n ? __ldcs(cp + c + j) : 0ull;
}

__device__ __forceinline__ void zero_quad(unsigned long long* cp, std::uint32_t c, std::uint32_t n, bool pairs) {
  if (pairs && c + 4 <= n) {
    reinterpret_cast<ulonglong2*>(cp + c)[0] = make_ulonglong2(0, 0);
    reinterpret_cast<ulonglong2*>(cp + c)[1] = make_ulonglong2(0, 0);
    return;
  }
#pragma unroll
  for (int j = 0; j < 4; ++j)
    if (c + j < n) cp[c + j] = 0;
}

// 3 for v26. Lane l of a warp takes cells 128 i + 4 l .. + 3 of each word i of marks it reads: their
// rounded sums where the bit is set (and then zeros over those counters), else zeros. `pairs`: the
// plane's counters start on 16 bytes (an even plane); dx is stored 16 bytes at a time where each
// plane's dx starts on 16 bytes (a plane a multiple of 4, dx aligned), else element by element.
template <class T>
__global__ void __launch_bounds__(kGlobBlock)
    bwd_v26_round_kernel(const BackwardArgs<T> a, const GlobArgs g, const int2* __restrict__ scale,
                         unsigned long long* __restrict__ counters, bool pairs) {
  const Window& w = a.w;
  const auto plane_in = static_cast<std::uint32_t>(w.in_plane());
  const int lane = threadIdx.x % 32;
  const std::uint32_t warp = blockIdx.x * (kGlobBlock / 32) + threadIdx.x / 32;
  const std::uint32_t warps = gridDim.x * (kGlobBlock / 32);
  const bool quads = plane_in % 4 == 0 && reinterpret_cast<std::uintptr_t>(a.dx) % 16 == 0;
  for (std::int64_t nc = g.first + blockIdx.y; nc < g.first + g.count; nc += gridDim.y) {
    const int2 sc = scale[nc];
    const std::int64_t ibase = nc * plane_in;
    if (!sc.y) {  // the scatter skipped this plane: its counters and marks are untouched, still zero
      for (std::uint32_t r = blockIdx.x * kGlobBlock + threadIdx.x; r < plane_in; r += gridDim.x * kGlobBlock)
        a.dx[ibase + r] = gather_one<false>(a, g.dv, ibase + r);
      continue;
    }
    unsigned long long* cp = counters + (nc - g.first) * plane_in;
    unsigned* mp = g.marks + (nc - g.first) * g.mark_words;
    T* dx = a.dx + ibase;
    for (std::uint32_t w0 = warp * kMarkWordsPerWarp; w0 < g.mark_words; w0 += warps * kMarkWordsPerWarp) {
      unsigned m[kMarkWordsPerWarp];
#pragma unroll
      for (int u = 0; u < kMarkWordsPerWarp; ++u) m[u] = w0 + u < g.mark_words ? __ldcs(mp + w0 + u) : 0u;  // one address per warp
      unsigned long long q[kMarkWordsPerWarp][4];
#pragma unroll
      for (int u = 0; u < kMarkWordsPerWarp; ++u) {
        const std::uint32_t c = (w0 + u) * 128 + 4 * lane;
        if ((m[u] >> lane) & 1u) load_quad(cp, c, plane_in, pairs, q[u]);
        else q[u][0] = q[u][1] = q[u][2] = q[u][3] = 0;
      }
#pragma unroll
      for (int u = 0; u < kMarkWordsPerWarp; ++u) {
        const std::uint32_t c = (w0 + u) * 128 + 4 * lane;
        if (w0 + u >= g.mark_words || c >= plane_in) continue;
        const bool marked = (m[u] >> lane) & 1u;
        float v[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) v[j] = marked ? fixed_to_float(static_cast<long long>(q[u][j]), sc.x) : 0.0f;
        if (quads) {
          reinterpret_cast<float4*>(dx + c)[0] = make_float4(v[0], v[1], v[2], v[3]);
        } else {
#pragma unroll
          for (int j = 0; j < 4; ++j)
            if (c + j < plane_in) dx[c + j] = v[j];
        }
        if (marked) zero_quad(cp, c, plane_in, pairs);
      }
      if (lane == 0) {
#pragma unroll
        for (int u = 0; u < kMarkWordsPerWarp; ++u)
          if (m[u] != 0) mp[w0 + u] = 0;
      }
    }
  }
}

// v25's counters: not zeroed first, left zero by v21's rounding with Clean, Unroll loads of two
// cells in flight a thread (v27: 8).
template <int Unroll = kGlobUnroll>
struct CleanCountersOf {
  static constexpr bool marks = false;
  template <class T>
  static auto scale() { return &bwd_v21_scale_kernel<false, T>; }
  template <class T>
  static auto round() { return &bwd_v21_round_kernel<false, true, T, Unroll>; }
  static std::int64_t round_parts(const Window& w) { return glob_round_parts(w, Unroll); }
};
using CleanCounters = CleanCountersOf<>;

// v26's: the same, with marks; kernel 3 a warp per kMarkWordsPerWarp words.
struct MarkedCounters {
  static constexpr bool marks = true;
  template <class T>
  static auto scale() { return &bwd_v21_scale_kernel<false, T>; }
  template <class T>
  static auto round() { return &bwd_v26_round_kernel<T>; }
  static std::int64_t round_parts(const Window& w) {
    constexpr std::int64_t words = kGlobBlock / 32 * kMarkWordsPerWarp;  // a block's per step
    return (glob_mark_words(w) + words - 1) / words;
  }
};

// Occupancy, tried on the H200 (results/forms/v25_min.*, commit ff5c864): the scatter asked for 5
// blocks of 256 threads per SM (48 registers) ran 22.7 us under Nsight Compute against 20.6 as it is
// (62 registers, 4 blocks), and raced 0.974x and 0.995x PyTorch where v25 ran 1.007x and 1.019x; 6
// blocks (40 registers and a stack) 29.2 us, 0.773x. Not taken.
template <class T>
std::string bwd_v25_refuses(const Window& w) {
  return fixed_point_refuses(w, "bwd_v25_clean_counters");
}

template <class T>
std::size_t bwd_v25_scratch_bytes(const Window& w) {
  return glob_scratch(w, w.N * w.C, kGlobMaxParts).bytes;
}

template <class T>
void bwd_v25_clean_counters(cudaStream_t s, const BackwardArgs<T>& a, void* scratch, std::size_t scratch_bytes) {
  glob_run<CleanCounters, FlatScatter>(s, a, scratch, scratch_bytes, "bwd_v25_clean_counters", a.w.N * a.w.C, kGlobMaxParts);
}

template <class T>
std::vector<const void*> bwd_v25_kernels() {
  return glob_kernels<CleanCounters, FlatScatter, T>();
}

template <class T>
std::string bwd_v26_refuses(const Window& w) {
  return fixed_point_refuses(w, "bwd_v26_marked_sectors");
}

template <class T>
std::size_t bwd_v26_scratch_bytes(const Window& w) {
  return glob_scratch(w, w.N * w.C, kGlobMaxParts, true).bytes;
}

template <class T>
void bwd_v26_marked_sectors(cudaStream_t s, const BackwardArgs<T>& a, void* scratch, std::size_t scratch_bytes) {
  glob_run<MarkedCounters, MarkScatter>(s, a, scratch, scratch_bytes, "bwd_v26_marked_sectors", a.w.N * a.w.C, kGlobMaxParts);
}

template <class T>
std::vector<const void*> bwd_v26_kernels() {
  return glob_kernels<MarkedCounters, MarkScatter, T>();
}

// bwd v27_early_loads: v25 with nothing waiting on one thing at a time.
// Why (H200, kernel 8 stride 1; results/NVIDIA_H200.v26.ncu.txt): v25's scatter stalled at a
// barrier 14.8 % of the time, its warps waiting while warp 0 merged the plane's 64 partials into the
// scale before any output was loaded; its rounding waited on a load 66.3 % of the time, a thread
// with 4 loads of 16 bytes in flight.
// How: the scatter loads each warp's first 128 outputs of a plane before the block's barrier on the
// scale (EarlyScatter), and the rounding keeps 8 loads in flight a thread instead of 4, half the
// blocks (CleanCountersOf<8>). Every sum is v25's: the same bits.
// Prediction (before any run): the scatter's 20.5 us and the rounding's 15.6 us (caches flushed)
// each down by 1 to 2 us; about 1.05x PyTorch on kernel 8 stride 1.
// Measured (H200, results/forms/v27.*, the L2 kept, one session): wrong on both. The scatter took
// 24.6 us against v25's 21.4, the rounding 15.7 against 15.1; raced 0.949x PyTorch where v25 ran
// 0.986x (0.979x and 1.032x compact); slower than v25 on kernels 6 and 8, level on 4. Auto does not
// take it.
template <class T>
std::string bwd_v27_refuses(const Window& w) {
  return fixed_point_refuses(w, "bwd_v27_early_loads");
}

using DeepCleanCounters = CleanCountersOf<2 * kGlobUnroll>;

template <class T>
void bwd_v27_early_loads(cudaStream_t s, const BackwardArgs<T>& a, void* scratch, std::size_t scratch_bytes) {
  glob_run<DeepCleanCounters, EarlyScatter>(s, a, scratch, scratch_bytes, "bwd_v27_early_loads", a.w.N * a.w.C, kGlobMaxParts);
}

template <class T>
std::vector<const void*> bwd_v27_kernels() {
  return glob_kernels<DeepCleanCounters, EarlyScatter, T>();
}

}  // namespace ch06
