// fwd v2_layout_aware: the statistics split over the whole GPU in either layout, and the
// normalize pass in 16-byte packs. Still two kernels: x is read twice (12.125 bytes per float
// element).
//
// What changed since v1. v1 gives each channel one block: C blocks, so C = 64 fills under half of
// the H100's 132 SMs, and in NHWC each thread's loads are C * 4 bytes apart (one useful float per
// 32-byte sector). Here
//   - NCHW shares each channel among S blocks; the last block of a channel to finish merges the
//     channel's S partials (Chan) and writes its results: the grid-level merge, with no second
//     kernel and no second pass over anything but S partials;
//   - NHWC walks rows of lcm(C, 4) elements with 16-byte loads, each thread down one column, for
//     any C (kernels/layout.cuh); the last block of the grid merges every channel;
//   - the normalize pass reads and writes 16-byte packs, one warp per 32 packs, four ballots per
//     warp for its four mask words (chapter 04's v3), and finds each pack's channel with a double
//     multiply instead of a 64-bit division.
// Prediction: both kernels near the copy rate, so the two-pass bytes at the copy ceiling:
// 8.125 / 12.125 = 0.67 of the floor's speed.
// Evidence: the stats kernel's grid (C * S blocks, or gx * gy) in the profile, 16.0 sectors per
// load request, and DRAM throughput near v3 of chapter 04 in both kernels.
//
// The trap: a block that reads the other blocks' partials must not read them through its L1 (no
// coherence across SMs), and must see them only after their writers have fenced: every writer
// runs __threadfence() before the block counts itself done (last_block_to_finish), and the last
// block reads with ld.global.cg.
#pragma once

#include "kernels/layout.cuh"

namespace ch05 {

// ---- Statistics -----------------------------------------------------------------------------------

template <int V, class T>
__global__ void __launch_bounds__(kBlock)
    fwd_v2_stats_nchw_kernel(FwdArgs<T> a, ChannelParams p, Welford* partials, unsigned* counters, Divisor hw, int S) {
  __shared__ Welford red[kWarps];
  const std::int64_t c = blockIdx.x % a.s.C, chunk = blockIdx.x / a.s.C;
  WelfordStreams<V, T> op(a.x);
  walk_nchw(op, a.s, hw, c, chunk * kBlock + threadIdx.x, static_cast<std::int64_t>(S) * kBlock, a.s.per_channel() / V);
  const Welford w = block_total(op, red);
  if (threadIdx.x == 0) partials[c * S + chunk] = w;
  if (!last_block_to_finish(&counters[c], static_cast<unsigned>(S))) return;
  Welford total{};
  for (int i = static_cast<int>(threadIdx.x); i < S; i += kBlock) total = merge(total, load_partial(partials + c * S + i));
  total = block_reduce<kBlock>(total, red);
  if (threadIdx.x == 0) finish_forward_channel(a, p, static_cast<int>(c), total);
}

template <int V, class T>
__global__ void __launch_bounds__(kBlock)
    fwd_v2_stats_nhwc_kernel(FwdArgs<T> a, ChannelParams p, Welford* partials, unsigned* counters, NhwcPlan plan,
                             int gy) {
  __shared__ Welford cols[kBlock * V];
  const int bxi = static_cast<int>(blockIdx.x % plan.gx), byi = static_cast<int>(blockIdx.x / plan.gx);
  const int tid = static_cast<int>(threadIdx.x), tx = tid % plan.bx, ty = tid / plan.bx;
  const std::int64_t j = static_cast<std::int64_t>(bxi) * plan.bx + tx;
  const bool has_column = ty < plan.by && j < plan.P;
  WelfordStreams<V, T> op(a.x);
  if (has_column)
    walk_nhwc(op, plan, j, static_cast<std::int64_t>(byi) * plan.by + ty, static_cast<std::int64_t>(plan.by) * gy);
  const int slots = plan.gx * gy + 1;
  columns_to_partials(op, has_column, cols, plan, a.s.C, bxi, partials, slots, static_cast<int>(blockIdx.x));
  if (blockIdx.x == 0)
    tail_to_partials<Welford>(a.s, plan.q_full * V, partials, slots,
                              [&](std::int64_t e, std::int64_t) { return Welford{1.0f, to_float(a.x[e]), 0.0f}; });
  if (!last_block_to_finish(&counters[0], gridDim.x)) return;
  const int warp = tid / 32, lane = tid % 32;
  for (std::int64_t c = warp; c < a.s.C; c += kWarps) {
    const Welford total = warp_merge_partials(partials, c, slots);
    if (lane == 0) finish_forward_channel(a, p, static_cast<int>(c), total);
  }
}

// ---- The normalize pass ---------------------------------------------------------------------------

// The V parameters of the pack at element e0 (channel c, position pos in its run).
template <int V>
__device__ __forceinline__ void params_of_pack(const ChannelParams& p, const ChannelMap& map, int c, std::int64_t pos,
                                               float (&mean)[V], float (&scale)[V], float (&shift)[V]) {
  if (V > 1 && map.inner.d == 1 && map.channels.d % V == 0) {  // NHWC, C a multiple of V: channels c .. c+V-1
    load_params<V>(p.mean + c, mean);
    load_params<V>(p.scale + c, scale);
    load_params<V>(p.shift + c, shift);
  } else if (V > 1 && pos + V <= map.inner.d) {  // NCHW, the pack inside one run: one channel
    const float m = p.mean[c], sc = p.scale[c], sh = p.shift[c];
#pragma unroll
    for (int k = 0; k < V; ++k) mean[k] = m, scale[k] = sc, shift[k] = sh;
  } else {
#pragma unroll
    for (int k = 0; k < V; ++k) {
      mean[k] = p.mean[c], scale[k] = p.scale[c], shift[k] = p.shift[c];
      map.step(c, pos);
    }
  }
}

// One warp: elements [chunk * 32V, chunk * 32V + 32V), all inside the tensor; lane t holds pack t.
// Word w of the chunk's V words takes its bits from all V ballots (tut::bitmask::word_from_ballots).
// kStream: y's stores evict first (version 3).
template <int V, class T, bool kAdd, bool kStream = false>
__device__ __forceinline__ void fwd_apply_chunk(const FwdArgs<T>& a, const ChannelParams& p, const ChannelMap& map,
                                                std::int64_t chunk, int lane) {
  const std::int64_t e0 = chunk * (32 * V) + lane * V;
  float xv[V], rv[V] = {}, mean[V], scale[V], shift[V], yv[V];
  if constexpr (V == 1) {
    xv[0] = to_float(a.x[e0]);
    if constexpr (kAdd) rv[0] = to_float(a.r[e0]);
  } else {
    load_pack<V>(a.x + e0, xv);
    if constexpr (kAdd) load_pack<V>(a.r + e0, rv);
  }
  int c;
  std::int64_t pos;
  map.locate(e0, c, pos);
  params_of_pack<V>(p, map, c, pos, mean, scale, shift);
  Word ballots[V];
#pragma unroll
  for (int k = 0; k < V; ++k) {
    float s = fmaf(xv[k] - mean[k], scale[k], shift[k]);
    if constexpr (kAdd) s += rv[k];
    s = round_to<T>(s);
    yv[k] = relu(s);
    ballots[k] = __ballot_sync(kFullWarp, kept(s));
  }
  if constexpr (V == 1) a.y[e0] = from_float<T>(yv[0]);
  else store_pack<V, T, kStream>(a.y + e0, yv);
  if (lane < V) a.mask[chunk * V + lane] = tut::bitmask::word_from_ballots<V>(ballots, lane);
}

// One warp: the elements from `first` (a multiple of 32) to the end, 32 at a time; lanes past the
// end vote false, so the last word's padding bits are 0.
template <class T, bool kAdd>
__device__ void fwd_apply_tail(const FwdArgs<T>& a, const ChannelParams& p, const ChannelMap& map, std::int64_t first,
                               int lane) {
  const std::int64_t n = a.s.numel();
  for (std::int64_t base = first; base < n; base += 32) {
    const std::int64_t i = base + lane;
    bool keep = false;
    if (i < n) {
      int c;
      std::int64_t pos;
      map.locate(i, c, pos);
      float s = fmaf(to_float(a.x[i]) - p.mean[c], p.scale[c], p.shift[c]);
      if constexpr (kAdd) s += to_float(a.r[i]);
      s = round_to<T>(s);
      a.y[i] = from_float<T>(relu(s));
      keep = kept(s);
    }
    const Word word = __ballot_sync(kFullWarp, keep);
    if (lane == 0) a.mask[base / 32] = word;
  }
}

// One chunk per warp, kWarps chunks per block; the last warp of the grid also does the tail.
template <int V, class T, bool kAdd>
__global__ void __launch_bounds__(kBlock)
    fwd_v2_apply_kernel(FwdArgs<T> a, ChannelParams p, ChannelMap map, std::int64_t chunks) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const std::int64_t warp = static_cast<std::int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32;
  if (warp < chunks) fwd_apply_chunk<V, T, kAdd>(a, p, map, warp, lane);
  if (warp == static_cast<std::int64_t>(gridDim.x) * kWarps - 1) fwd_apply_tail<T, kAdd>(a, p, map, chunks * 32 * V, lane);
}

// ---- Launchers ------------------------------------------------------------------------------------

// Partial slots either layout may need, for the scratch size.
inline std::size_t fwd_v2_partial_bytes(const Shape4& s, int v_max) {
  const DeviceLimits d = device_limits();
  std::int64_t slots = static_cast<std::int64_t>(nchw_splits(s, 8LL * d.sm_count)) * s.C;
  for (int V : {1, v_max}) {
    const NhwcPlan plan = nhwc_plan(s, V);
    slots = std::max<std::int64_t>(slots, (static_cast<std::int64_t>(plan.gx) * nhwc_row_blocks(plan, 4LL * d.sm_count) + 1) * s.C);
  }
  return static_cast<std::size_t>(slots) * sizeof(Welford);
}
template <class T>
std::size_t fwd_v2_scratch_bytes(const Shape4& s) {
  return Scratch(s.C, fwd_v2_partial_bytes(s, kPack<T>), 0).total;
}

template <int V, class T>
void fwd_v2_stats(cudaStream_t st, const FwdArgs<T>& a, const Scratch& sc, void* ws) {
  const DeviceLimits d = device_limits();
  const ChannelParams p = sc.params_at(ws);
  Welford* partials = sc.partials_at<Welford>(ws);
  unsigned* counters = sc.counters_at(ws);
  if (a.s.layout == Layout::nchw) {
    const int S = nchw_splits(a.s, 8LL * d.sm_count);
    fwd_v2_stats_nchw_kernel<V, T><<<grid_of(a.s.C * S, "fwd_v2_stats_nchw"), kBlock, 0, st>>>(a, p, partials, counters,
                                                                                              Divisor(a.s.HW), S);
    TUT_CHECK_LAUNCH("fwd_v2_stats_nchw_kernel");
  } else {
    const NhwcPlan plan = nhwc_plan(a.s, V);
    const int gy = nhwc_row_blocks(plan, 4LL * d.sm_count);
    fwd_v2_stats_nhwc_kernel<V, T><<<grid_of(static_cast<std::int64_t>(plan.gx) * gy, "fwd_v2_stats_nhwc"), kBlock, 0, st>>>(
        a, p, partials, counters, plan, gy);
    TUT_CHECK_LAUNCH("fwd_v2_stats_nhwc_kernel");
  }
}

template <int V, class T, bool kAdd>
void fwd_v2_apply(cudaStream_t st, const FwdArgs<T>& a, const ChannelParams& p) {
  const std::int64_t chunks = a.s.numel() / (32 * V);
  const std::int64_t blocks = std::max<std::int64_t>(1, (chunks + kWarps - 1) / kWarps);
  fwd_v2_apply_kernel<V, T, kAdd><<<grid_of(blocks, "fwd_v2_apply"), kBlock, 0, st>>>(a, p, ChannelMap(a.s), chunks);
  TUT_CHECK_LAUNCH("fwd_v2_apply_kernel");
}

// 16-byte packs where the pointers allow: the statistics need x aligned (and, in NCHW, runs of a
// whole number of packs); the normalize pass needs x, r and y aligned. Otherwise one element.
template <class T>
bool stats_packs_ok(const Shape4& s, const void* x) {
  return aligned16(x) && (s.layout == Layout::nhwc || s.HW % kPack<T> == 0);
}
template <class T, bool kAdd>
bool fwd_apply_packs_ok(const FwdArgs<T>& a) {
  return aligned16(a.x) && aligned16(a.y) && (!kAdd || aligned16(a.r));
}

// launch(Vs, Va), Vs = V where `vs` else 1 and Va = V where `va` else 1, each a
// std::integral_constant: the elements per load of a statistics phase and of a pass, 16-byte packs
// where the pointers allow (versions 3 and 17, forward and backward).
template <int V, class Launch>
void with_packs(bool vs, bool va, Launch&& launch) {
  using P = std::integral_constant<int, V>;
  using One = std::integral_constant<int, 1>;
  if (vs && va) launch(P{}, P{});
  else if (vs) launch(P{}, One{});
  else if (va) launch(One{}, P{});
  else launch(One{}, One{});
}

template <class T, bool kAdd>
void fwd_v2_layout_aware(cudaStream_t st, const FwdArgs<T>& a, void* ws) {
  check_shape(a.s, "fwd_v2_layout_aware");
  constexpr int V = kPack<T>;
  const Scratch sc(a.s.C, fwd_v2_partial_bytes(a.s, V), 0);
  if (stats_packs_ok<T>(a.s, a.x)) fwd_v2_stats<V, T>(st, a, sc, ws);
  else fwd_v2_stats<1, T>(st, a, sc, ws);
  if (fwd_apply_packs_ok<T, kAdd>(a)) fwd_v2_apply<V, T, kAdd>(st, a, sc.params_at(ws));
  else fwd_v2_apply<1, T, kAdd>(st, a, sc.params_at(ws));
}

template <class T, bool kAdd>
std::vector<const void*> fwd_v2_kernels() {
  constexpr int V = kPack<T>;
  return {TUT_KERNEL(fwd_v2_stats_nchw_kernel<V, T>), TUT_KERNEL(fwd_v2_stats_nhwc_kernel<V, T>),
          TUT_KERNEL(fwd_v2_apply_kernel<V, T, kAdd>)};
}

}  // namespace ch05
