// bwd v21_fixed_point_global: v19's exact integers, added where the scatter adds, in global memory.
//
// Why. v19 made the scatter deterministic by adding each dy as a 63-bit fixed-point integer, but a
// block must see every output that reaches its tile of dx in shared memory: on kernel 8 stride 1
// each output is read 2.54 times per pass over two passes, and it took 62.4 M warp instructions
// (results/NVIDIA_H100_80GB_HBM3.v19.ncu.txt). Here the counters are in global memory, one 64-bit
// integer per dx cell, so each output is read once, as in the atomic scatter (v0), and its integer
// goes straight to the cell its index names with the native 64-bit RED.ADD. Integer addition is
// associative: any order of those adds gives the same sum, so dx has the same bits on every run.
//
// Three kernels, per (n, c) plane:
//   1. scale: the plane's dy, their top bit and lowest set bit (as in v19's pass 1), a partial per
//      block; the same grid zeroes the counters;
//   2. scatter: each block merges its plane's partials into the scale 2^unit, unit = top - 51 (v19's
//      rule: at most 2048 terms per cell keep every sum below 2^62); a warp takes 32 consecutive
//      outputs, and the lanes of a run that name the same cell (neighbouring windows share their
//      maximum) sum their integers with a segmented scan of shuffles, so the run's last lane adds
//      once for all of them;
//   3. round: each cell's integer, rounded to float once (scalbnf of __ll2float_rn, as v19), stored.
// A plane whose dy do not all fit (spanning more than about 27 binades, or an Inf or a NaN) skips
// step 2, and step 3 computes its cells by v1's gather instead: which path a plane takes depends
// only on its data, so the result stays deterministic. Where it fits, each cell is its exact sum
// rounded once, as in v19.
//
// Prediction (made before any measurement), kernel 8 stride 1 on 1 x 16 x 64^3 with int64 indices:
// DRAM about dy twice (11.9 MB each), the index once (23.7 MB), the counters zeroed, added to and
// read (33.5 MB each way, partly absorbed by the 50 MB L2) and dx written once (16.8 MB): at most
// 131 MB, 44 us at the copy ceiling; instructions about 2 M warp instructions (v15: 41.9 M). So
// bound by bytes, and ahead of PyTorch's 52.8 us (fill, then a float atomic per output).
//
// Measured (H200, results/NVIDIA_H200.v21.ncu.txt, .v21_race.txt, .v21_sweep.txt): wrong on both
// counts. The three kernels took 14.6 + 27.7 + 13.7 us against PyTorch's 5.5 + 38.6 us, with 26.0 M
// warp instructions (17.1 M in the scatter, about 185 per 32 outputs: the index check, the
// conversion and the run scan) and 104 MB of DRAM, the rounding reading 33.6 MB of counters from
// DRAM. Those DRAM bytes are Nsight Compute's: by default it flushes the caches before each kernel.
// Without the flush (profile_cases.py --keep-l2, results/NVIDIA_H200.v23.kept.ncu.txt) the rounding
// read 9.6 MB, and the three kernels moved 101.7 MB in 55.4 us, 1.84 TB/s: not bound by bytes.
// Raced in one process it ran 0.772x PyTorch (0.809x compact), where v15 ran 0.580x (0.592x); the
// first form (2 chunks, plain loads, the whole scan: results/forms/v21_first.*) 0.751x. Against v15
// in one process per kernel (stride 1, int64): faster on kernels 5 to 8, slower on kernel 4. Auto
// took it on kernels 5 to 8 until v23 (the same counters, fewer instructions per output) replaced it.
//
// Limits, refused before launch: NCDHW, dilation 1, at most 2048 outputs covering one cell, a
// plane that fits 32-bit offsets. Scratch: 8 bytes per dx element, and a few per plane.
#pragma once

#include "kernels/bwd_v19_fixed_point_tile.cuh"  // FloatParts, to_fixed, fix_terms, the fallback

#include <algorithm>
#include <cstdint>

namespace ch06 {

inline constexpr int kGlobBlock = 256;
inline constexpr int kGlobMaxParts = 64;     // blocks per plane in kernels 1 and 2 of v21
inline constexpr int kGlobRoundParts = 256;  // at most, in kernel 3
inline constexpr int kGlobTargetBlocks = 1024;
inline constexpr int kGlobUnroll = 4;        // loads a thread has in flight in kernels 1 and 3
inline constexpr int kGlobChunks = 4;        // chunks of 32 outputs a warp loads before it adds (kernel 2)

struct GlobArgs {
  std::int64_t first = 0, count = 1;  // the planes this launch takes; their counters start at plane first
  int parts = 1;          // blocks per plane in kernels 1 and 2 (gridDim.x)
  FastDiv by_ow, by_ohw;  // an output's decode within its plane
  IndexDecode dec;        // the saved index's
  GatherDivs dv;          // the fallback's
  unsigned* marks = nullptr;    // v26: a bit per 4 cells some output reached, mark_words words per plane
  std::uint32_t mark_words = 0;
};

struct GlobScratch {
  std::size_t counters = 0, marks = 0, parts = 0, scale = 0, bytes = 0;  // offsets and the total
};

// v26's marks: a bit per 4 consecutive cells of a plane (32 bytes of counters), 32 bits a word.
inline std::uint32_t glob_mark_words(const Window& w) {
  return static_cast<std::uint32_t>((w.in_plane() + 127) / 128);
}

// Blocks per plane when a launch takes `planes` planes: about kGlobTargetBlocks in all, at most
// `cap`, and at most a block per kGlobBlock outputs of a plane.
inline int glob_parts(const Window& w, std::int64_t planes, std::int64_t cap) {
  const std::int64_t most = std::min<std::int64_t>(cap, (w.out_plane() + kGlobBlock - 1) / kGlobBlock);
  return static_cast<int>(std::clamp<std::int64_t>((kGlobTargetBlocks + planes - 1) / planes, 1, std::max<std::int64_t>(1, most)));
}

// The scratch when a launch takes at most `group` planes, `cap` blocks per plane: their counters
// (and v26's marks), every plane's partials and scale.
inline GlobScratch glob_scratch(const Window& w, std::int64_t group, std::int64_t cap, bool marks = false) {
  const auto up = [](std::size_t b) { return (b + 255) / 256 * 256; };
  const auto planes = static_cast<std::size_t>(w.N * w.C);
  GlobScratch g;
  g.marks = up(static_cast<std::size_t>(group * w.in_plane()) * sizeof(unsigned long long));
  g.parts = g.marks + (marks ? up(static_cast<std::size_t>(group) * glob_mark_words(w) * sizeof(unsigned)) : 0);
  g.scale = g.parts + up(planes * static_cast<std::size_t>(glob_parts(w, group, cap)) * sizeof(FixBits));
  g.bytes = g.scale + up(planes * sizeof(int2));
  return g;
}

template <class T>
std::size_t bwd_v21_scratch_bytes(const Window& w) {
  return glob_scratch(w, w.N * w.C, kGlobMaxParts).bytes;
}

// 1. The launch's counters zeroed (the whole grid, 16 bytes a store), and each block's partial of its
// plane. With Zero false (v25 on, whose rounding leaves the counters zero) only the partials, a
// thread's loads 3 kGlobUnroll at a time, so that the 64 blocks of a 64^3 plane request all of its
// dy at once; measured on the H200 (kernel 8 stride 1), this kernel took 8.0 us either way
// (results/forms/v25_first.kept.ncu.csv, results/NVIDIA_H200.v25.kept.ncu.txt).
template <bool Zero, class T>
__global__ void __launch_bounds__(kGlobBlock)
    bwd_v21_scale_kernel(const T* __restrict__ dy, const Window w, const GlobArgs g, FixBits* __restrict__ parts,
                         unsigned long long* __restrict__ counters) {
  __shared__ FixBits warp_bits[kGlobBlock / 32];
  const int tid = threadIdx.x, lane = tid % 32;
  if constexpr (Zero) {
    const std::int64_t threads = static_cast<std::int64_t>(gridDim.x) * gridDim.y * kGlobBlock;
    const std::int64_t me = (static_cast<std::int64_t>(blockIdx.y) * gridDim.x + blockIdx.x) * kGlobBlock + tid;
    const std::int64_t n = g.count * w.in_plane();
    auto* pairs = reinterpret_cast<ulonglong2*>(counters);
    for (std::int64_t i = me; i < n / 2; i += threads) pairs[i] = make_ulonglong2(0, 0);
    if (me == 0 && n % 2) counters[n - 1] = 0;
  }

  const auto plane_out = static_cast<std::uint32_t>(w.out_plane());
  for (std::int64_t nc = g.first + blockIdx.y; nc < g.first + g.count; nc += gridDim.y) {
    const T* p = dy + nc * plane_out;
    FixBits b = kFixNoBits;
    constexpr int unroll = Zero ? kGlobUnroll : 3 * kGlobUnroll;
    for (std::uint32_t r0 = blockIdx.x * kGlobBlock * unroll + tid; r0 < plane_out; r0 += gridDim.x * kGlobBlock * unroll) {
      T v[unroll];
#pragma unroll
      for (int u = 0; u < unroll; ++u) {  // the loads first, then the bits
        const std::uint32_t r = r0 + u * kGlobBlock;
        v[u] = r < plane_out ? p[r] : T(0);
      }
#pragma unroll
      for (int u = 0; u < unroll; ++u) fix_bits_add(b, v[u]);
    }
    b = fix_bits_warp(b);
    if (lane == 0) warp_bits[tid / 32] = b;
    __syncthreads();
    if (tid < 32) {
      b = tid < kGlobBlock / 32 ? warp_bits[tid] : kFixNoBits;
      b = fix_bits_warp(b);
      if (tid == 0) parts[nc * gridDim.x + blockIdx.x] = b;
    }
    __syncthreads();
  }
}

// The scale of plane nc from its partials, into plane_scale (unit, exact) for the block; block 0
// also stores it for kernel 3. The block's threads meet at a barrier before reading it.
__device__ __forceinline__ void glob_plane_scale(const FixBits* __restrict__ parts, const GlobArgs& g, std::int64_t nc,
                                                 int2* __restrict__ scale, int2& plane_scale) {
  const int tid = threadIdx.x;
  if (tid < 32) {
    FixBits b = kFixNoBits;
    for (int i = tid; i < g.parts; i += 32) {
      const FixBits q = parts[nc * g.parts + i];
      b = {max(b.top, q.top), min(b.low, q.low), b.bad | q.bad};
    }
    const FixScale sc = fix_scale(fix_bits_warp(b));
    if (tid == 0) {
      plane_scale = make_int2(sc.unit, sc.exact);
      if (blockIdx.x == 0) scale[nc] = plane_scale;
    }
  }
  __syncthreads();
}

// The term of the output at (od, oh, ow) of its plane: the offset in the plane of the cell its
// index ix names (-1 for none: outside the window, or in the padding) and dy as an integer of units.
template <class I, class T>
__device__ __forceinline__ void glob_term(const Window& w, const GlobArgs& g, I ix, T y, int od, int oh, int ow,
                                          int unit, int& key, long long& v) {
  key = -1;
  v = 0;
  const NamedCell c = window_cell(w, g.dec, ix, od * w.s[0] - w.p[0], oh * w.s[1] - w.p[1], ow * w.s[2] - w.p[2]);
  if constexpr (std::is_same_v<I, std::int64_t>) {
    if (!c.in_window) return;  // an int64 index in the window is a cell of the plane: it is the key
    key = static_cast<int>(ix);
  } else {
    if (!c.in_window || static_cast<unsigned>(c.d) >= static_cast<unsigned>(w.D) ||
        static_cast<unsigned>(c.h) >= static_cast<unsigned>(w.H) || static_cast<unsigned>(c.x) >= static_cast<unsigned>(w.W))
      return;  // outside the window, or in the padding
    key = (c.d * w.H + c.h) * w.W + c.x;
  }
  v = y != T(0) ? to_fixed(y, unit) : 0;  // a zero's exponent may lie far below the unit
}

// Segments of lanes, each starting at a lane whose bit is set in `starts` (lane 0's always is):
// each lane's v becomes the sum of its segment's values up to it, by shuffles. Every lane calls it.
__device__ __forceinline__ long long segment_scan(unsigned starts, long long v) {
  const int lane = threadIdx.x % 32;
  const int head = 31 - __clz(starts & (0xFFFFFFFFu >> (31 - lane)));
  const int longest = __reduce_max_sync(0xFFFFFFFFu, static_cast<unsigned>(lane - head));  // the same in every lane
#pragma unroll
  for (int d = 1; d < 32; d *= 2) {
    if (d > longest) break;  // the scan of a segment of n lanes needs the steps below n
    const long long t = __shfl_up_sync(0xFFFFFFFFu, v, d);
    if (lane - d >= head) v += t;
  }
  return v;
}

// 2. The plane's scale from its partials, then each output's integer added to its cell's counter,
// a run of lanes naming one cell adding once.
template <class I, class T>
__global__ void __launch_bounds__(kGlobBlock)
    bwd_v21_scatter_kernel(const BackwardArgs<T> a, const I* __restrict__ idx, const GlobArgs g,
                           const FixBits* __restrict__ parts, int2* __restrict__ scale,
                           unsigned long long* __restrict__ counters) {
  __shared__ int2 plane_scale;
  const Window& w = a.w;
  const int tid = threadIdx.x, lane = tid % 32;
  const auto plane_out = static_cast<std::uint32_t>(w.out_plane());
  const std::int64_t plane_in = w.in_plane();
  for (std::int64_t nc = g.first + blockIdx.y; nc < g.first + g.count; nc += gridDim.y) {
    glob_plane_scale(parts, g, nc, scale, plane_scale);
    const int unit = plane_scale.x;
    if (plane_scale.y) {
      const T* dyp = a.dy + nc * plane_out;
      const I* ip = idx + nc * plane_out;
      unsigned long long* cp = counters + (nc - g.first) * plane_in;
      // A warp's chunks of 32 consecutive outputs, kGlobChunks of them loaded before the first is
      // added; the loop's bounds are the same for the whole warp.
      const std::uint32_t stride = gridDim.x * kGlobBlock;
      for (std::uint32_t base = (blockIdx.x * kGlobBlock + tid) & ~31u; base < plane_out; base += kGlobChunks * stride) {
        I ix[kGlobChunks];
        T y[kGlobChunks];
#pragma unroll
        for (int u = 0; u < kGlobChunks; ++u) {
          const std::uint32_t r = base + u * stride + lane;
          // Read once, marked evict-first (ld.global.cs), so that they do not push the counters
          // out of the L2 before kernel 3 reads them.
          ix[u] = r < plane_out ? __ldcs(ip + r) : I(0);  // past the end: not decoded
          y[u] = r < plane_out ? __ldcs(dyp + r) : T(0);
        }
#pragma unroll
        for (int u = 0; u < kGlobChunks; ++u) {
          const std::uint32_t r = base + u * stride + lane;
          int key = -1;  // the cell's offset in the plane, -1 for no term
          long long v = 0;
          if (r < plane_out) {
            const int od = static_cast<int>(g.by_ohw.div(r));
            const std::uint32_t rr = r - static_cast<std::uint32_t>(od) * g.by_ohw.divisor;
            const int oh = static_cast<int>(g.by_ow.div(rr)), ow = static_cast<int>(rr - static_cast<std::uint32_t>(oh) * w.oW);
            glob_term(w, g, ix[u], y[u], od, oh, ow, unit, key, v);
          }
          // Runs of lanes with one key: each lane's sum from its run's first lane, by a segmented scan.
          const int prev = __shfl_up_sync(0xFFFFFFFFu, key, 1);
          const unsigned heads = __ballot_sync(0xFFFFFFFFu, lane == 0 || key != prev);
          v = segment_scan(heads, v);
          const bool last = lane == 31 || ((heads >> (lane + 1)) & 1u);
          if (last && key >= 0 && v != 0) atomicAdd(cp + key, static_cast<unsigned long long>(v));
        }
      }
    }
    __syncthreads();  // plane_scale is set again for the next plane
  }
}

// A counter's integer times 2^unit as float: rounded once by __ll2float_rn, then the exponent moved,
// which is exact while the result stays a normal float; scalbnf otherwise (a subnormal result is
// rounded a second time there, as in v19).
__device__ __forceinline__ float fixed_to_float(long long x, int unit) {
  const float r = __ll2float_rn(x);
  const int e = static_cast<int>((__float_as_uint(r) >> 23) & 0xFF) + unit;
  if (r == 0.0f) return r;
  if (e >= 1 && e <= 254) return __uint_as_float(__float_as_uint(r) + (static_cast<std::uint32_t>(unit) << 23));
  return scalbnf(r, unit);
}

// A line of 128 bytes dropped from the L2 without its write-back: its bytes become undefined.
__device__ __forceinline__ void discard_l2_line(const void* line) {
  asm volatile("discard.global.L2 [%0], 128;" ::"l"(line) : "memory");
}

// 3. Each cell's integer rounded once; a plane that did not fit gathers as v1. Where the planes and
// dx allow, a thread takes two cells at a time (one 16-byte load of counters, one 8-byte store),
// kGlobUnroll loads in flight. With Discard (v22), the block then drops from the L2 the whole
// 128-byte lines of counters it read, so that they are never written back to DRAM: the next launch
// zeroes them again. With Clean (v25), each load of counters that is not zero is followed by a store
// of zeros there, so that the launch leaves every counter zero for the next one. Unroll: the loads a
// thread has in flight (v27: 8).
template <bool Discard, bool Clean, class T, int Unroll = kGlobUnroll>
__global__ void __launch_bounds__(kGlobBlock)
    bwd_v21_round_kernel(const BackwardArgs<T> a, const GlobArgs g, const int2* __restrict__ scale,
                         unsigned long long* __restrict__ counters, bool pairs) {
  static_assert(!(Discard && Clean), "a dropped line's bytes are undefined: it cannot be left zero");
  const Window& w = a.w;
  const auto plane_in = static_cast<std::uint32_t>(w.in_plane());
  const int per = pairs ? 2 : 1;
  const std::uint32_t units = plane_in / per;  // whole pairs, or cells
  constexpr std::uint32_t chunk = kGlobBlock * Unroll;  // a block's units per step
  for (std::int64_t nc = g.first + blockIdx.y; nc < g.first + g.count; nc += gridDim.y) {
    const int2 sc = scale[nc];
    const std::int64_t ibase = nc * plane_in;
    unsigned long long* cp = counters + (nc - g.first) * plane_in;
    if (!sc.y) {
      for (std::uint32_t r = blockIdx.x * kGlobBlock + threadIdx.x; r < plane_in; r += gridDim.x * kGlobBlock)
        a.dx[ibase + r] = gather_one<false>(a, g.dv, ibase + r);
      continue;
    }
    for (std::uint32_t r0 = blockIdx.x * chunk + threadIdx.x; r0 < units; r0 += gridDim.x * chunk) {
      ulonglong2 q[Unroll];
#pragma unroll
      for (int u = 0; u < Unroll; ++u) {
        const std::uint32_t r = r0 + u * kGlobBlock;
        q[u] = make_ulonglong2(0, 0);
        if (r < units) {
          // The counters' last read: evict-first (v21); v22 drops the lines below instead.
          if (pairs) q[u] = __ldcs(reinterpret_cast<const ulonglong2*>(cp) + r);
          else q[u].x = __ldcs(cp + r);
        }
      }
      if constexpr (Clean) {
#pragma unroll
        for (int u = 0; u < Unroll; ++u) {
          const std::uint32_t r = r0 + u * kGlobBlock;
          if (r < units && (q[u].x | q[u].y) != 0) {
            if (pairs) reinterpret_cast<ulonglong2*>(cp)[r] = make_ulonglong2(0, 0);
            else cp[r] = 0;
          }
        }
      }
#pragma unroll
      for (int u = 0; u < Unroll; ++u) {
        const std::uint32_t r = r0 + u * kGlobBlock;
        if (r >= units) break;
        const float lo = fixed_to_float(static_cast<long long>(q[u].x), sc.x);
        if (pairs) reinterpret_cast<float2*>(a.dx + ibase)[r] = make_float2(lo, fixed_to_float(static_cast<long long>(q[u].y), sc.x));
        else a.dx[ibase + r] = lo;
      }
    }
    if constexpr (Discard) {
      // Every load of the block's chunks has returned (their values are stored above); the lines
      // wholly inside a chunk are the block's alone.
      __syncthreads();
      const auto first_cell = reinterpret_cast<std::uintptr_t>(cp);
      for (std::uint32_t c0 = blockIdx.x * chunk; c0 < units; c0 += gridDim.x * chunk) {
        const std::uintptr_t lo = first_cell + static_cast<std::uintptr_t>(c0) * per * 8;
        const std::uintptr_t hi = first_cell + static_cast<std::uintptr_t>(min(c0 + chunk, units)) * per * 8;
        const std::uintptr_t l0 = (lo + 127) / 128 * 128;
        for (std::uintptr_t l = l0 + threadIdx.x * std::uintptr_t{128}; l + 128 <= hi; l += kGlobBlock * std::uintptr_t{128})
          discard_l2_line(reinterpret_cast<const void*>(l));
      }
    }
  }
}

// Why v21 refuses a case ("" when it takes it): v19's limits.
template <class T>
std::string bwd_v21_refuses(const Window& w) {
  return fixed_point_refuses(w, "bwd_v21_fixed_point_global");
}

// Kernel 3's blocks per plane when a thread has `unroll` loads of two cells in flight.
inline std::int64_t glob_round_parts(const Window& w, int unroll) {
  const std::int64_t per_block = std::int64_t{kGlobBlock} * unroll * 2;
  return (w.in_plane() + per_block - 1) / per_block;
}

// How a fixed-point version keeps its counters, for glob_run. v21 to v24 zero them in kernel 1 and
// round them in kernel 3 (v22 then drops their lines from the L2); v25 and v26 bring others.
template <bool Discard>
struct ZeroedCounters {
  static constexpr bool marks = false;
  template <class T>
  static auto scale() { return &bwd_v21_scale_kernel<true, T>; }
  template <class T>
  static auto round() { return &bwd_v21_round_kernel<Discard, false, T>; }
  // Kernel 3's blocks per plane: two cells a thread, kGlobUnroll loads in flight.
  static std::int64_t round_parts(const Window& w) { return glob_round_parts(w, kGlobUnroll); }
};

// v21's scatter, for glob_run (v23 brings another).
struct LaneScatter {
  template <class I, class T>
  static auto kernel() { return &bwd_v21_scatter_kernel<I, T>; }
};

// The three kernels on planes [first, first + group), then the next group of planes, each group's
// counters at the start of the scratch; Scatter::kernel<I, T>() is the second, Counters::round<T>()
// the third. v21 takes every plane in one group; v22 groups them.
template <class Counters, class Scatter, class I, class T>
void glob_launch(cudaStream_t s, const BackwardArgs<T>& a, const I* idx, unsigned char* base, const GlobScratch& m,
                 std::int64_t group, std::int64_t cap) {
  const Window& w = a.w;
  const std::int64_t planes = w.N * w.C;
  GlobArgs g;
  g.parts = glob_parts(w, group, cap);  // every group's partials at parts[nc * g.parts + i]
  g.by_ow = FastDiv(w.oW);
  g.by_ohw = FastDiv(static_cast<std::int64_t>(w.oH) * w.oW);
  g.dec = index_decode(w);
  g.dv = gather_divs(w);
  auto* counters = reinterpret_cast<unsigned long long*>(base + m.counters);
  auto* parts = reinterpret_cast<FixBits*>(base + m.parts);
  auto* scale = reinterpret_cast<int2*>(base + m.scale);
  if constexpr (Counters::marks) {
    g.marks = reinterpret_cast<unsigned*>(base + m.marks);
    g.mark_words = glob_mark_words(w);
  }
  // Pairs of cells where every plane starts on a 16-byte counter and an 8-byte dx element.
  const bool pairs = w.in_plane() % 2 == 0 && reinterpret_cast<std::uintptr_t>(a.dx) % 8 == 0;
  const std::int64_t per_plane = Counters::round_parts(w);
  for (g.first = 0; g.first < planes; g.first += group) {
    g.count = std::min(group, planes - g.first);
    const dim3 grid(static_cast<unsigned>(g.parts), static_cast<unsigned>(std::min<std::int64_t>(g.count, 65535)));
    Counters::template scale<T>()<<<grid, kGlobBlock, 0, s>>>(a.dy, w, g, parts, counters);
    TUT_CHECK_LAUNCH("the scale kernel (bwd_v21_scale_kernel or bwd_v29_scale_kernel)");
    Scatter::template kernel<I, T>()<<<grid, kGlobBlock, 0, s>>>(a, idx, g, parts, scale, counters);
    TUT_CHECK_LAUNCH("the scatter kernel (bwd_v21_scatter_kernel or bwd_v23_scatter_kernel)");
    const dim3 round_grid(static_cast<unsigned>(std::clamp<std::int64_t>(per_plane, 1, kGlobRoundParts)), grid.y);
    Counters::template round<T>()<<<round_grid, kGlobBlock, 0, s>>>(a, g, scale, counters, pairs);
    TUT_CHECK_LAUNCH("the rounding kernel (bwd_v21_round_kernel or bwd_v26_round_kernel)");
  }
}

// The checks and the launches of a fixed-point version whose launches take `group` planes at most,
// `cap` blocks per plane.
template <class Counters, class Scatter = LaneScatter, class T>
void glob_run(cudaStream_t s, const BackwardArgs<T>& a, void* scratch, std::size_t scratch_bytes, const char* who,
              std::int64_t group, std::int64_t cap) {
  static_assert(std::is_same_v<T, float>, "the fixed-point integers are built from float32 bits");
  check_backward(a, who);
  if (const std::string why = fixed_point_refuses(a.w, who); !why.empty()) throw tut::Unsupported(why);
  const GlobScratch m = glob_scratch(a.w, group, cap, Counters::marks);
  if (!scratch || scratch_bytes < m.bytes)
    throw std::invalid_argument(std::string(who) + ": needs " + std::to_string(m.bytes) + " bytes of scratch");
  with_index(a, [&](const auto* idx) { glob_launch<Counters, Scatter>(s, a, idx, static_cast<unsigned char*>(scratch), m, group, cap); });
}

template <class T>
void bwd_v21_fixed_point_global(cudaStream_t s, const BackwardArgs<T>& a, void* scratch, std::size_t scratch_bytes) {
  glob_run<ZeroedCounters<false>>(s, a, scratch, scratch_bytes, "bwd_v21_fixed_point_global", a.w.N * a.w.C, kGlobMaxParts);
}

// The kernels glob_run<Counters, Scatter> launches, for a version's list: the scale, the scatter for
// each index format, the rounding.
template <class Counters, class Scatter, class T>
std::vector<const void*> glob_kernels() {
  const auto kernel = [](auto* k) { return reinterpret_cast<const void*>(k); };
  return {kernel(Counters::template scale<T>()), kernel(Scatter::template kernel<std::int64_t, T>()),
          kernel(Scatter::template kernel<std::uint8_t, T>()), kernel(Scatter::template kernel<std::int16_t, T>()),
          kernel(Counters::template round<T>())};
}

template <class T>
std::vector<const void*> bwd_v21_kernels() {
  return glob_kernels<ZeroedCounters<false>, LaneScatter, T>();
}

}  // namespace ch06
