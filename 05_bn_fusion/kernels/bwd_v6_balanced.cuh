// bwd v6_balanced: bwd v5, with the dx pass's uncached packs handed out at run time and phase 2's
// loads issued together, as fwd v6 does (kernels/fwd_v6_balanced.cuh).
//
// What changed since v5: phase 3 takes tickets of kTicketUnits units of 32 threads of an item from
// its warp's queue, back to front, then writes dx of the thread's cached packs (g and x from
// shared memory); phase 2 loads a block's partials and the channel's gamma, saved mean and inverse
// std in one flight. The backward writes no mask, so a lane needs nothing from its neighbours and
// runs its own range of a ticket.
// Bytes: v5's. Prediction: v5's timeline ends phase 3 over 11 us at 64x64x112x112 NHWC float
// (results/NVIDIA_H100_80GB_HBM3.phases.txt); balanced, about half of that is saved. The
// backward's DRAM is already as busy as cuDNN's (86 to 87 %), so no more than that.
// Evidence: the timeline, and the time against v5 and cuDNN's fused backward in the benchmark.
// Measured on the H100 (results/): slower, as the forward: 0.3590 ms against v5's 0.3488 at
// 64x64x112x112 NHWC float (the timeline's phase 3 ended over 6 us instead of 12, 33 us later),
// the DRAM busy 77 % of the time instead of 84 to 87 %.
#pragma once

#include "kernels/bwd_v5_onchip_cache.cuh"
#include "kernels/fwd_v6_balanced.cuh"

#include <limits>

namespace ch05 {

// A channel's inputs to finish_backward_channel, loaded ahead of its partials.
struct BwdChannelIn {
  float gamma, invstd, mean;
};
template <class T>
__device__ __forceinline__ BwdChannelIn bwd_channel_in(const BwdArgs<T>& a, std::int64_t c) {
  return {a.gamma[c], a.saved_invstd[c], a.saved_mean[c]};
}
// finish_backward_channel (kernels/common.cuh) on inputs already loaded: the same arithmetic.
template <class T>
__device__ inline void finish_backward_channel(const BwdArgs<T>& a, const ChannelParams& p, int c, GradSums s,
                                               const BwdChannelIn& in) {
  const float M = static_cast<float>(a.s.per_channel());
  const float invstd = in.invstd;
  const float dgamma = s.gx * invstd, dbeta = s.g;
  a.dgamma[c] = dgamma;
  a.dbeta[c] = dbeta;
  const float A = in.gamma * invstd;
  p.mean[c] = in.mean;
  p.scale[c] = A;
  p.shift[c] = -A * invstd * (dgamma / M);
  p.extra[c] = -A * (dbeta / M);
}

// Units [lo, hi) of the walk w, back to front, two packs of dy and two of x in flight (v4's loop).
// kCached: g and x from the thread's shared-memory slots (slot = unit), else dy, x and the mask.
template <int V, class T, bool kAdd, bool kCached, class Cache>
__device__ __forceinline__ void bwd_units(const BwdArgs<T>& a, const V3Plan& plan, const Cache& cache, const OwnItem& w,
                                          std::int64_t lo, std::int64_t hi, const float (&mean)[V], const float (&A)[V],
                                          const float (&B)[V], const float (&K)[V]) {
  constexpr int kU = kOwnUnrollBwd;
  for (std::int64_t i = hi - 1; i >= lo; i -= kU) {
    uint4 qg[kU], qx[kU];
    Word bits[kU];
#pragma unroll
    for (int b = 0; b < kU; ++b) {
      const std::int64_t ii = i - b;
      if (ii < lo) break;
      if constexpr (kCached) {
        qg[b] = cache.fetch(ii, 0);
        qx[b] = cache.fetch(ii, 1);
        bits[b] = ~Word{0};
      } else {
        const std::int64_t e0 = own_pack_at(a.s, plan, V, w, w.first + ii * w.step);
        qg[b] = load_raw<V, T>(a.dy + e0);
        qx[b] = load_raw<V, T>(a.x + e0);
        bits[b] = a.mask[e0 >> 5] >> (e0 & 31);  // the pack's V bits
      }
    }
#pragma unroll
    for (int b = 0; b < kU; ++b) {
      const std::int64_t ii = i - b;
      if (ii < lo) break;
      bwd_finish_pack<V, T, kAdd>(a, own_pack_at(a.s, plan, V, w, w.first + ii * w.step), qg[b], qx[b], bits[b], mean, A,
                                  B, K);
    }
  }
}

template <int V, class T, bool kAdd, class Cache>
__device__ void bwd_balanced_pass(const BwdArgs<T>& a, const ChannelParams& p, const V3Plan& plan, const Cache& cache,
                                  const TicketPlan& tp, unsigned long long* queues) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  unsigned long long* queue = queues + threadIdx.x / 32;
  const auto walk = [&](std::int64_t item, OwnItem& w, float (&mean)[V], float (&A)[V], float (&B)[V], float (&K)[V]) {
    w = own_item(a.s, plan, V, item, static_cast<int>(threadIdx.x));
    int ch[V];
    own_channels<V>(a.s, w, ch);
#pragma unroll
    for (int k = 0; k < V; ++k) mean[k] = p.mean[ch[k]], A[k] = p.scale[ch[k]], B[k] = p.shift[ch[k]], K[k] = p.extra[ch[k]];
  };
  OwnItem w;
  float mean[V], A[V], B[V], K[V];
  unsigned long long t = 0;
  if (lane == 0) t = atomicAdd(queue, 1ull);
  t = __shfl_sync(kFullWarp, t, 0);
  while (static_cast<std::int64_t>(t) < tp.tickets()) {
    unsigned long long next = 0;
    if (lane == 0) next = atomicAdd(queue, 1ull);
    const std::int64_t lo = tp.lo_of(static_cast<std::int64_t>(t));
    walk(tp.item_of(static_cast<std::int64_t>(t)), w, mean, A, B, K);
    const std::int64_t n = w.count();
    bwd_units<V, T, kAdd, false>(a, plan, cache, w, lo, lo + kTicketUnits < n ? lo + kTicketUnits : n, mean, A, B, K);
    t = __shfl_sync(kFullWarp, next, 0);
  }
  if (blockIdx.x >= tp.items) return;
  walk(blockIdx.x, w, mean, A, B, K);
  if (!w.active) return;
  if (a.s.layout == Layout::nhwc) {  // the column's pack in the partial row, if it has one
    const std::int64_t last = nhwc_partial_row(plan.nhwc, w.j, w.first, w.step);
    if (last >= 0) {
      const std::int64_t e0 = nhwc_pack_at(plan.nhwc, last, w.j);
      bwd_finish_pack<V, T, kAdd>(a, e0, load_raw<V, T>(a.dy + e0), load_raw<V, T>(a.x + e0),
                                  a.mask[e0 >> 5] >> (e0 & 31), mean, A, B, K);
    }
  }
  const std::int64_t n = w.count();
  bwd_units<V, T, kAdd, true>(a, plan, cache, w, 0, tp.first < n ? tp.first : n, mean, A, B, K);
}

template <int V, class T, bool kAdd, class Cache>
__global__ void __launch_bounds__(kBlock, Cache::kMinBlocks)
    bwd_v6_balanced_kernel(BwdArgs<T> a, ChannelParams p, GradSums* partials, V3Plan plan, ChannelMap map,
                           std::int64_t tail_first, int cache_slots, TicketPlan tp, unsigned long long* queues) {
  __shared__ GradSums smem[kBlock * V];
  extern __shared__ uint4 ch05_onchip[];
  const Cache cache(ch05_onchip, cache_slots);
  cg::grid_group grid = cg::this_grid();
  if (blockIdx.x == 0 && threadIdx.x < kWarps) queues[threadIdx.x] = 0;  // read only after the barriers

  // 1. Partials, dy, x and the mask read front to back; the cache keeps g and x of the first packs (v5).
  bwd_own_stats<V>(a, plan, partials, smem, cache);
  grid.sync();

  // 2. A block (or a warp) per channel, all its loads in flight at once.
  batched_merge(
      partials, a.s.C, plan.slots, smem, [&](std::int64_t c) { return bwd_channel_in(a, c); },
      [&](std::int64_t c, GradSums total, const BwdChannelIn& in) { finish_backward_channel(a, p, static_cast<int>(c), total, in); });
  grid.sync();

  // 3. The queue back to front, then the partial row and the cached packs; the elements after the
  // last whole pack by one warp.
  if (blockIdx.x == gridDim.x - 1 && threadIdx.x < 32)
    bwd_apply_tail<T, kAdd>(a, p, map, tail_first, static_cast<int>(threadIdx.x));
  bwd_balanced_pass<V, T, kAdd>(a, p, plan, cache, tp, queues);
}

// Blocks per SM: three for float, as the forward; two for half, whose eight channels per pack need
// 32 registers of A, B, K and the mean, and whose dx loop spilled at three (80 registers a thread).
template <class T>
inline constexpr int kBalancedBlocksBwd = std::is_same_v<T, float> ? kBalancedBlocks : 2;

template <int V, class T, bool kAdd>
const void* bwd_v6_kernel() {
  return reinterpret_cast<const void*>(&bwd_v6_balanced_kernel<V, T, kAdd, SmemCache<T, 2, kBalancedBlocksBwd<T>>>);
}

template <class T>
std::size_t bwd_v6_scratch_bytes(const Shape4& s) {
  return v6_scratch<T, GradSums>(s).total;
}

template <class T, bool kAdd>
void bwd_v6_balanced(cudaStream_t st, const BwdArgs<T>& a, void* ws) {
  check_shape(a.s, "bwd_v6_balanced");
  constexpr int V = kPack<T>;
  constexpr int kBlocks = kBalancedBlocksBwd<T>;
  using Cache = SmemCache<T, 2, kBlocks>;
  if (!bwd_own_packs_ok<T, kAdd>(a)) return bwd_v5_onchip_cache<T, kAdd>(st, a, ws);
  const OnChip& oc = onchip_cached<&bwd_v6_kernel<V, T, kAdd>, kBlocks>(32);
  int slots = onchip_slots(oc, a.s, V, kBlocks);
  const std::size_t dyn = static_cast<std::size_t>(slots) * 32 * kBlock;
  const void* kernel = bwd_v6_kernel<V, T, kAdd>();
  const int grid = own_grid<Cache>(kernel, dyn, "bwd_v6_balanced");
  V3Plan plan = v3_plan(a.s, V, grid);
  if (v3_items(a.s, plan) > grid) return bwd_v5_onchip_cache<T, kAdd>(st, a, ws);  // more items than blocks
  const Scratch sc = v6_scratch<T, GradSums>(a.s);
  ChannelParams p = sc.params_at(ws);
  GradSums* partials = sc.partials_at<GradSums>(ws);
  auto* queues = static_cast<unsigned long long*>(sc.buffer_at(ws));
  ChannelMap map(a.s);
  std::int64_t tail_first = a.s.layout == Layout::nchw ? a.s.numel() : plan.nhwc.q_full * V;
  TicketPlan tp = ticket_plan(a.s, plan, V, slots, std::numeric_limits<std::int64_t>::max());
  BwdArgs<T> args_a = a;  // the launch takes its arguments by address
  void* args[] = {&args_a, &p, &partials, &plan, &map, &tail_first, &slots, &tp, &queues};
  TUT_CUDA(cudaLaunchCooperativeKernel(kernel, grid, kBlock, args, dyn, st));
}

template <class T, bool kAdd>
std::vector<const void*> bwd_v6_kernels() {
  return {bwd_v6_kernel<kPack<T>, T, kAdd>()};
}

}  // namespace ch05
