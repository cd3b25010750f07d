// fwd v4_own_packs: v3's cooperative kernel, with its two latency-bound steps reworked: the
// normalize pass (phase 3) walks each thread's own phase-1 packs, back to front, four in flight;
// and the merge of the partials (phase 2) gives each channel a block instead of a warp.
//
// What changed since v3.
//   Phase 3. v3's is v2's normalize pass: one warp per chunk of 32 packs, in reverse chunk order.
//   Each iteration loads one 16-byte pack, finds its channel (a double multiply and a correction),
//   loads its parameters, computes, stores. The loop body ends with a store the next iteration's
//   load may not pass (y and x could alias, as far as the compiler knows), so a thread has one
//   16-byte load in flight: 16 KiB per SM at 1024 threads, against the 25 KiB chapter 04's fastest
//   pass keeps in flight (its profile JSON). Here phase 3 visits the very packs the thread read in
//   phase 1, in the opposite order (the walks of kernels/layout.cuh, replayed by OwnItem): the
//   thread's channels are fixed (NCHW: the item's channel; NHWC: its column's V channels), so the
//   parameters are loaded once per item, and the walk loads four packs (the Add form: two of x and
//   two of r) before it computes the first: 64 bytes per thread in flight, as in phase 1.
//   Phase 2. v3 merges a channel's partials with one warp whose lanes load their 17 partials (at
//   528 blocks) one after another, an L2 round trip each; here a block per channel, one to three
//   loads per thread in flight together, then the block's merge (own_merge).
// The mask: a ballot makes a word only from lanes whose elements are 32 consecutive elements in
// memory. Phase 1's walks give a lane group of 32 / V lanes exactly one word when, in NCHW, H*W is
// a multiple of 32 (a word never straddles two runs), and in NHWC when the P packs of a row and the
// 32 / V lanes of a word divide one another (for float: C = 1, 2, 4, ..., 128 and every multiple of
// 32). own_words_whole() says so; in any other case v4 runs v3. The elements after the last whole
// word of the walk (fewer than a row and a word, NHWC only) go to one warp, as in v3.
// Bytes: as v3 (x twice, the second read's first part from the L2).
// Prediction: the same DRAM bytes as v3 (Nsight Compute's dram__bytes_read.sum) in less time:
// phase 3 with four times the bytes in flight, and a phase 2 of one L2 round trip instead of 17.
// Evidence: the profile's DRAM bytes and throughput, v3 against v4.
// Measured on the H100 (results/NVIDIA_H100_80GB_HBM3.json, 64x64x112x112): NCHW float 0.2433 ms
// against v3's 0.2357, slower; NHWC float 0.2368 against 0.2400, the fastest NHWC forward of ours;
// half NHWC 0.1536 against 0.1474. The phase timeline (phases.txt) shows where the rest goes: the
// DRAM idle between the phases, and phase 3 ending about 19 us later on the last block than on the first.
//
// The trap: the ballots need all 32 lanes, but lanes of one warp may own different numbers of
// packs (a warp spans several rows, or the end of a channel). The loop runs the warp's longest
// count (lane 0's: lanes further right start later), and a lane past its own end votes false and
// stores nothing; a lane group is either wholly inside the walk or wholly outside
// (tests/test_cpu.cu replays every thread of a grid to check it).
#pragma once

#include "kernels/fwd_v3_single_read.cuh"

namespace ch05 {

// ---- A thread's own packs (host and device: the CPU tests replay them) ----------------------------

// One item of one thread in phase 1 of versions 3 to 5: the units first, first + step, ... below
// end, where a unit is a pack index within channel c (NCHW) or a row of column j (NHWC).
struct OwnItem {
  std::int64_t first = 0, step = 1, end = 0;
  std::int64_t c = 0, j = 0;
  bool active = false;
  CH05_HD std::int64_t count() const { return active && first < end ? (end - first + step - 1) / step : 0; }
};

CH05_HD inline std::int64_t v3_items(const Shape4& s, const V3Plan& plan) {
  return s.layout == Layout::nchw ? s.C * plan.S : static_cast<std::int64_t>(plan.nhwc.gx) * plan.gy;
}

// Thread `tid`'s part of `item`, as v3_partials walks it.
CH05_HD inline OwnItem own_item(const Shape4& s, const V3Plan& plan, int V, std::int64_t item, int tid) {
  OwnItem w;
  if (s.layout == Layout::nchw) {
    w.c = item % s.C;
    w.first = (item / s.C) * kBlock + tid;
    w.step = static_cast<std::int64_t>(plan.S) * kBlock;
    w.end = s.per_channel() / V;
    w.active = true;
  } else {
    const NhwcPlan& p = plan.nhwc;
    const std::int64_t bxi = item % p.gx, byi = item / p.gx;
    const int tx = tid % p.bx, ty = tid / p.bx;
    w.j = bxi * p.bx + tx;
    w.active = ty < p.by && w.j < p.P;
    w.first = byi * p.by + ty;
    w.step = static_cast<std::int64_t>(p.by) * plan.gy;
    w.end = p.q_full / p.P;
  }
  return w;
}

// The first element of unit u's pack.
CH05_HD inline std::int64_t own_pack_at(const Shape4& s, const V3Plan& plan, int V, const OwnItem& w, std::int64_t u) {
  return s.layout == Layout::nchw ? nchw_pack_at(s, plan.hw, w.c, u, V) : nhwc_pack_at(plan.nhwc, u, w.j);
}

// Whether each group of 32 / V lanes holds whole mask words in phase 3 (the header says when).
inline bool own_words_whole(const Shape4& s, int V) {
  if (s.layout == Layout::nchw) return s.HW % 32 == 0;
  const std::int64_t lanes = 32 / V, P = nhwc_plan(s, V).P;
  return P % lanes == 0 || lanes % P == 0;
}

// The units (NCHW: packs of a channel; NHWC: rows) phase 3 walks: all of NCHW's; in NHWC the whole
// rows, cut down to a multiple of 32 elements (rows of L < 32 elements).
inline std::int64_t own_main_end(const Shape4& s, int V) {
  if (s.layout == Layout::nchw) return s.per_channel() / V;
  const NhwcPlan p = nhwc_plan(s, V);
  const std::int64_t full_rows = p.q_full / p.P;
  return p.L % 32 == 0 ? full_rows : full_rows * p.L / 32 * 32 / p.L;
}

// ---- Packs as loaded ----------------------------------------------------------------------------------

// Phase 3 holds its packs as loaded, 16 bytes each (one element in .x for V = 1), and converts one
// at a time: four packs of 8 halves as floats would take 32 registers.
template <int V, class T>
__device__ __forceinline__ uint4 load_raw(const T* p) {
  if constexpr (V * sizeof(T) == 16) {
    return *reinterpret_cast<const uint4*>(p);
  } else {
    static_assert(V == 1, "a 16-byte pack or one element");
    uint4 q = make_uint4(0, 0, 0, 0);
    if constexpr (std::is_same_v<T, float>) q.x = __float_as_uint(*p);
    else q.x = __half_as_ushort(*p);
    return q;
  }
}
template <int V, class T>
__device__ __forceinline__ void unpack(uint4 q, float (&v)[V]) {
  if constexpr (V == 1) {
    if constexpr (std::is_same_v<T, float>) v[0] = __uint_as_float(q.x);
    else v[0] = __half2float(__ushort_as_half(static_cast<unsigned short>(q.x)));
  } else if constexpr (std::is_same_v<T, float>) {
    v[0] = __uint_as_float(q.x), v[1] = __uint_as_float(q.y), v[2] = __uint_as_float(q.z), v[3] = __uint_as_float(q.w);
  } else {
    const unsigned w[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
    for (int h = 0; h < 4; ++h) {
      const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&w[h]));
      v[2 * h] = f.x, v[2 * h + 1] = f.y;
    }
  }
}
// The inverse, for values that came from T (so the conversion back is exact).
template <int V, class T>
__device__ __forceinline__ uint4 repack(const float (&v)[V]) {
  if constexpr (V == 1) {
    return make_uint4(std::is_same_v<T, float> ? __float_as_uint(v[0])
                                               : static_cast<unsigned>(__half_as_ushort(__float2half_rn(v[0]))),
                      0, 0, 0);
  } else if constexpr (std::is_same_v<T, float>) {
    return make_uint4(__float_as_uint(v[0]), __float_as_uint(v[1]), __float_as_uint(v[2]), __float_as_uint(v[3]));
  } else {
    unsigned w[4];
#pragma unroll
    for (int h = 0; h < 4; ++h) {
      const __half2 pair = __floats2half2_rn(v[2 * h], v[2 * h + 1]);
      w[h] = *reinterpret_cast<const unsigned*>(&pair);
    }
    return make_uint4(w[0], w[1], w[2], w[3]);
  }
}

// ---- What phase 1 keeps for phase 3 ----------------------------------------------------------------

// v4 keeps nothing: phase 3 reads every pack again. Version 5 (kernels/fwd_v5_onchip_cache.cuh)
// plugs a cache in here, which holds a thread's first packs in shared memory. kBlocks: the blocks
// of 256 threads per SM the kernel is compiled for (its register cap) and launched with.
template <int kBlocks>
struct NoCache {
  static constexpr int kMinBlocks = kBlocks;
  __device__ NoCache(void*, int) {}
  __device__ bool holds(std::int64_t) const { return false; }
  __device__ void keep(std::int64_t, int, uint4) const {}
  __device__ uint4 fetch(std::int64_t, int) const { return make_uint4(0, 0, 0, 0); }
};

// ---- Phase 1 --------------------------------------------------------------------------------------

// v3_partials, written over OwnItem, numbering the thread's units in order (its "slots") and
// handing each to keep(slot, data) before it is added. The NHWC partial row is not numbered.
// kU packs are loaded before the first is added (kernels/layout.cuh: 64 bytes for float, 32 for half).
// kWarpCols: the NHWC columns merged with fewer barriers (columns_to_partials_warps, v19).
template <class Op, int kU = kUnrollFor<Op::V>, bool kWarpCols = false, class MakeOp, class Keep, class One>
__device__ void own_partials(const Shape4& s, const V3Plan& plan, typename Op::Stat* partials, typename Op::Stat* smem,
                             MakeOp make_op, Keep keep, One one) {
  using S = typename Op::Stat;
  constexpr int V = Op::V;
  const int tid = static_cast<int>(threadIdx.x);
  const std::int64_t items = v3_items(s, plan);
  std::int64_t slot = 0;
  for (std::int64_t item = blockIdx.x; item < items; item += gridDim.x) {
    const OwnItem w = own_item(s, plan, V, item, tid);
    Op op = make_op(w);
    if (w.active) {
      sequence<kU>(
          w.first, w.step, w.end, [&](std::int64_t u) { return op.load(own_pack_at(s, plan, V, w, u)); },
          [&](const typename Op::Data& d) {
            keep(slot++, d);
            op.add(d);
          });
      if (s.layout == Layout::nhwc) {
        const std::int64_t last = nhwc_partial_row(plan.nhwc, w.j, w.first, w.step);
        if (last >= 0) op.add(op.load(nhwc_pack_at(plan.nhwc, last, w.j)));
      }
    }
    if (s.layout == Layout::nchw) {
      const S total = block_total(op, smem);
      if (tid == 0) partials[w.c * plan.slots + item / s.C] = total;
    } else {
      if constexpr (kWarpCols)
        columns_to_partials_warps(op, w.active, smem, plan.nhwc, s.C, static_cast<int>(item % plan.nhwc.gx), partials,
                                  plan.slots, static_cast<int>(item));
      else
        columns_to_partials(op, w.active, smem, plan.nhwc, s.C, static_cast<int>(item % plan.nhwc.gx), partials,
                            plan.slots, static_cast<int>(item));
    }
  }
  if (s.layout == Layout::nhwc && blockIdx.x == gridDim.x - 1)
    tail_to_partials<S>(s, plan.nhwc.q_full * V, partials, plan.slots, one);
}

// The slots of the thread's items before `item`'s, counted from the last item down: phase 3 walks
// the items in reverse. Returns the number of slots of all the thread's items.
__device__ inline std::int64_t own_slot_count(const Shape4& s, const V3Plan& plan, int V) {
  std::int64_t n = 0;
  for (std::int64_t item = blockIdx.x; item < v3_items(s, plan); item += gridDim.x)
    n += own_item(s, plan, V, item, static_cast<int>(threadIdx.x)).count();
  return n;
}

// The parameters of the V channels of the thread's packs in `w`.
template <int V>
__device__ __forceinline__ void own_channels(const Shape4& s, const OwnItem& w, int (&ch)[V]) {
#pragma unroll
  for (int k = 0; k < V; ++k) ch[k] = static_cast<int>(s.layout == Layout::nchw ? w.c : (w.j * V + k) % s.C);
}

// ---- Phase 2 --------------------------------------------------------------------------------------

// Channel c's `slots` partials merged, and finish(c, total) by one thread. v3 gives a channel one
// warp, whose lanes load their 17 partials (at 528 blocks) one after another, each an L2 round
// trip. Here, while there are no more channels than blocks, a channel gets a whole block: one to
// three loads per thread, in flight together, then the block's merge; with more channels, a warp
// each, four loads in flight per lane.
template <class S, class Finish>
__device__ void own_merge(const S* partials, std::int64_t C, int slots, S* smem, Finish finish) {
  if (C <= static_cast<std::int64_t>(gridDim.x)) {
    for (std::int64_t c = blockIdx.x; c < C; c += gridDim.x) {
      S acc{};
      for (int i = static_cast<int>(threadIdx.x); i < slots; i += kBlock) acc = merge(acc, load_partial(partials + c * slots + i));
      acc = block_reduce<kBlock>(acc, smem);
      if (threadIdx.x == 0) finish(c, acc);
    }
    return;
  }
  const int lane = static_cast<int>(threadIdx.x % 32);
  for (std::int64_t c = static_cast<std::int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32; c < C;
       c += static_cast<std::int64_t>(gridDim.x) * kWarps) {
    const S* q = partials + c * slots;
    S acc{};
    int i = lane;
    for (; i + 3 * 32 < slots; i += 4 * 32) {
      S v[4];
#pragma unroll
      for (int k = 0; k < 4; ++k) v[k] = load_partial(q + i + 32 * k);
#pragma unroll
      for (int k = 0; k < 4; ++k) acc = merge(acc, v[k]);
    }
    for (; i < slots; i += 32) acc = merge(acc, load_partial(q + i));
    acc = warp_reduce(acc);
    if (lane == 0) finish(c, acc);
  }
}

// ---- Phase 3 --------------------------------------------------------------------------------------

// Packs a thread of phase 3 loads before it computes the first: 64 bytes, as phase 1.
inline constexpr int kOwnUnroll = 4;

template <int V, class T, bool kAdd, class Cache>
__device__ void fwd_own_pass(const FwdArgs<T>& a, const ChannelParams& p, const V3Plan& plan, const Cache& cache,
                             std::int64_t main_end) {
  constexpr int kU = kAdd ? kOwnUnroll / 2 : kOwnUnroll;  // the Add form loads r too: 64 bytes either way
  const int lane = static_cast<int>(threadIdx.x % 32);
  const std::int64_t items = v3_items(a.s, plan);
  if (blockIdx.x >= items) return;
  std::int64_t slots = own_slot_count(a.s, plan, V);
  const std::int64_t last_item = blockIdx.x + (items - 1 - blockIdx.x) / gridDim.x * gridDim.x;
  for (std::int64_t item = last_item; item >= static_cast<std::int64_t>(blockIdx.x); item -= gridDim.x) {
    const OwnItem w = own_item(a.s, plan, V, item, static_cast<int>(threadIdx.x));
    slots -= w.count();  // the slot of this item's first unit
    OwnItem m = w;
    m.end = w.end < main_end ? w.end : main_end;
    const std::int64_t n = m.count();
    const std::int64_t n_warp = __shfl_sync(kFullWarp, n, 0);  // lane 0 starts first: the longest
    int ch[V];
    own_channels<V>(a.s, w, ch);
    float mean[V], scale[V], shift[V];
#pragma unroll
    for (int k = 0; k < V; ++k) mean[k] = p.mean[ch[k]], scale[k] = p.scale[ch[k]], shift[k] = p.shift[ch[k]];
    for (std::int64_t i = n_warp - 1; i >= 0; i -= kU) {
      uint4 q[kU], rq[kU];
#pragma unroll
      for (int b = 0; b < kU; ++b) {
        const std::int64_t ii = i - b;
        q[b] = rq[b] = make_uint4(0, 0, 0, 0);
        if (ii >= 0 && ii < n) {
          const std::int64_t e0 = own_pack_at(a.s, plan, V, w, w.first + ii * w.step);
          q[b] = cache.holds(slots + ii) ? cache.fetch(slots + ii, 0) : load_raw<V, T>(a.x + e0);
          if constexpr (kAdd) rq[b] = load_raw<V, T>(a.r + e0);
        }
      }
#pragma unroll
      for (int b = 0; b < kU; ++b) {
        const std::int64_t ii = i - b;
        if (ii < 0) break;  // the same for the whole warp
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
        if (valid) {
          if constexpr (V == 1) a.y[e0] = from_float<T>(yv[0]);
          else store_pack<V, T, true>(a.y + e0, yv);
        }
        // Word w of the V words belongs to lanes w * 32 / V ..; lane w writes it.
        const int src = (lane % V) * (32 / V);
        const std::int64_t we = __shfl_sync(kFullWarp, e0, src);
        const bool wv = __shfl_sync(kFullWarp, valid, src);
        if (lane < V && wv) a.mask[we / 32] = tut::bitmask::word_from_ballots<V>(ballots, lane);
      }
    }
  }
}

// ---- The kernel -----------------------------------------------------------------------------------

// Phase 1 of every own-packs forward (v4 to v7, v17 and v19, and tools/phase_timeline.cu's probes):
// the thread's Welford partials of x, read front to back, each pack handed to the cache before it
// is added. kWarpCols: as own_partials.
template <int V, class T, class Cache, int kU = kUnrollFor<V>, bool kWarpCols = false>
__device__ __forceinline__ void fwd_own_stats(const FwdArgs<T>& a, const V3Plan& plan, Welford* partials, Welford* smem,
                                              const Cache& cache) {
  own_partials<WelfordStreams<V, T>, kU, kWarpCols>(
      a.s, plan, partials, smem, [&](const OwnItem&) { return WelfordStreams<V, T>(a.x); },
      [&](std::int64_t slot, const typename WelfordStreams<V, T>::Data& d) { cache.keep(slot, 0, repack<V, T>(d.v)); },
      [&](std::int64_t e, std::int64_t) { return Welford{1.0f, to_float(a.x[e]), 0.0f}; });
}

template <int V, class T, bool kAdd, class Cache>
__global__ void __launch_bounds__(kBlock, Cache::kMinBlocks)
    fwd_v4_own_packs_kernel(FwdArgs<T> a, ChannelParams p, Welford* partials, V3Plan plan, ChannelMap map,
                            std::int64_t main_end, std::int64_t tail_first, int cache_slots) {
  __shared__ Welford smem[kBlock * V];
  extern __shared__ uint4 ch05_onchip[];
  const Cache cache(ch05_onchip, cache_slots);
  cg::grid_group grid = cg::this_grid();

  // 1. Partials, x read front to back; the cache keeps what it can of each thread's first packs.
  fwd_own_stats<V>(a, plan, partials, smem, cache);
  grid.sync();

  // 2. A block (or a warp) per channel.
  own_merge(partials, a.s.C, plan.slots, smem,
            [&](std::int64_t c, Welford total) { finish_forward_channel(a, p, static_cast<int>(c), total); });
  grid.sync();

  // 3. The thread's own packs, back to front; the few elements past the last whole word by one warp.
  if (blockIdx.x == gridDim.x - 1 && threadIdx.x < 32)
    fwd_apply_tail<T, kAdd>(a, p, map, tail_first, static_cast<int>(threadIdx.x));
  fwd_own_pass<V, T, kAdd>(a, p, plan, cache, main_end);
}

// ---- Launchers ------------------------------------------------------------------------------------

// Cache::kMinBlocks blocks on every SM, checked to fit: a cooperative launch needs them all resident.
template <class Cache>
int own_grid(const void* kernel, std::size_t dyn_bytes, const char* who) {
  int per_sm = 0;
  TUT_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kBlock, dyn_bytes));
  if (per_sm < Cache::kMinBlocks)
    throw std::runtime_error(std::string(who) + ": " + std::to_string(Cache::kMinBlocks) + " blocks per SM do not fit (" +
                             std::to_string(per_sm) + ")");
  return device_limits().sm_count * Cache::kMinBlocks;
}

// The cooperative launch of fwd_v4_own_packs_kernel<V, T, kAdd, Cache> with `dyn_bytes` of dynamic
// shared memory for `cache_slots` slots per thread.
template <int V, class T, bool kAdd, class Cache>
void fwd_own_launch(cudaStream_t st, FwdArgs<T> a, const Scratch& sc, void* ws, std::size_t dyn_bytes, int cache_slots) {
  const void* kernel = reinterpret_cast<const void*>(&fwd_v4_own_packs_kernel<V, T, kAdd, Cache>);
  const int grid = own_grid<Cache>(kernel, dyn_bytes, "fwd_own_packs");
  V3Plan plan = v3_plan(a.s, V, grid);
  ChannelParams p = sc.params_at(ws);
  Welford* partials = sc.partials_at<Welford>(ws);
  ChannelMap map(a.s);
  std::int64_t main_end = own_main_end(a.s, V);
  std::int64_t tail_first = a.s.layout == Layout::nchw ? a.s.numel() : main_end * plan.nhwc.L;
  void* args[] = {&a, &p, &partials, &plan, &map, &main_end, &tail_first, &cache_slots};
  TUT_CUDA(cudaLaunchCooperativeKernel(kernel, grid, kBlock, args, dyn_bytes, st));
}

template <class T, bool kAdd>
bool own_packs_ok(const FwdArgs<T>& a) {
  return stats_packs_ok<T>(a.s, a.x) && fwd_apply_packs_ok<T, kAdd>(a);
}

// Blocks of 256 threads per SM for versions 4 and 5: the most at which phase 3's loop keeps all it
// holds in registers (tests/test_sass.cpp checks it has no LDL/STL). The float forward: four, 1024
// threads of 64 registers, as v3. The half forward (a pack's eight channels take 24 registers of
// parameters) and the backward (A, B, K and the mean per channel, dy and x in flight): three, 768
// threads of 80 registers; at 64 the compiler spills inside the loop.
template <class T>
inline constexpr int kOwnBlocks = std::is_same_v<T, float> ? 4 : 3;
inline constexpr int kOwnBlocksBwd = 3;

template <class T, bool kAdd, int kBlocks = kOwnBlocks<T>>
void fwd_v4_own_packs(cudaStream_t st, const FwdArgs<T>& a, void* ws) {
  check_shape(a.s, "fwd_v4_own_packs");
  constexpr int V = kPack<T>;
  const bool packs = own_packs_ok<T, kAdd>(a);
  if (!own_words_whole(a.s, packs ? V : 1)) return fwd_v3_single_read<T, kAdd>(st, a, ws);
  const Scratch sc(a.s.C, v3_partial_bytes(a.s, V, sizeof(Welford)), 0);
  if (packs) fwd_own_launch<V, T, kAdd, NoCache<kBlocks>>(st, a, sc, ws, 0, 0);
  else fwd_own_launch<1, T, kAdd, NoCache<kBlocks>>(st, a, sc, ws, 0, 0);
}

// v3's scratch: its partials are sized for a grid of up to 4 blocks per SM.
template <class T>
std::size_t fwd_v4_scratch_bytes(const Shape4& s) {
  return fwd_v3_scratch_bytes<T>(s);
}

template <class T, bool kAdd, int kBlocks = kOwnBlocks<T>>
std::vector<const void*> fwd_v4_kernels() {
  return {TUT_KERNEL(fwd_v4_own_packs_kernel<kPack<T>, T, kAdd, NoCache<kBlocks>>)};
}

}  // namespace ch05
