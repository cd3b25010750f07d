// fwd v11_early_loads: v9's two launches and walks, with every load that does not depend on the
// statistics issued before the pass waits for them, and no load left alone on the critical path.
//
// What changed since v9. v9's pass at 64x1024x7x7 NHWC float took 20.0 us in Nsight Compute for a
// copy of 12.8 MB, and at 4x33x17x19 NHWC 15.8 us for 0.2 MB: a cost that hardly depends on the
// bytes, so it is latency, loads waiting one after another. Its SASS shows where:
//   - the merge of the partials loads one triple per step of a loop, and its count first: Chan's
//     merge returns early on an empty count, so the compiler loads the mean and M2 only after the
//     count has arrived, two round trips to the L2 per partial (Q / S steps: 2 at 64x1024x7x7, 10
//     at 4x33x17x19 with its 66 partials per channel and 7 threads per channel);
//   - then gamma, beta and the running statistics, loaded after the merge, each running statistic
//     only after the previous store (they may alias): up to three more round trips, to DRAM;
//   - only then x, in batches of 4 packs, and in the Add form r one pack at a time (each load of r
//     after the store of the previous y, which may alias it).
// Here the pass issues, before griddepcontrol.wait, its first batch of x (and r), its channels'
// gamma, beta and running statistics: inputs the statistics kernel does not write. When the wait
// returns it merges the partials with every load in flight at once (16-byte partials, channel-
// minor so that neighbouring threads read neighbouring channels), by a merge with no early return
// (selects), then writes. The statistics kernel loads up to 8 packs per thread at once (7 at
// 64x1024x7x7: one round trip to DRAM instead of two) and merges without the IEEE division's slow
// path. The flat walk keeps Q * C <= 2048, at most 8 partials per thread in the pass's merge.
// Prediction: at 64x1024x7x7 NHWC float the pass near a copy from L2 (x read, y written): about 6
// to 8 us; the statistics near one read of 12.8 MB from DRAM, 6 to 8 us; the pair in the benchmark
// under cuDNN's fused 0.0188 ms. The Add form gains most (r no longer one pack at a time). At
// 4x33x17x19 the pass drops from 15.8 us to a few round trips, under cuDNN's 0.0101 ms.
// Evidence: Nsight Compute on both kernels beside v9's and cuDNN's; the benchmark in one process.
// Measured on the H100 (results/NVIDIA_H100_80GB_HBM3.ncu_v11.csv, ..._v11_cases.json, one run
// each). Nsight Compute at 64x1024x7x7 NHWC float: the statistics 8.7 us (v9 10.6), the pass 13.7
// us (v9 19.5; x read from DRAM there, as Nsight Compute empties the L2 before each kernel), cuDNN's
// fused kernel 16.4 us. In the pass the L2 sectors per load request went from 1.46 to 4.0 (v9's
// partials, 4-byte loads one channel per lane) and the share of warps stalled on a load from 61 %
// to 33 %; its slowest SM's active cycles from 33.5 k to 22.4 k. The 6 to 8 us predicted for
// each kernel: not reached (8.7 and 13.7). In the benchmark, one run: 0.0187 ms against cuDNN's
// fused 0.0187 (0.997 of its time; v9 0.0291): met, by a hair. The Add form 0.0208 ms against
// 0.0225 (0.923), 8x3x224x224 NHWC float 0.0170 against 0.0182 (0.935): met. Not met: the half
// forward at 64x1024x7x7 NHWC, 0.0187 against 0.0152 (1.231; its statistics kernel issues an
// instruction on 73 % of cycles, 8 packs unrolled where a thread has 4), the half Add forward
// (1.043), 4x33x17x19 NHWC float (0.0099 against 0.0096, 1.033) and half (1.038), 8x3x224x224
// NHWC half (1.048).
#pragma once

#include "kernels/fwd_v9_two_launches.cuh"

#include <cuda_pipeline.h>

#include <algorithm>
#include <vector>

namespace ch05 {

inline constexpr std::int64_t kV11FlatPartials = 2048;  // flat: Q * C at most, 8 loads per thread
inline constexpr int kV11MergeLoads = 4;                // partials a thread loads at once

// Items of 4 bytes or more travel by cp.async into shared memory: in flight without registers (v9
// at 8 packs in registers spilled at 64). Single halves (2 bytes) stay in registers.
template <class T, int V>
inline constexpr bool kV11Staged = sizeof(Item<T, V>) >= 4;
// Items a thread loads at once. The statistics: 8 packs, 16 single floats, 4 single halves (in
// registers). The pass: the same, half of each for x and r in the Add form, and 4 half packs (8
// spilled in the flat walk; 4 is every item of a thread at 64x1024x7x7 NHWC).
template <class T, int V>
inline constexpr int kV11StatsItems = !kV11Staged<T, V> ? 4 : (V == 1 ? 16 : 8);
template <class T, int V, bool kAdd>
inline constexpr int kV11PassItems = !kV11Staged<T, V> ? 4 : (V == 1 ? (kAdd ? 8 : 16) : (kAdd || V == 8 ? 4 : 8));

// Chan's merge as selects: an empty side returns the other unchanged, with no branch, so loads of
// both sides can be in flight before it (merge_fast's early return made the compiler load b's mean
// and M2 only after b's count).
__device__ __forceinline__ Welford merge_sel(Welford a, Welford b) {
  const float n = a.n + b.n;
  const float d = b.mean - a.mean, wb = __fdividef(b.n, n);
  const Welford m = {n, fmaf(d, wb, a.mean), a.m2 + b.m2 + d * d * a.n * wb};
  return a.n == 0.0f ? b : (b.n == 0.0f ? a : m);
}

// block_columns with merge_sel: out[i] for i < P * V, each column's merge over the block.
template <int V>
__device__ __forceinline__ void v11_columns(Welford (&w)[V], int P, Welford (*red)[kGroupSlots], Welford* out) {
  const int lane = static_cast<int>(threadIdx.x & 31), warp = static_cast<int>(threadIdx.x >> 5);
  CH05_UNROLL
  for (int k = 0; k < V; ++k)
    for (int off = 16; off >= P; off >>= 1) w[k] = merge_sel(w[k], shfl_down(w[k], off));
  if (lane < P) {
    CH05_UNROLL
    for (int k = 0; k < V; ++k) red[warp][lane * V + k] = w[k];
  }
  __syncthreads();
  if (static_cast<int>(threadIdx.x) < P * V) {
    Welford acc = red[0][threadIdx.x];
    CH05_UNROLL
    for (int q = 1; q < kWarps; ++q) acc = merge_sel(acc, red[q][threadIdx.x]);
    out[threadIdx.x] = acc;
  }
}

__device__ __forceinline__ float4 as_partial(Welford w) { return make_float4(w.n, w.mean, w.m2, 0.0f); }

// A thread's batch of R items of one tensor: in shared memory (kStaged: stage[i][t], copied by
// cp.async, read back by the same thread after its wait) or in registers.
template <class T, int V, int R, bool kStaged>
struct V11Batch {
  using It = Item<T, V>;
  It (*stage)[kBlock];
  It reg[kStaged ? 1 : R];
  __device__ __forceinline__ void load(int i, const T* src) {
    if constexpr (kStaged) __pipeline_memcpy_async(&stage[i][threadIdx.x], src, sizeof(It));
    else reg[i] = *reinterpret_cast<const It*>(src);
  }
  __device__ __forceinline__ It at(int i) const {
    if constexpr (kStaged) return stage[i][threadIdx.x];
    else return reg[i];
  }
};
__device__ __forceinline__ void v11_wait_copies() {
  __pipeline_commit();
  __pipeline_wait_prior(0);
}

// The statistics: v9's walk, R items in flight at once, one 16-byte partial per channel touched at
// partials[q * C + c].
template <class T, int V, int R, V9Walk kWalk>
__global__ void __launch_bounds__(kBlock, 4) fwd_v11_stats_kernel(FwdArgs<T> a, V9Plan plan, float4* partials) {
  pdl_launch_dependents();  // the pass's blocks may start as soon as all of these run
  constexpr bool kStaged = kV11Staged<T, V>;
  using It = Item<T, V>;
  constexpr std::size_t kStageBytes = kStaged ? sizeof(It) * R * kBlock : 0;
  constexpr std::size_t kSlotBytes = kWalk == V9Walk::flat ? sizeof(Welford) * V * kBlock : 0;
  constexpr std::size_t kBytes = kStageBytes > kSlotBytes ? kStageBytes : (kSlotBytes > 16 ? kSlotBytes : 16);
  __shared__ alignas(16) unsigned char smem[kBytes];
  const V9Walker wk = v9_walker<kWalk>(a.s, plan, V);
  V11Batch<T, V, R, kStaged> xb;
  xb.stage = reinterpret_cast<It(*)[kBlock]>(smem);
  Welford w[V];
  CH05_UNROLL
  for (int k = 0; k < V; ++k) w[k] = {0.0f, 0.0f, 0.0f};
  for (std::int64_t i0 = 0; i0 < plan.items; i0 += R) {
    int cnt = 0;  // units grow with i: the valid items are a prefix
    CH05_UNROLL
    for (int i = 0; i < R; ++i) {
      const std::int64_t u = wk.first + (i0 + i) * wk.step;
      if (wk.ok && u < wk.limit) {
        xb.load(i, a.x + v9_index<kWalk>(a.s, plan, wk, V, u));
        ++cnt;
      }
    }
    if constexpr (kStaged) v11_wait_copies();
    if (cnt == 0) break;
    float sum[V], m2[V], mean[V];
    CH05_UNROLL
    for (int k = 0; k < V; ++k) sum[k] = m2[k] = 0.0f;
    CH05_UNROLL
    for (int i = 0; i < R; ++i)
      if (i < cnt) {
        const It it = xb.at(i);
        CH05_UNROLL
        for (int k = 0; k < V; ++k) sum[k] += to_float(it.elem[k]);
      }
    const float nb = static_cast<float>(cnt), inv = __fdividef(1.0f, nb);
    CH05_UNROLL
    for (int k = 0; k < V; ++k) mean[k] = sum[k] * inv;
    CH05_UNROLL
    for (int i = 0; i < R; ++i)
      if (i < cnt) {
        const It it = xb.at(i);
        CH05_UNROLL
        for (int k = 0; k < V; ++k) {
          const float d = to_float(it.elem[k]) - mean[k];
          m2[k] = fmaf(d, d, m2[k]);
        }
      }
    CH05_UNROLL
    for (int k = 0; k < V; ++k) w[k] = merge_sel(w[k], Welford{nb, mean[k], m2[k]});
  }
  const int t = static_cast<int>(threadIdx.x);
  const std::int64_t C = a.s.C;
  if constexpr (kWalk == V9Walk::flat) {
    // Slot o = t * V + k of this block holds channel (q * 256 * V + o) % C; the slots take the
    // place of the staged items once every thread is done with them.
    __shared__ Welford red[kBlock];
    Welford* slots = reinterpret_cast<Welford*>(smem);
    __syncthreads();
    CH05_UNROLL
    for (int k = 0; k < V; ++k) slots[t * V + k] = w[k];
    __syncthreads();
    const int Ci = static_cast<int>(C);
    const int base = static_cast<int>((wk.q * kBlock * V) % Ci);
    const auto first_slot = [&](int c) { return c >= base ? c - base : c - base + Ci; };
    block_merge(
        Ci, [&](int c) { return (kBlock * V - first_slot(c) + Ci - 1) / Ci; },
        [&](int c, int j) { return slots[first_slot(c) + j * Ci]; }, red);
    if (t < Ci) partials[wk.q * C + t] = as_partial(red[t]);
  } else {
    __shared__ Welford red[kWarps][kGroupSlots];
    __shared__ Welford part[kGroupSlots];
    v11_columns<V>(w, plan.P, red, part);
    const int width = plan.P * V;
    if (t < width) {
      const std::int64_t c = kWalk == V9Walk::nchw ? wk.g : wk.g * width + t;
      if (c < C) partials[wk.q * C + c] = as_partial(part[t]);
    }
  }
}

// The pass: its first batch of x (and r) set in flight, gamma, beta and the running statistics
// loaded; then the wait; the block's merge of its channels' Q partials, every load in flight at
// once; then v9's normalize, add, ReLU and mask.
template <class T, int V, int R, bool kAdd, V9Walk kWalk, bool kBytes>
__global__ void __launch_bounds__(kBlock, 4) fwd_v11_apply_kernel(FwdArgs<T> a, V9Plan plan, const float4* partials) {
  static_assert(kWalk != V9Walk::nchw || V == 1, "NCHW walks single values");
  static_assert(!kBytes || (kWalk == V9Walk::rows && (V == 4 || V == 8)), "whole bytes from row packs of 4 or 8");
  constexpr bool kStaged = kV11Staged<T, V>;
  using It = Item<T, V>;
  __shared__ alignas(16) unsigned char smem[kStaged ? sizeof(It) * R * kBlock * (kAdd ? 2 : 1) : 16];
  __shared__ float s_mean[kFlatMaxC], s_scale[kFlatMaxC], s_shift[kFlatMaxC];
  __shared__ Welford red[kBlock];
  const V9Walker wk = v9_walker<kWalk>(a.s, plan, V);
  const int t = static_cast<int>(threadIdx.x), lane = t & 31;
  const std::int64_t C = a.s.C;
  const int width = kWalk == V9Walk::flat ? static_cast<int>(C) : plan.P * V;
  const auto channel = [&](int i) -> std::int64_t {
    return kWalk == V9Walk::flat ? i : (kWalk == V9Walk::nchw ? wk.g : wk.g * width + i);
  };
  V11Batch<T, V, R, kStaged> xb;
  V11Batch<T, V, kAdd ? R : 1, kStaged> rb;
  xb.stage = reinterpret_cast<It(*)[kBlock]>(smem);
  rb.stage = xb.stage + R;
  const auto issue = [&](std::int64_t i0) {
    CH05_UNROLL
    for (int i = 0; i < R; ++i) {
      const std::int64_t u = wk.first + (i0 + i) * wk.step;
      if (wk.ok && u < wk.limit) {
        const std::int64_t e = v9_index<kWalk>(a.s, plan, wk, V, u);
        xb.load(i, a.x + e);
        if constexpr (kAdd) rb.load(i, a.r + e);
      }
    }
  };
  // 1. Before the wait: nothing here is written by the statistics kernel.
  if constexpr (kStaged) issue(0);
  const std::int64_t cme = t < width ? channel(t) : C;  // the channel whose parameters this thread finishes
  float gam = 0.0f, bet = 0.0f, rmean = 0.0f, rvar = 0.0f;
  if (cme < C) {
    gam = a.gamma[cme];
    bet = a.beta[cme];
    if (wk.q == 0) {
      rmean = a.running_mean[cme];
      rvar = a.running_var[cme];
    }
  }
  pdl_wait();  // the statistics kernel has finished; its partials are visible
  // 2. The merge: thread t takes channel i = t % width and partials j = s, s + S, ... (S = 256 /
  // width), all its loads issued before its merges; then a tree over the S shares. The order
  // depends only on width and Q: every block computes the same statistics, bit for bit.
  {
    const int S = kBlock / width, i = t % width, s = t / width, Q = static_cast<int>(plan.Q);
    if (s < S) {
      Welford acc = {0.0f, 0.0f, 0.0f};
      const std::int64_t c = channel(i);
      if (c < C) {
        for (int j0 = s; j0 < Q; j0 += S * kV11MergeLoads) {
          float4 p[kV11MergeLoads];
          CH05_UNROLL
          for (int k = 0; k < kV11MergeLoads; ++k) {
            const int j = j0 + k * S;
            if (j < Q) p[k] = __ldcg(partials + static_cast<std::int64_t>(j) * C + c);
          }
          CH05_UNROLL
          for (int k = 0; k < kV11MergeLoads; ++k)
            if (j0 + k * S < Q) acc = merge_sel(acc, Welford{p[k].x, p[k].y, p[k].z});
        }
      }
      red[t] = acc;
    }
    __syncthreads();
    int h = 1;
    while (h < S) h <<= 1;
    for (h >>= 1; h >= 1; h >>= 1) {
      if (s < h && s + h < S) red[t] = merge_sel(red[t], red[t + h * width]);
      __syncthreads();
    }
  }
  if (cme < C) {
    const Welford tot = red[t];
    const float Mf = static_cast<float>(a.s.per_channel());
    const float invstd = 1.0f / sqrtf(tot.m2 / Mf + a.eps);
    s_mean[t] = tot.mean;
    s_scale[t] = gam * invstd;
    s_shift[t] = bet;
    if (wk.q == 0) {
      a.saved_mean[cme] = tot.mean;
      a.saved_invstd[cme] = invstd;
      a.running_mean[cme] = (1.0f - a.momentum) * rmean + a.momentum * tot.mean;
      a.running_var[cme] = (1.0f - a.momentum) * rvar + a.momentum * (tot.m2 / (Mf - 1.0f));
    }
  }
  __syncthreads();
  // 3. v9's pass, on the batch already in flight, then the next batches.
  float mean[V], scale[V], shift[V];
  const int slot0 = kWalk == V9Walk::flat ? static_cast<int>((wk.first * V) % C) : 0;
  CH05_UNROLL
  for (int k = 0; k < V; ++k) {
    int s = 0;
    if constexpr (kWalk == V9Walk::flat) s = (slot0 + k) % static_cast<int>(C);
    else if constexpr (kWalk == V9Walk::rows) s = wk.ok ? wk.col * V + k : 0;
    mean[k] = s_mean[s];
    scale[k] = s_scale[s];
    shift[k] = s_shift[s];
  }
  const std::int64_t n = a.s.numel();
  const std::int64_t words = tut::bitmask::word_count(n);
  for (std::int64_t i0 = 0; i0 < plan.items; i0 += R) {  // the same count in every lane: the mask's warp steps
    if (!kStaged || i0 > 0) issue(i0);
    if constexpr (kStaged) v11_wait_copies();
    CH05_UNROLL
    for (int i = 0; i < R; ++i) {
      const std::int64_t u = wk.first + (i0 + i) * wk.step;
      const bool has = wk.ok && u < wk.limit;
      const std::int64_t e = has ? v9_index<kWalk>(a.s, plan, wk, V, u) : 0;
      unsigned bits = 0;
      if (has) {
        const It xv = xb.at(i);
        It rv;
        if constexpr (kAdd) rv = rb.at(i);
        float y[V];
        CH05_UNROLL
        for (int k = 0; k < V; ++k) {
          float s = fmaf(to_float(xv.elem[k]) - mean[k], scale[k], shift[k]);
          if constexpr (kAdd) s += to_float(rv.elem[k]);
          s = round_to<T>(s);
          y[k] = relu(s);
          bits |= static_cast<unsigned>(kept(s)) << k;
        }
        store_item<V, T>(a.y + e, y);
      }
      if constexpr (kWalk == V9Walk::flat) {
        constexpr int kLanes = 32 / V;
        unsigned word = bits << ((lane % kLanes) * V);
        CH05_UNROLL
        for (int off = 1; off < kLanes; off <<= 1) word |= __shfl_xor_sync(kFullWarp, word, off);
        const std::int64_t wi = (u * V) >> 5;
        if (lane % kLanes == 0 && wi < words) a.mask[wi] = word;
      } else if constexpr (kBytes) {
        unsigned byte = bits;
        if constexpr (V == 4) byte |= __shfl_xor_sync(kFullWarp, bits, 1) << 4;  // every lane: the warp's step
        if (has && (V == 8 || (wk.col & 1) == 0)) {
          auto* mask_bytes = reinterpret_cast<unsigned char*>(a.mask);
          mask_bytes[e >> 3] = static_cast<unsigned char>(byte);
          if ((e >> 3) == (n >> 3) - 1)  // the last element's byte: the last word's padding bytes, zero
            for (std::int64_t b = n >> 3; b < 4 * words; ++b) mask_bytes[b] = 0;
        }
      } else {
        std::int64_t key = e;  // v8's rule: keys that never decrease from lane to lane
        if (!has) key = u >= plan.units ? n - 1 : u * C + C - 1;
        write_mask_bits<V>(a.mask, n, has, key, bits);
      }
    }
  }
}

template <class T, int V, bool kAdd, V9Walk kWalk, bool kBytes>
void fwd_v11_launch(cudaStream_t st, const FwdArgs<T>& a, const V9Plan& plan, float4* partials) {
  const unsigned grid = grid_of(plan.groups * plan.Q, "fwd_v11_early_loads");
  fwd_v11_stats_kernel<T, V, kV11StatsItems<T, V>, kWalk><<<grid, kBlock, 0, st>>>(a, plan, partials);
  TUT_CHECK_LAUNCH("fwd_v11_stats_kernel");
  const float4* cpartials = partials;
  launch_dependent(st, grid, &fwd_v11_apply_kernel<T, V, kV11PassItems<T, V, kAdd>, kAdd, kWalk, kBytes>,
                   "dependent launch of fwd_v11_apply_kernel", a, plan, cpartials);
}

template <class T, bool kAdd>
void fwd_v11_early_loads(cudaStream_t st, const FwdArgs<T>& a, void* ws) {
  check_shape(a.s, "fwd_v11_early_loads");
  constexpr int Vp = kPack<T>;
  const bool packs = fwd_apply_packs_ok<T, kAdd>(a);
  const V9Plan plan = v9_plan(a.s, packs, Vp, kV11FlatPartials);
  auto* partials = static_cast<float4*>(ws);
  with_v9_form<Vp>(plan, a.s.C, [&](auto v, auto walk, auto bytes) {
    fwd_v11_launch<T, decltype(v)::value, kAdd, decltype(walk)::value, decltype(bytes)::value>(st, a, plan, partials);
  });
}

// The partials: C * Q of 16 bytes, for either plan (packs or not).
template <class T>
std::size_t fwd_v11_scratch_bytes(const Shape4& s) {
  const V9Plan a = v9_plan(s, true, kPack<T>, kV11FlatPartials), b = v9_plan(s, false, kPack<T>, kV11FlatPartials);
  return static_cast<std::size_t>(s.C) * static_cast<std::size_t>(std::max(a.Q, b.Q)) * sizeof(float4);
}

template <class T, bool kAdd>
std::vector<const void*> fwd_v11_kernels() {
  constexpr int Vp = kPack<T>;
  constexpr auto flat = V9Walk::flat, rows = V9Walk::rows, nchw = V9Walk::nchw;
  return {TUT_KERNEL(fwd_v11_stats_kernel<T, Vp, kV11StatsItems<T, Vp>, flat>),
          TUT_KERNEL(fwd_v11_apply_kernel<T, Vp, kV11PassItems<T, Vp, kAdd>, kAdd, flat, false>),
          TUT_KERNEL(fwd_v11_stats_kernel<T, 1, kV11StatsItems<T, 1>, flat>),
          TUT_KERNEL(fwd_v11_apply_kernel<T, 1, kV11PassItems<T, 1, kAdd>, kAdd, flat, false>),
          TUT_KERNEL(fwd_v11_stats_kernel<T, Vp, kV11StatsItems<T, Vp>, rows>),
          TUT_KERNEL(fwd_v11_apply_kernel<T, Vp, kV11PassItems<T, Vp, kAdd>, kAdd, rows, true>),
          TUT_KERNEL(fwd_v11_apply_kernel<T, Vp, kV11PassItems<T, Vp, kAdd>, kAdd, rows, false>),
          TUT_KERNEL(fwd_v11_stats_kernel<T, 1, kV11StatsItems<T, 1>, rows>),
          TUT_KERNEL(fwd_v11_apply_kernel<T, 1, kV11PassItems<T, 1, kAdd>, kAdd, rows, false>),
          TUT_KERNEL(fwd_v11_stats_kernel<T, 1, kV11StatsItems<T, 1>, nchw>),
          TUT_KERNEL(fwd_v11_apply_kernel<T, 1, kV11PassItems<T, 1, kAdd>, kAdd, nchw, false>)};
}

}  // namespace ch05
