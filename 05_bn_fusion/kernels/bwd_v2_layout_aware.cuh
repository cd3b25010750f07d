// bwd v2_layout_aware: the backward's two sums split over the whole GPU in either layout, and the
// dx pass in 16-byte packs. Two kernels, dy, x and the mask read twice: 20.25 bytes per float
// element (the two-pass model), as v1.
//
// What changed since v1: what fwd v2 changed for the statistics. NCHW shares each channel among S
// blocks and the last block of a channel to finish merges its partials and writes dgamma, dbeta
// and dx's coefficients; NHWC walks rows of lcm(C, V) elements, one column per thread
// (kernels/layout.cuh). The dx pass loads a 16-byte pack of dy and of x and takes the pack's V mask
// bits from one word.
// Prediction: both kernels near the copy rate: 12.125 / 20.25 = 0.60 of the floor's speed.
#pragma once

#include "kernels/fwd_v2_layout_aware.cuh"
#include "kernels/layout.cuh"

namespace ch05 {

template <int V, class T>
__global__ void __launch_bounds__(kBlock)
    bwd_v2_sums_nchw_kernel(BwdArgs<T> a, ChannelParams p, GradSums* partials, unsigned* counters, Divisor hw, int S) {
  __shared__ GradSums red[kWarps];
  const std::int64_t c = blockIdx.x % a.s.C, chunk = blockIdx.x / a.s.C;
  GradStreams<V, T> op(a.dy, a.x, a.mask);
  const float mean = a.saved_mean[c];
#pragma unroll
  for (int k = 0; k < V; ++k) op.mu[k] = mean;
  walk_nchw(op, a.s, hw, c, chunk * kBlock + threadIdx.x, static_cast<std::int64_t>(S) * kBlock, a.s.per_channel() / V);
  const GradSums sums = block_total(op, red);
  if (threadIdx.x == 0) partials[c * S + chunk] = sums;
  if (!last_block_to_finish(&counters[c], static_cast<unsigned>(S))) return;
  GradSums total{};
  for (int i = static_cast<int>(threadIdx.x); i < S; i += kBlock) total = merge(total, load_partial(partials + c * S + i));
  total = block_reduce<kBlock>(total, red);
  if (threadIdx.x == 0) finish_backward_channel(a, p, static_cast<int>(c), total);
}

// Element e's contribution alone (the NHWC elements after the last whole pack).
template <class T>
__device__ __forceinline__ GradSums grad_of(const BwdArgs<T>& a, std::int64_t e, std::int64_t c) {
  const float g = ((a.mask[e >> 5] >> (e & 31)) & 1u) ? to_float(a.dy[e]) : 0.0f;
  return {g, g * (to_float(a.x[e]) - a.saved_mean[c])};
}

// Stream k of column j holds channel (j * V + k) % C.
template <int V, class T>
__device__ __forceinline__ void column_means(GradStreams<V, T>& op, const BwdArgs<T>& a, std::int64_t j) {
#pragma unroll
  for (int k = 0; k < V; ++k) op.mu[k] = a.saved_mean[(j * V + k) % a.s.C];
}

template <int V, class T>
__global__ void __launch_bounds__(kBlock)
    bwd_v2_sums_nhwc_kernel(BwdArgs<T> a, ChannelParams p, GradSums* partials, unsigned* counters, NhwcPlan plan,
                            int gy) {
  __shared__ GradSums cols[kBlock * V];
  const int bxi = static_cast<int>(blockIdx.x % plan.gx), byi = static_cast<int>(blockIdx.x / plan.gx);
  const int tid = static_cast<int>(threadIdx.x), tx = tid % plan.bx, ty = tid / plan.bx;
  const std::int64_t j = static_cast<std::int64_t>(bxi) * plan.bx + tx;
  const bool has_column = ty < plan.by && j < plan.P;
  GradStreams<V, T> op(a.dy, a.x, a.mask);
  if (has_column) {
    column_means(op, a, j);
    walk_nhwc(op, plan, j, static_cast<std::int64_t>(byi) * plan.by + ty, static_cast<std::int64_t>(plan.by) * gy);
  }
  const int slots = plan.gx * gy + 1;
  columns_to_partials(op, has_column, cols, plan, a.s.C, bxi, partials, slots, static_cast<int>(blockIdx.x));
  if (blockIdx.x == 0)
    tail_to_partials<GradSums>(a.s, plan.q_full * V, partials, slots,
                               [&](std::int64_t e, std::int64_t c) { return grad_of(a, e, c); });
  if (!last_block_to_finish(&counters[0], gridDim.x)) return;
  const int warp = tid / 32, lane = tid % 32;
  for (std::int64_t c = warp; c < a.s.C; c += kWarps) {
    const GradSums total = warp_merge_partials(partials, c, slots);
    if (lane == 0) finish_backward_channel(a, p, static_cast<int>(c), total);
  }
}

// ---- The dx pass ----------------------------------------------------------------------------------

template <int V>
__device__ __forceinline__ void bwd_params_of_pack(const ChannelParams& p, const ChannelMap& map, int c,
                                                   std::int64_t pos, float (&mean)[V], float (&A)[V], float (&B)[V],
                                                   float (&K)[V]) {
  if (V > 1 && map.inner.d == 1 && map.channels.d % V == 0) {
    load_params<V>(p.mean + c, mean);
    load_params<V>(p.scale + c, A);
    load_params<V>(p.shift + c, B);
    load_params<V>(p.extra + c, K);
  } else if (V > 1 && pos + V <= map.inner.d) {
    const float m = p.mean[c], a = p.scale[c], b = p.shift[c], k0 = p.extra[c];
#pragma unroll
    for (int k = 0; k < V; ++k) mean[k] = m, A[k] = a, B[k] = b, K[k] = k0;
  } else {
#pragma unroll
    for (int k = 0; k < V; ++k) {
      mean[k] = p.mean[c], A[k] = p.scale[c], B[k] = p.shift[c], K[k] = p.extra[c];
      map.step(c, pos);
    }
  }
}

// One warp, elements [chunk * 32V, chunk * 32V + 32V), all inside the tensor. kStream: dx (and dr)
// stores evict first (version 3).
template <int V, class T, bool kAdd, bool kStream = false>
__device__ __forceinline__ void bwd_apply_chunk(const BwdArgs<T>& a, const ChannelParams& p, const ChannelMap& map,
                                                std::int64_t chunk, int lane) {
  const std::int64_t e0 = chunk * (32 * V) + lane * V;
  float dy[V], xv[V], mean[V], A[V], B[V], K[V], dx[V], g[V];
  if constexpr (V == 1) {
    dy[0] = to_float(a.dy[e0]);
    xv[0] = to_float(a.x[e0]);
  } else {
    load_pack<V>(a.dy + e0, dy);
    load_pack<V>(a.x + e0, xv);
  }
  const Word bits = a.mask[e0 >> 5] >> (e0 & 31);
  int c;
  std::int64_t pos;
  map.locate(e0, c, pos);
  bwd_params_of_pack<V>(p, map, c, pos, mean, A, B, K);
#pragma unroll
  for (int k = 0; k < V; ++k) {
    g[k] = ((bits >> k) & 1u) ? dy[k] : 0.0f;
    dx[k] = fmaf(A[k], g[k], fmaf(B[k], xv[k] - mean[k], K[k]));
  }
  if constexpr (V == 1) {
    a.dx[e0] = from_float<T>(dx[0]);
    if constexpr (kAdd) a.dr[e0] = from_float<T>(g[0]);
  } else {
    store_pack<V, T, kStream>(a.dx + e0, dx);
    if constexpr (kAdd) store_pack<V, T, kStream>(a.dr + e0, g);
  }
}

template <class T, bool kAdd>
__device__ void bwd_apply_tail(const BwdArgs<T>& a, const ChannelParams& p, const ChannelMap& map, std::int64_t first,
                               int lane) {
  const std::int64_t n = a.s.numel();
  for (std::int64_t i = first + lane; i < n; i += 32) {
    int c;
    std::int64_t pos;
    map.locate(i, c, pos);
    const float g = ((a.mask[i >> 5] >> (i & 31)) & 1u) ? to_float(a.dy[i]) : 0.0f;
    a.dx[i] = from_float<T>(fmaf(p.scale[c], g, fmaf(p.shift[c], to_float(a.x[i]) - p.mean[c], p.extra[c])));
    if constexpr (kAdd) a.dr[i] = from_float<T>(g);
  }
}

template <int V, class T, bool kAdd>
__global__ void __launch_bounds__(kBlock)
    bwd_v2_apply_kernel(BwdArgs<T> a, ChannelParams p, ChannelMap map, std::int64_t chunks) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  const std::int64_t warp = static_cast<std::int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32;
  if (warp < chunks) bwd_apply_chunk<V, T, kAdd>(a, p, map, warp, lane);
  if (warp == static_cast<std::int64_t>(gridDim.x) * kWarps - 1) bwd_apply_tail<T, kAdd>(a, p, map, chunks * 32 * V, lane);
}

// ---- Launchers ------------------------------------------------------------------------------------

template <class T>
std::size_t bwd_v2_scratch_bytes(const Shape4& s) {
  return Scratch(s.C, fwd_v2_partial_bytes(s, kPack<T>) / sizeof(Welford) * sizeof(GradSums), 0).total;
}

template <int V, class T>
void bwd_v2_sums(cudaStream_t st, const BwdArgs<T>& a, const Scratch& sc, void* ws) {
  const DeviceLimits d = device_limits();
  const ChannelParams p = sc.params_at(ws);
  GradSums* partials = sc.partials_at<GradSums>(ws);
  unsigned* counters = sc.counters_at(ws);
  if (a.s.layout == Layout::nchw) {
    const int S = nchw_splits(a.s, 8LL * d.sm_count);
    bwd_v2_sums_nchw_kernel<V, T><<<grid_of(a.s.C * S, "bwd_v2_sums_nchw"), kBlock, 0, st>>>(a, p, partials, counters,
                                                                                            Divisor(a.s.HW), S);
    TUT_CHECK_LAUNCH("bwd_v2_sums_nchw_kernel");
  } else {
    const NhwcPlan plan = nhwc_plan(a.s, V);
    const int gy = nhwc_row_blocks(plan, 4LL * d.sm_count);
    bwd_v2_sums_nhwc_kernel<V, T><<<grid_of(static_cast<std::int64_t>(plan.gx) * gy, "bwd_v2_sums_nhwc"), kBlock, 0, st>>>(
        a, p, partials, counters, plan, gy);
    TUT_CHECK_LAUNCH("bwd_v2_sums_nhwc_kernel");
  }
}

template <int V, class T, bool kAdd>
void bwd_v2_apply(cudaStream_t st, const BwdArgs<T>& a, const ChannelParams& p) {
  const std::int64_t chunks = a.s.numel() / (32 * V);
  const std::int64_t blocks = std::max<std::int64_t>(1, (chunks + kWarps - 1) / kWarps);
  bwd_v2_apply_kernel<V, T, kAdd><<<grid_of(blocks, "bwd_v2_apply"), kBlock, 0, st>>>(a, p, ChannelMap(a.s), chunks);
  TUT_CHECK_LAUNCH("bwd_v2_apply_kernel");
}

template <class T, bool kAdd>
bool bwd_apply_packs_ok(const BwdArgs<T>& a) {
  return aligned16(a.dy) && aligned16(a.x) && aligned16(a.dx) && (!kAdd || aligned16(a.dr));
}
// The sums read dy and x in packs: both aligned, and in NCHW runs of whole packs.
template <class T>
bool bwd_stats_packs_ok(const BwdArgs<T>& a) {
  return stats_packs_ok<T>(a.s, a.x) && aligned16(a.dy);
}

template <class T, bool kAdd>
void bwd_v2_layout_aware(cudaStream_t st, const BwdArgs<T>& a, void* ws) {
  check_shape(a.s, "bwd_v2_layout_aware");
  constexpr int V = kPack<T>;
  const Scratch sc(a.s.C, fwd_v2_partial_bytes(a.s, V) / sizeof(Welford) * sizeof(GradSums), 0);
  if (bwd_stats_packs_ok<T>(a)) bwd_v2_sums<V, T>(st, a, sc, ws);
  else bwd_v2_sums<1, T>(st, a, sc, ws);
  if (bwd_apply_packs_ok<T, kAdd>(a)) bwd_v2_apply<V, T, kAdd>(st, a, sc.params_at(ws));
  else bwd_v2_apply<1, T, kAdd>(st, a, sc.params_at(ws));
}

template <class T, bool kAdd>
std::vector<const void*> bwd_v2_kernels() {
  constexpr int V = kPack<T>;
  return {TUT_KERNEL(bwd_v2_sums_nchw_kernel<V, T>), TUT_KERNEL(bwd_v2_sums_nhwc_kernel<V, T>),
          TUT_KERNEL(bwd_v2_apply_kernel<V, T, kAdd>)};
}

}  // namespace ch05
