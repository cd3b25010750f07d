// fwd v17_split_pass: where x does not fit on chip, the pass leaves the persistent grid. v4's
// statistics (phase 1 and the merge) stay one cooperative kernel; the pass becomes a second, plain
// grid of many small blocks, back to front, started by programmatic dependent launch, each warp's x
// loaded before it waits for the statistics.
//
// What changed since v4. v3 to v6 run the pass (phase 3) in the same persistent grid as the
// statistics, each block on a share of x fixed before the launch. On the H200 the phase timeline
// (tools/phase_timeline.cu, results/NVIDIA_H200.phases.txt) at 64x64x112x112 NHWC float has v4's
// blocks leave the second grid barrier within 0.4 us of one another (59.7 to 60.1 us from the
// start) and end the pass 23 us apart (162.9 to 186.1 us): the SMs that finish their share early
// have nothing left to take, and the DRAM is busy only as long as the slowest SM. x (205 MB) does
// not fit in the L2 or on chip, so the single read the persistent grid was built for is gone
// anyway; what it still buys is the L2 hits at the start of the pass. Here:
//   The statistics: v4's kernel up to its merge (fwd_own_stats, own_merge), with no second grid
//   barrier: after the first, every block lets the pass launch (griddepcontrol.launch_dependents),
//   the blocks with no channel to merge exit, and the pass's blocks take their place on the SM.
//   3 blocks per SM, each thread with 4 packs in flight in both types (v4: 4 blocks in float, 3 in
//   half with 2 packs).
//   The pass: warp w of the grid takes kV17Chunks chunks of 32 packs counted from the back of x
//   (the blocks start in order, so the first are the last x the statistics read, still in the L2),
//   issues all their loads (x, and r in the Add form), then waits (griddepcontrol.wait: the
//   statistics kernel has ended and its writes are visible), and runs v2's normalize arithmetic on
//   the packs, y stored evict-first. The mask goes out as v7 writes it: a pack's 4 or 8 bits are
//   half a byte or a byte of it, stored by its lane (single values: v2's ballots). The hardware
//   hands out the blocks as SMs free up, so the SMs end together to within a block's time.
// Bytes: as v4 (x twice, the start of the second read from the L2).
// Prediction: the pass's end spread shrinks from 23 us to a block's few microseconds, and the
// second barrier and the merge overlap the pass's first loads: at 64x64x112x112 NHWC float under
// cuDNN's fused forward (0.1622 ms in the H200's suite run) and past 0.85 of the copy ceiling on the
// two-pass model (v4: 0.1815 ms, 0.804).
// Evidence: the benchmark at the suite's large shapes against v3 to v7 and cuDNN in one run;
// Nsight Compute's DRAM throughput on both kernels.
#pragma once

#include "kernels/fwd_v4_own_packs.cuh"
#include "kernels/fwd_v9_two_launches.cuh"  // pdl_launch_dependents, pdl_wait, pdl_supported

namespace ch05 {

// Chunks of 32 packs a warp of the pass loads before it computes the first: 64 bytes a thread of
// x (and 64 of r in the Add form), as v4's pass.
inline constexpr int kV17Chunks = 4;
// The statistics' grid and loads: 3 blocks of 256 threads per SM, 4 packs (64 bytes) loaded by a
// thread before it adds the first, in both types (v4: 4 blocks of float, 3 of half, whose phase 1
// loads 2 packs).
inline constexpr int kV17Blocks = 3;
inline constexpr int kV17Unroll = 4;

// The statistics: v4's phase 1 (fwd_own_stats) and its merge, in a grid of kBlocks blocks per SM,
// kU packs in flight per thread.
// kWarpCols: the NHWC columns merged with fewer barriers (v19).
template <int V, class T, int kBlocks, int kU, bool kWarpCols>
__device__ __forceinline__ void v17_stats(const FwdArgs<T>& a, const ChannelParams& p, Welford* partials, const V3Plan& plan,
                                          Welford* smem) {
  const NoCache<kBlocks> cache(nullptr, 0);
  cg::grid_group grid = cg::this_grid();
  fwd_own_stats<V, T, NoCache<kBlocks>, kU, kWarpCols>(a, plan, partials, smem, cache);
  grid.sync();
  pdl_launch_dependents();  // every block is past its reads of x: the pass may start
  own_merge(partials, a.s.C, plan.slots, smem,
            [&](std::int64_t c, Welford total) { finish_forward_channel(a, p, static_cast<int>(c), total); });
}

template <int V, class T, int kBlocks = kV17Blocks, int kU = (V == 1 ? kUnrollFor<1> : kV17Unroll)>
__global__ void __launch_bounds__(kBlock, kBlocks)
    fwd_v17_stats_kernel(FwdArgs<T> a, ChannelParams p, Welford* partials, V3Plan plan) {
  __shared__ Welford smem[kBlock * V];
  v17_stats<V, T, kBlocks, kU, false>(a, p, partials, plan, smem);
}

// The pack of chunk k at element e0 (lane `lane`), its x as xv (and r as rv): v2's normalize
// arithmetic with the channels' mean, scale and shift; y stored evict-first and the pack's bits of
// the mask (see fwd_v17_pass_kernel). A lane with `active` false stores nothing but still takes
// part in the warp's ballots and shuffle (fwd v29's float pass, where a lane may have no pack).
template <int V, class T, bool kAdd, bool kBytes>
__device__ __forceinline__ void fwd_finish_pack(const FwdArgs<T>& a, std::int64_t k, std::int64_t e0, int lane,
                                                const float (&xv)[V], const float (&rv)[V], const float (&mean)[V],
                                                const float (&scale)[V], const float (&shift)[V], bool active = true) {
  float yv[V];
  Word ballots[V];
  unsigned bits = 0;
#pragma unroll
  for (int j = 0; j < V; ++j) {
    float s = fmaf(xv[j] - mean[j], scale[j], shift[j]);
    if constexpr (kAdd) s += rv[j];
    s = round_to<T>(s);
    yv[j] = relu(s);
    if constexpr (kBytes) bits |= static_cast<unsigned>(kept(s)) << j;
    else ballots[j] = __ballot_sync(kFullWarp, kept(s));
  }
  if (active) {
    if constexpr (V == 1) a.y[e0] = from_float<T>(yv[0]);
    else store_pack<V, T, true>(a.y + e0, yv);
  }
  if constexpr (kBytes) {
    auto* mask_bytes = reinterpret_cast<unsigned char*>(a.mask);
    if constexpr (V == 8) {
      if (active) mask_bytes[e0 / 8] = static_cast<unsigned char>(bits);
    } else {
      const unsigned byte = bits | __shfl_xor_sync(kFullWarp, bits, 1) << 4;
      if (active && lane % 2 == 0) mask_bytes[e0 / 8] = static_cast<unsigned char>(byte);
    }
  } else if (active && lane < V) {
    a.mask[k * V + lane] = tut::bitmask::word_from_ballots<V>(ballots, lane);
  }
}

// The pass: `chunks` whole chunks of 32 packs of V elements, in `units` units of kChunks; warp w
// of the grid takes unit units - 1 - w. The elements after the last whole chunk (fewer than 32 V)
// go to warp 0, whose unit is the last. kBytes (V = 4 or 8): the mask written as v7 writes it, a
// lane's V bits a byte (V = 8) or half of one (V = 4, the even lane writing both halves), instead of
// v2's ballots and words.
template <int V, class T, bool kAdd, int kChunks, bool kBytes>
__global__ void __launch_bounds__(kBlock)
    fwd_v17_pass_kernel(FwdArgs<T> a, ChannelParams p, ChannelMap map, std::int64_t chunks, std::int64_t units) {
  static_assert(!kBytes || V == 4 || V == 8, "mask bytes need packs of 4 or 8");
  const int lane = static_cast<int>(threadIdx.x % 32);
  const std::int64_t w = static_cast<std::int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32;
  const std::int64_t first = (units - 1 - w) * kChunks;  // the unit's first chunk (negative: none)
  // 1. Before the wait: x and r, which the statistics kernel does not write.
  uint4 q[kChunks], rq[kChunks];
#pragma unroll
  for (int i = 0; i < kChunks; ++i) {
    const std::int64_t k = first + i, e0 = k * (32 * V) + lane * V;
    q[i] = rq[i] = make_uint4(0, 0, 0, 0);
    if (k >= 0 && k < chunks) {
      q[i] = load_raw<V, T>(a.x + e0);
      if constexpr (kAdd) rq[i] = load_raw<V, T>(a.r + e0);
    }
  }
  pdl_wait();  // the statistics kernel has ended; the channels' parameters are visible
  // 2. The packs: v2's arithmetic (fwd_apply_chunk), from the registers.
#pragma unroll
  for (int i = 0; i < kChunks; ++i) {
    const std::int64_t k = first + i, e0 = k * (32 * V) + lane * V;
    if (k < 0 || k >= chunks) continue;  // the same for the whole warp
    float xv[V], rv[V], mean[V], scale[V], shift[V];
    unpack<V, T>(q[i], xv);
    if constexpr (kAdd) unpack<V, T>(rq[i], rv);
    int c;
    std::int64_t pos;
    map.locate(e0, c, pos);
    params_of_pack<V>(p, map, c, pos, mean, scale, shift);
    fwd_finish_pack<V, T, kAdd, kBytes>(a, k, e0, lane, xv, rv, mean, scale, shift);
  }
  if (w == 0) fwd_apply_tail<T, kAdd>(a, p, map, chunks * 32 * V, lane);
}

// The two launches of v17's forward and backward: `stats` (partials of type S) cooperatively in a
// grid of kBlocks blocks per SM, with Vs elements per load; then `pass` over the whole chunks of 32
// packs of Va elements, kChunks a warp, as a dependent launch (an ordinary second launch before
// sm_90). `who` names them in an error. max_pass_blocks > 0: the pass's grid at most that many
// blocks, its warps taking several units each (bwd v20).
template <class T, int kBlocks, int Vs, int Va, int kChunks, class S, class Args>
void v17_launch(cudaStream_t st, Args a, void* ws, void (*stats)(Args, ChannelParams, S*, V3Plan),
                void (*pass)(Args, ChannelParams, ChannelMap, std::int64_t, std::int64_t), const char* who,
                std::int64_t max_pass_blocks = 0) {
  const Scratch sc(a.s.C, v3_partial_bytes(a.s, kPack<T>, sizeof(S)), 0);
  const void* kernel = reinterpret_cast<const void*>(stats);
  const int grid = own_grid<NoCache<kBlocks>>(kernel, 0, who);
  V3Plan plan = v3_plan(a.s, Vs, grid);
  ChannelParams p = sc.params_at(ws);
  S* partials = sc.partials_at<S>(ws);
  void* args[] = {&a, &p, &partials, &plan};
  ::tut::check_cuda(cudaLaunchCooperativeKernel(kernel, grid, kBlock, args, 0, st), who, __FILE__, __LINE__);
  const std::int64_t chunks = a.s.numel() / (32 * Va);
  const std::int64_t units = std::max<std::int64_t>(1, (chunks + kChunks - 1) / kChunks);
  std::int64_t pass_blocks = (units + kWarps - 1) / kWarps;
  if (max_pass_blocks > 0) pass_blocks = std::min(pass_blocks, max_pass_blocks);
  launch_dependent(st, grid_of(pass_blocks, who), pass, who, a, p, ChannelMap(a.s), chunks, units);
}

template <int Vs, int Va, class T, bool kAdd, int kChunks, bool kBytes, int kBlocks, int kU>
void fwd_v17_launch(cudaStream_t st, const FwdArgs<T>& a, void* ws) {
  constexpr int kUs = Vs == 1 ? kUnrollFor<1> : kU;
  v17_launch<T, kBlocks, Vs, Va, kChunks, Welford>(st, a, ws, &fwd_v17_stats_kernel<Vs, T, kBlocks, kUs>,
                                                   &fwd_v17_pass_kernel<Va, T, kAdd, kChunks, kBytes && Va != 1>,
                                                   "fwd_v17_split_pass");
}

template <class T, bool kAdd, int kChunks = kV17Chunks, bool kBytes = true, int kBlocks = kV17Blocks,
          int kU = kV17Unroll>
void fwd_v17_split_pass(cudaStream_t st, const FwdArgs<T>& a, void* ws) {
  check_shape(a.s, "fwd_v17_split_pass");
  constexpr int V = kPack<T>;
  with_packs<V>(stats_packs_ok<T>(a.s, a.x), fwd_apply_packs_ok<T, kAdd>(a), [&](auto vs, auto va) {
    fwd_v17_launch<decltype(vs)::value, decltype(va)::value, T, kAdd, kChunks, kBytes, kBlocks, kU>(st, a, ws);
  });
}

template <class T, bool kAdd, int kChunks = kV17Chunks, bool kBytes = true, int kBlocks = kV17Blocks,
          int kU = kV17Unroll>
std::vector<const void*> fwd_v17_kernels() {
  constexpr int V = kPack<T>;
  return {TUT_KERNEL((fwd_v17_stats_kernel<V, T, kBlocks, kU>)),
          TUT_KERNEL((fwd_v17_pass_kernel<V, T, kAdd, kChunks, kBytes>))};
}

}  // namespace ch05
