// fwd v6_balanced: v5, with phase 3's uncached packs handed out at run time, and phase 2's loads
// issued together.
//
// What changed since v5. The timeline of v4 and v5 (a timestamp per block at each phase's end,
// results/NVIDIA_H100_80GB_HBM3.phases.txt) shows where the time beyond the bytes goes: phase 1
// ends within 6 us on every block, but phase 3 ends over 20 to 26 us (at 64x64x112x112 NHWC float),
// because each thread's share of phase 3 is fixed while the SMs do not get the same share of the
// DRAM; and phase 2 takes 5 us, the DRAM idle, whatever the size.
//   Phase 3. Each thread still keeps its first K packs in shared memory (v5) and writes their y at
//   the end. The rest is a queue: a ticket is kTicketUnits consecutive units (packs of a channel in
//   NCHW, rows of a column in NHWC) of 32 threads of one phase-1 item, and the tickets go out back
//   to front, the units phase 1 read last (those the L2 still holds) first. A warp takes the next
//   ticket with one atomicAdd on its queue (one queue per warp index of the block, so each queue
//   serves an eighth of the grid) and acts as those 32 threads: the same walk, the same lane groups
//   for the mask words as in v4. A warp that finishes early takes more tickets, so the SMs finish
//   within about one ticket of each other.
//   Phase 2. A block per channel as in v4, but each thread issues the loads of all its partials
//   (up to four) before it merges any, and the channel's gamma, beta and running statistics are
//   loaded in the same flight: one L2 round trip instead of three or four in a row (Welford's merge
//   divides, and the compiler did not move the next load above the division).
//   Three blocks of 256 threads per SM: the fastest of 2, 3 and 4 in the timeline's sweep of v5.
// Bytes: v5's. Prediction: the end of phase 3 within a few us on every block, and phase 2 about
// 1 us: some 10 to 15 us less than v5 at 64x64x112x112 NHWC float, a few us at 16x32x112x112.
// Evidence: the timeline, and the time against v5 and cuDNN's fused kernel in the benchmark.
// Measured on the H100 (results/): the ends drew together (phase 3 ended over 10 us instead of 27
// at 64x64x112x112 NHWC float) but everything ended later: 0.2732 ms against v5's 0.2374, with the
// same DRAM bytes read (369 MB against 373) and the DRAM busy 64 % of the time instead of 73 %.
// A ticket is one round of four loads, and between rounds the warp finds its next item's walk and
// parameters (64-bit divisions, dependent loads) with nothing in flight: the setup v4 pays once
// per item, v6 pays per round. At 16x32x112x112 NHWC, where phase 2 and the tail weigh more, v6 is
// the fastest of ours (0.0390 ms against v5's 0.0415), still behind cuDNN's fused kernel (0.0356).
//
// The trap: a warp acts for 32 threads of another block's item, so everything it needs must be
// derived from (item, thread) alone, never from its own block; only the cached packs stay with
// their thread, and there are at most one item per block (else v6 runs v5).
#pragma once

#include "kernels/fwd_v5_onchip_cache.cuh"

namespace ch05 {

// ---- The queue of phase 3 (host and device: the CPU tests replay it) -------------------------------

// Units per ticket: one round of v4's loop (four packs in flight).
inline constexpr int kTicketUnits = 4;

// The tickets of one queue: `items` phase-1 items (at most one per block) by `rows` ticket rows of
// kTicketUnits units above the `first` units each thread keeps (its cached ones). Ticket t is item
// t % items, units [lo_of(t), lo_of(t) + kTicketUnits): the last row first.
struct TicketPlan {
  std::int64_t items = 0, first = 0, rows = 0;
  CH05_HD std::int64_t tickets() const { return items * rows; }
  CH05_HD std::int64_t item_of(std::int64_t t) const { return t % items; }
  CH05_HD std::int64_t lo_of(std::int64_t t) const { return first + (rows - 1 - t / items) * kTicketUnits; }
};

// A thread's walk as phase 3 sees it: v4's own item, cut at main_end (the units past it go to the
// tail warp).
CH05_HD inline OwnItem pass_item(const Shape4& s, const V3Plan& plan, int V, std::int64_t item, int tid,
                                 std::int64_t main_end) {
  OwnItem w = own_item(s, plan, V, item, tid);
  if (w.end > main_end) w.end = main_end;
  return w;
}

inline TicketPlan ticket_plan(const Shape4& s, const V3Plan& plan, int V, int cached, std::int64_t main_end) {
  TicketPlan t;
  t.items = v3_items(s, plan);
  t.first = cached;
  const std::int64_t most = pass_item(s, plan, V, 0, 0, main_end).count();  // item 0, thread 0: the longest
  t.rows = most > cached ? (most - cached + kTicketUnits - 1) / kTicketUnits : 0;
  return t;
}

// ---- Phase 2 --------------------------------------------------------------------------------------

// v4's own_merge, with every load of a thread in flight at once: pre(c) (the channel's other inputs,
// loaded by thread 0) and up to four partials per thread, then the merges; finish(c, total, pre).
template <class S, class Pre, class Finish>
__device__ void batched_merge(const S* partials, std::int64_t C, int slots, S* smem, Pre pre, Finish finish) {
  using In = decltype(pre(std::int64_t{0}));
  if (C <= static_cast<std::int64_t>(gridDim.x)) {
    for (std::int64_t c = blockIdx.x; c < C; c += gridDim.x) {
      In in{};
      if (threadIdx.x == 0) in = pre(c);
      S acc{};
      for (int base = 0; base < slots; base += 4 * kBlock) {
        S v[4];
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          const int i = base + k * kBlock + static_cast<int>(threadIdx.x);
          v[k] = i < slots ? load_partial(partials + c * slots + i) : S{};
        }
#pragma unroll
        for (int k = 0; k < 4; ++k) acc = merge(acc, v[k]);
      }
      acc = block_reduce<kBlock>(acc, smem);
      if (threadIdx.x == 0) finish(c, acc, in);
    }
    return;
  }
  const int lane = static_cast<int>(threadIdx.x % 32);
  for (std::int64_t c = static_cast<std::int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32; c < C;
       c += static_cast<std::int64_t>(gridDim.x) * kWarps) {
    In in{};
    if (lane == 0) in = pre(c);
    const S* q = partials + c * slots;
    S acc{};
    for (int base = 0; base < slots; base += 4 * 32) {
      S v[4];
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const int i = base + k * 32 + lane;
        v[k] = i < slots ? load_partial(q + i) : S{};
      }
#pragma unroll
      for (int k = 0; k < 4; ++k) acc = merge(acc, v[k]);
    }
    acc = warp_reduce(acc);
    if (lane == 0) finish(c, acc, in);
  }
}

// A channel's inputs to finish_forward_channel, loaded ahead of its partials.
struct FwdChannelIn {
  float gamma, beta, running_mean, running_var;
};
template <class T>
__device__ __forceinline__ FwdChannelIn fwd_channel_in(const FwdArgs<T>& a, std::int64_t c) {
  return {a.gamma[c], a.beta[c], a.running_mean[c], a.running_var[c]};
}
// finish_forward_channel (kernels/common.cuh) on inputs already loaded: the same arithmetic.
template <class T>
__device__ inline void finish_forward_channel(const FwdArgs<T>& a, const ChannelParams& p, int c, Welford w,
                                              const FwdChannelIn& in) {
  const float M = static_cast<float>(a.s.per_channel());
  const float var = w.m2 / M;
  const float invstd = 1.0f / sqrtf(var + a.eps);
  a.saved_mean[c] = w.mean;
  a.saved_invstd[c] = invstd;
  a.running_mean[c] = (1.0f - a.momentum) * in.running_mean + a.momentum * w.mean;
  a.running_var[c] = (1.0f - a.momentum) * in.running_var + a.momentum * (w.m2 / (M - 1.0f));
  p.mean[c] = w.mean;
  p.scale[c] = in.gamma * invstd;
  p.shift[c] = in.beta;
}

// ---- Phase 3 --------------------------------------------------------------------------------------

// Units [lo, hi) of the walk w, back to front, four packs in flight (two of x and two of r in the
// Add form), as v4's loop: n is this thread's own count (a lane past it votes false and stores
// nothing), hi the same for the whole warp. kCached: x from the thread's shared-memory slots
// (slot = unit: one item per block), else from memory.
template <int V, class T, bool kAdd, bool kCached, class Cache>
__device__ __forceinline__ void fwd_units(const FwdArgs<T>& a, const V3Plan& plan, const Cache& cache, const OwnItem& w,
                                          std::int64_t n, std::int64_t lo, std::int64_t hi, const float (&mean)[V],
                                          const float (&scale)[V], const float (&shift)[V]) {
  constexpr int kU = kAdd ? kOwnUnroll / 2 : kOwnUnroll;
  const int lane = static_cast<int>(threadIdx.x % 32);
  for (std::int64_t i = hi - 1; i >= lo; i -= kU) {
    uint4 q[kU], rq[kU];
#pragma unroll
    for (int b = 0; b < kU; ++b) {
      const std::int64_t ii = i - b;
      q[b] = rq[b] = make_uint4(0, 0, 0, 0);
      if (ii >= lo && ii < n) {
        const std::int64_t e0 = own_pack_at(a.s, plan, V, w, w.first + ii * w.step);
        if constexpr (kCached) q[b] = cache.fetch(ii, 0);
        else q[b] = load_raw<V, T>(a.x + e0);
        if constexpr (kAdd) rq[b] = load_raw<V, T>(a.r + e0);
      }
    }
#pragma unroll
    for (int b = 0; b < kU; ++b) {
      const std::int64_t ii = i - b;
      if (ii < lo) break;  // the same for the whole warp
      const bool valid = ii < n;
      const std::int64_t e0 = valid ? own_pack_at(a.s, plan, V, w, w.first + ii * w.step) : 0;
      float xv[V], rv[V], yv[V];
      unpack<V, T>(q[b], xv);
      if constexpr (kAdd) unpack<V, T>(rq[b], rv);
      Word ballots[V];
#pragma unroll
      for (int k = 0; k < V; ++k) {
        float s = fmaf(xv[k] - mean[k], scale[k], shift[k]);
        if constexpr (kAdd) s += rv[k];
        s = round_to<T>(s);
        yv[k] = relu(s);
        ballots[k] = __ballot_sync(kFullWarp, valid && kept(s));
      }
      if (valid) store_pack<V, T, true>(a.y + e0, yv);
      const int src = (lane % V) * (32 / V);  // word w of the V words: lanes w * 32 / V ..; lane w writes it
      const std::int64_t we = __shfl_sync(kFullWarp, e0, src);
      const bool wv = __shfl_sync(kFullWarp, valid, src);
      if (lane < V && wv) a.mask[we / 32] = tut::bitmask::word_from_ballots<V>(ballots, lane);
    }
  }
}

// The normalize pass: tickets from the warp's queue until it is empty, then the thread's cached units.
template <int V, class T, bool kAdd, class Cache>
__device__ void fwd_balanced_pass(const FwdArgs<T>& a, const ChannelParams& p, const V3Plan& plan, const Cache& cache,
                                  std::int64_t main_end, const TicketPlan& tp, unsigned long long* queues) {
  const int lane = static_cast<int>(threadIdx.x % 32);
  unsigned long long* queue = queues + threadIdx.x / 32;
  // Thread tid of `item`: its walk, its count, the warp's count (lane 0's, the longest), its channels' parameters.
  const auto walk = [&](std::int64_t item, OwnItem& w, std::int64_t& n, std::int64_t& n_warp, float (&mean)[V],
                        float (&scale)[V], float (&shift)[V]) {
    w = pass_item(a.s, plan, V, item, static_cast<int>(threadIdx.x), main_end);
    n = w.count();
    n_warp = __shfl_sync(kFullWarp, n, 0);
    int ch[V];
    own_channels<V>(a.s, w, ch);
#pragma unroll
    for (int k = 0; k < V; ++k) mean[k] = p.mean[ch[k]], scale[k] = p.scale[ch[k]], shift[k] = p.shift[ch[k]];
  };
  OwnItem w;
  std::int64_t n, n_warp;
  float mean[V], scale[V], shift[V];
  unsigned long long t = 0;
  if (lane == 0) t = atomicAdd(queue, 1ull);
  t = __shfl_sync(kFullWarp, t, 0);
  while (static_cast<std::int64_t>(t) < tp.tickets()) {
    unsigned long long next = 0;
    if (lane == 0) next = atomicAdd(queue, 1ull);  // taken now, its latency hidden behind this ticket
    const std::int64_t lo = tp.lo_of(static_cast<std::int64_t>(t));
    walk(tp.item_of(static_cast<std::int64_t>(t)), w, n, n_warp, mean, scale, shift);
    fwd_units<V, T, kAdd, false>(a, plan, cache, w, n, lo, lo + kTicketUnits < n_warp ? lo + kTicketUnits : n_warp, mean,
                                 scale, shift);
    t = __shfl_sync(kFullWarp, next, 0);
  }
  if (blockIdx.x >= tp.items) return;
  walk(blockIdx.x, w, n, n_warp, mean, scale, shift);
  fwd_units<V, T, kAdd, true>(a, plan, cache, w, n, 0, tp.first < n_warp ? tp.first : n_warp, mean, scale, shift);
}

// ---- The kernel -----------------------------------------------------------------------------------

template <int V, class T, bool kAdd, class Cache>
__global__ void __launch_bounds__(kBlock, Cache::kMinBlocks)
    fwd_v6_balanced_kernel(FwdArgs<T> a, ChannelParams p, Welford* partials, V3Plan plan, ChannelMap map,
                           std::int64_t main_end, std::int64_t tail_first, int cache_slots, TicketPlan tp,
                           unsigned long long* queues) {
  __shared__ Welford smem[kBlock * V];
  extern __shared__ uint4 ch05_onchip[];
  const Cache cache(ch05_onchip, cache_slots);
  cg::grid_group grid = cg::this_grid();
  if (blockIdx.x == 0 && threadIdx.x < kWarps) queues[threadIdx.x] = 0;  // read only after the barriers

  // 1. Partials, x read front to back; the cache keeps each thread's first packs (v5).
  fwd_own_stats<V>(a, plan, partials, smem, cache);
  grid.sync();

  // 2. A block (or a warp) per channel, all its loads in flight at once.
  batched_merge(
      partials, a.s.C, plan.slots, smem, [&](std::int64_t c) { return fwd_channel_in(a, c); },
      [&](std::int64_t c, Welford total, const FwdChannelIn& in) { finish_forward_channel(a, p, static_cast<int>(c), total, in); });
  grid.sync();

  // 3. The queue back to front, then the cached packs; the elements past the last whole word by one warp.
  if (blockIdx.x == gridDim.x - 1 && threadIdx.x < 32)
    fwd_apply_tail<T, kAdd>(a, p, map, tail_first, static_cast<int>(threadIdx.x));
  fwd_balanced_pass<V, T, kAdd>(a, p, plan, cache, main_end, tp, queues);
}

// ---- Launchers ------------------------------------------------------------------------------------

// Blocks of 256 threads per SM for v6, forward and backward (80 registers a thread).
inline constexpr int kBalancedBlocks = 3;

template <int V, class T, bool kAdd>
const void* fwd_v6_kernel() {
  return reinterpret_cast<const void*>(&fwd_v6_balanced_kernel<V, T, kAdd, SmemCache<T, 1, kBalancedBlocks>>);
}

// v5's scratch and the eight queues.
template <class T, class S>
Scratch v6_scratch(const Shape4& s) {
  return Scratch(s.C, v3_partial_bytes(s, kPack<T>, sizeof(S)), kWarps * sizeof(unsigned long long));
}
template <class T>
std::size_t fwd_v6_scratch_bytes(const Shape4& s) {
  return v6_scratch<T, Welford>(s).total;
}

template <class T, bool kAdd>
void fwd_v6_balanced(cudaStream_t st, const FwdArgs<T>& a, void* ws) {
  check_shape(a.s, "fwd_v6_balanced");
  constexpr int V = kPack<T>;
  using Cache = SmemCache<T, 1, kBalancedBlocks>;
  if (!own_packs_ok<T, kAdd>(a) || !own_words_whole(a.s, V)) return fwd_v5_onchip_cache<T, kAdd>(st, a, ws);
  const OnChip& oc = onchip_cached<&fwd_v6_kernel<V, T, kAdd>, kBalancedBlocks>(16);
  int slots = onchip_slots(oc, a.s, V, kBalancedBlocks);
  const std::size_t dyn = static_cast<std::size_t>(slots) * 16 * kBlock;
  const void* kernel = fwd_v6_kernel<V, T, kAdd>();
  const int grid = own_grid<Cache>(kernel, dyn, "fwd_v6_balanced");
  V3Plan plan = v3_plan(a.s, V, grid);
  if (v3_items(a.s, plan) > grid) return fwd_v5_onchip_cache<T, kAdd>(st, a, ws);  // more items than blocks
  const Scratch sc = v6_scratch<T, Welford>(a.s);
  ChannelParams p = sc.params_at(ws);
  Welford* partials = sc.partials_at<Welford>(ws);
  auto* queues = static_cast<unsigned long long*>(sc.buffer_at(ws));
  ChannelMap map(a.s);
  std::int64_t main_end = own_main_end(a.s, V);
  std::int64_t tail_first = a.s.layout == Layout::nchw ? a.s.numel() : main_end * plan.nhwc.L;
  TicketPlan tp = ticket_plan(a.s, plan, V, slots, main_end);
  FwdArgs<T> args_a = a;  // the launch takes its arguments by address
  void* args[] = {&args_a, &p, &partials, &plan, &map, &main_end, &tail_first, &slots, &tp, &queues};
  TUT_CUDA(cudaLaunchCooperativeKernel(kernel, grid, kBlock, args, dyn, st));
}

template <class T, bool kAdd>
std::vector<const void*> fwd_v6_kernels() {
  return {fwd_v6_kernel<kPack<T>, T, kAdd>()};
}

}  // namespace ch05
