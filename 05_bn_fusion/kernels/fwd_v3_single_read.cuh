// fwd v3_single_read: one cooperative kernel that reads x from DRAM once when it fits in the L2,
// and partly once when it does not.
//
// What changed since v2. v2 is two kernels: the statistics read all of x, and the normalize pass
// reads it again from DRAM, because between them the L2 (50 MB on the H100) has been filled with
// the end of x and, at 16x32x112x112 (25.7 MB of x), still holds all of it, but the normalize pass
// starts at the front. Here the grid is persistent (every block resident at once: a cooperative
// launch checks it) and one kernel does all three phases:
//   1. each block reduces its share of x, exactly as v2 does, and writes its partials;
//   2. grid.sync(); a warp per channel merges that channel's partials and writes the results;
//   3. grid.sync(); the normalize pass, over the chunks in REVERSE order, writing y with
//      evict-first stores, so that y does not push the x still to be read out of the L2.
// Phase 1 reads x from front to back (kernels/layout.cuh: all blocks sweep the same band at the
// same time), so when it ends the L2 holds the last ~40 MB it read: the back of x. Phase 3 starts
// there. When x fits in the L2, phase 3 reads nothing from DRAM; when it does not, its first 40 MB
// still come from the L2.
// Prediction: at 16x32x112x112 float, DRAM traffic of x 4 + y 4 + mask 1/8 = 8.125 bytes per
// element instead of v2's 12.125, so about 0.67 of v2's time, minus what two grid barriers cost
// (a few microseconds against a ~20 us kernel). At 64x64x112x112 (205 MB of x) about a fifth of
// the second read hits: 11.3 bytes per element.
// Evidence: Nsight Compute's dram__bytes_read.sum over the kernel, divided by the element count.
//
// The trap: the per-channel parameters are written in phase 2 and read in phase 3 of the same
// kernel, so they must not go through the read-only (non-coherent) path: no __ldg, no
// `const __restrict__` on them. Plain loads are safe: no SM has them in its L1 before phase 3.
#pragma once

#include "kernels/fwd_v2_layout_aware.cuh"

#include <cooperative_groups.h>

namespace ch05 {

namespace cg = cooperative_groups;

// What phase 1 does in each layout, for a grid of `grid` blocks.
struct V3Plan {
  int S = 1;        // NCHW: blocks per channel
  NhwcPlan nhwc;    // NHWC
  int gy = 1;       // NHWC: row blocks
  int slots = 1;    // partials per channel
  Divisor hw;
};

inline V3Plan v3_plan(const Shape4& s, int V, int grid) {
  V3Plan p;
  p.hw = Divisor(s.HW);
  if (s.layout == Layout::nchw) {
    p.S = static_cast<int>(std::max<std::int64_t>(1, grid / s.C));  // one item per block while C <= grid
    p.slots = p.S;
  } else {
    p.nhwc = nhwc_plan(s, V);
    p.gy = std::max(1, grid / p.nhwc.gx);
    p.slots = p.nhwc.gx * p.gy + 1;
  }
  return p;
}

// The most blocks a cooperative grid of this kernel may have here: all resident at once, at most 4
// per SM (1024 threads: 64 bytes in flight per thread is already more than Little's law asks).
inline int cooperative_grid(const void* kernel, const char* who) {
  int per_sm = 0;
  TUT_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kBlock, 0));
  if (per_sm < 1) throw std::runtime_error(std::string(who) + ": not one block fits on an SM");
  return device_limits().sm_count * std::min(per_sm, 4);
}

// Phase 1 for block `blockIdx.x` (and more items if there are more items than blocks).
// make_op(c, j) gives a fresh accumulator for channel c (NCHW) or for column j (NHWC, c = -1);
// one(e, c) is element e's partial alone (the NHWC elements after the last whole pack). `smem`
// holds kBlock * Op::V stats.
template <class Op, class MakeOp, class One>
__device__ void v3_partials(const Shape4& s, const V3Plan& plan, typename Op::Stat* partials,
                            typename Op::Stat* smem, MakeOp make_op, One one) {
  using S = typename Op::Stat;
  constexpr int V = Op::V;
  if (s.layout == Layout::nchw) {
    const std::int64_t items = s.C * plan.S;
    for (std::int64_t item = blockIdx.x; item < items; item += gridDim.x) {
      const std::int64_t c = item % s.C, chunk = item / s.C;
      Op op = make_op(c, -1);
      walk_nchw(op, s, plan.hw, c, chunk * kBlock + threadIdx.x, static_cast<std::int64_t>(plan.S) * kBlock,
                s.per_channel() / V);
      const S total = block_total(op, smem);
      if (threadIdx.x == 0) partials[c * plan.slots + chunk] = total;
    }
  } else {
    const NhwcPlan& p = plan.nhwc;
    const std::int64_t items = static_cast<std::int64_t>(p.gx) * plan.gy;
    const int tid = static_cast<int>(threadIdx.x), tx = tid % p.bx, ty = tid / p.bx;
    for (std::int64_t item = blockIdx.x; item < items; item += gridDim.x) {
      const int bxi = static_cast<int>(item % p.gx), byi = static_cast<int>(item / p.gx);
      const std::int64_t j = static_cast<std::int64_t>(bxi) * p.bx + tx;
      const bool has_column = ty < p.by && j < p.P;
      Op op = make_op(-1, has_column ? j : 0);
      if (has_column)
        walk_nhwc(op, p, j, static_cast<std::int64_t>(byi) * p.by + ty, static_cast<std::int64_t>(p.by) * plan.gy);
      columns_to_partials(op, has_column, smem, p, s.C, bxi, partials, plan.slots, static_cast<int>(item));
    }
    if (blockIdx.x == gridDim.x - 1) tail_to_partials<S>(s, p.q_full * V, partials, plan.slots, one);
  }
}

template <int Vs, int Va, class T, bool kAdd>
__global__ void __launch_bounds__(kBlock)
    fwd_v3_single_read_kernel(FwdArgs<T> a, ChannelParams p, Welford* partials, V3Plan plan, ChannelMap map) {
  __shared__ Welford smem[kBlock * Vs];
  cg::grid_group grid = cg::this_grid();

  // 1. Partials, x read front to back.
  v3_partials<WelfordStreams<Vs, T>>(
      a.s, plan, partials, smem, [&](std::int64_t, std::int64_t) { return WelfordStreams<Vs, T>(a.x); },
      [&](std::int64_t e, std::int64_t) { return Welford{1.0f, to_float(a.x[e]), 0.0f}; });
  grid.sync();

  // 2. A warp per channel.
  const int lane = static_cast<int>(threadIdx.x % 32);
  const std::int64_t warp = static_cast<std::int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32;
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * kWarps;
  for (std::int64_t c = warp; c < a.s.C; c += warps) {
    const Welford total = warp_merge_partials(partials, c, plan.slots);
    if (lane == 0) finish_forward_channel(a, p, static_cast<int>(c), total);
  }
  grid.sync();

  // 3. Normalize, back to front: the first chunks are the last phase 1 read.
  const std::int64_t chunks = a.s.numel() / (32 * Va);
  if (warp == 0) fwd_apply_tail<T, kAdd>(a, p, map, chunks * 32 * Va, lane);
  for (std::int64_t k = chunks - 1 - warp; k >= 0; k -= warps) fwd_apply_chunk<Va, T, kAdd, true>(a, p, map, k, lane);
}

inline std::size_t v3_partial_bytes(const Shape4& s, int v_max, std::size_t stat_bytes) {
  const int grid_max = 4 * device_limits().sm_count;
  std::int64_t slots = 0;
  for (int V : {1, v_max}) slots = std::max<std::int64_t>(slots, v3_plan(s, V, grid_max).slots);
  return static_cast<std::size_t>(slots) * static_cast<std::size_t>(s.C) * stat_bytes;
}
template <class T>
std::size_t fwd_v3_scratch_bytes(const Shape4& s) {
  return Scratch(s.C, v3_partial_bytes(s, kPack<T>, sizeof(Welford)), 0).total;
}

template <int Vs, int Va, class T, bool kAdd>
void fwd_v3_launch(cudaStream_t st, FwdArgs<T> a, const Scratch& sc, void* ws) {
  const void* kernel = reinterpret_cast<const void*>(&fwd_v3_single_read_kernel<Vs, Va, T, kAdd>);
  const int grid = cooperative_grid(kernel, "fwd_v3_single_read");
  V3Plan plan = v3_plan(a.s, Vs, grid);
  ChannelParams p = sc.params_at(ws);
  Welford* partials = sc.partials_at<Welford>(ws);
  ChannelMap map(a.s);
  void* args[] = {&a, &p, &partials, &plan, &map};
  TUT_CUDA(cudaLaunchCooperativeKernel(kernel, grid, kBlock, args, 0, st));
}

template <class T, bool kAdd>
void fwd_v3_single_read(cudaStream_t st, const FwdArgs<T>& a, void* ws) {
  check_shape(a.s, "fwd_v3_single_read");
  constexpr int V = kPack<T>;
  const Scratch sc(a.s.C, v3_partial_bytes(a.s, V, sizeof(Welford)), 0);
  with_packs<V>(stats_packs_ok<T>(a.s, a.x), fwd_apply_packs_ok<T, kAdd>(a), [&](auto vs, auto va) {
    fwd_v3_launch<decltype(vs)::value, decltype(va)::value, T, kAdd>(st, a, sc, ws);
  });
}

template <class T, bool kAdd>
std::vector<const void*> fwd_v3_kernels() {
  constexpr int V = kPack<T>;
  return {TUT_KERNEL(fwd_v3_single_read_kernel<V, V, T, kAdd>)};
}

}  // namespace ch05
