// bwd v4_own_packs: bwd v3's cooperative kernel, with the dx pass (phase 3) walking each thread's
// own phase-1 packs back to front, four in flight, as fwd v4 does (kernels/fwd_v4_own_packs.cuh).
//
// What changed since v3: phase 3 revisits the packs of dy, x and the mask the thread summed in
// phase 1, in the opposite order; its channels, so its A, B, K and mean, are loaded once per item,
// and it loads two packs of dy and two of x (64 bytes) before it computes the first. Phase 2
// gives each channel a block (fwd v4's own_merge). The backward writes no
// mask, so no lane needs another lane's packs: this works for every C and every H*W. The elements
// after the last whole pack (NHWC) go to one warp, as in v3.
// Bytes: as v3 (dy, x and the mask twice, the second read's first part from the L2).
// Prediction: v3 already runs at 0.99 of the two-pass model's rate at 64x64x112x112 (its dx pass
// has dy and x in flight, 32 bytes per thread), so little to gain there; the same DRAM bytes.
// Evidence: the profile's DRAM bytes and time, v3 against v4.
// Measured on the H100 (results/NVIDIA_H100_80GB_HBM3.json, 64x64x112x112): NCHW float 0.3428 ms
// against v3's 0.3502; NHWC float 0.3487 against 0.3486; half NHWC 0.1918 against 0.1884.
#pragma once

#include "kernels/bwd_v3_single_read.cuh"
#include "kernels/fwd_v4_own_packs.cuh"

namespace ch05 {

// Packs of dy and of x a thread of the dx pass loads before it computes the first: 2 of each, 64
// bytes, as the forward's 4 packs of x.
inline constexpr int kOwnUnrollBwd = 2;

// dx (and dr) of the pack at e0 from its raw dy (or g) and x; `bits` zero dy where the mask is
// clear (all ones for a g from the cache). Phase 3 of v4 to v6.
template <int V, class T, bool kAdd>
__device__ __forceinline__ void bwd_finish_pack(const BwdArgs<T>& a, std::int64_t e0, uint4 qg, uint4 qx, Word bits,
                                                const float (&mean)[V], const float (&A)[V], const float (&B)[V],
                                                const float (&K)[V]) {
  float g[V], xv[V], dx[V];
  unpack<V, T>(qg, g);
  unpack<V, T>(qx, xv);
#pragma unroll
  for (int k = 0; k < V; ++k) {
    g[k] = ((bits >> k) & 1u) ? g[k] : 0.0f;
    dx[k] = fmaf(A[k], g[k], fmaf(B[k], xv[k] - mean[k], K[k]));
  }
  if constexpr (V == 1) {
    a.dx[e0] = from_float<T>(dx[0]);
    if constexpr (kAdd) a.dr[e0] = from_float<T>(g[0]);
  } else {
    store_pack<V, T, true>(a.dx + e0, dx);
    if constexpr (kAdd) store_pack<V, T, true>(a.dr + e0, g);
  }
}

template <int V, class T, bool kAdd, class Cache>
__device__ void bwd_own_pass(const BwdArgs<T>& a, const ChannelParams& p, const V3Plan& plan, const Cache& cache) {
  constexpr int kU = kOwnUnrollBwd;
  const std::int64_t items = v3_items(a.s, plan);
  if (blockIdx.x >= items) return;
  std::int64_t slots = own_slot_count(a.s, plan, V);
  const std::int64_t last_item = blockIdx.x + (items - 1 - blockIdx.x) / gridDim.x * gridDim.x;
  for (std::int64_t item = last_item; item >= static_cast<std::int64_t>(blockIdx.x); item -= gridDim.x) {
    const OwnItem w = own_item(a.s, plan, V, item, static_cast<int>(threadIdx.x));
    const std::int64_t n = w.count();
    slots -= n;
    if (!w.active) continue;
    int ch[V];
    own_channels<V>(a.s, w, ch);
    float mean[V], A[V], B[V], K[V];
#pragma unroll
    for (int k = 0; k < V; ++k) mean[k] = p.mean[ch[k]], A[k] = p.scale[ch[k]], B[k] = p.shift[ch[k]], K[k] = p.extra[ch[k]];
    const auto finish = [&](std::int64_t e0, uint4 qg, uint4 qx, Word bits) {
      bwd_finish_pack<V, T, kAdd>(a, e0, qg, qx, bits, mean, A, B, K);
    };
    const auto bits_at = [&](std::int64_t e0) { return a.mask[e0 >> 5] >> (e0 & 31); };  // the pack's V bits
    if (a.s.layout == Layout::nhwc) {  // the partial row comes last in phase 1: first here
      const std::int64_t last = nhwc_partial_row(plan.nhwc, w.j, w.first, w.step);
      if (last >= 0) {
        const std::int64_t e0 = nhwc_pack_at(plan.nhwc, last, w.j);
        finish(e0, load_raw<V, T>(a.dy + e0), load_raw<V, T>(a.x + e0), bits_at(e0));
      }
    }
    for (std::int64_t i = n - 1; i >= 0; i -= kU) {
      uint4 qg[kU], qx[kU];
      Word bits[kU];
#pragma unroll
      for (int b = 0; b < kU; ++b) {
        const std::int64_t ii = i - b;
        if (ii < 0) break;
        if (cache.holds(slots + ii)) {
          qg[b] = cache.fetch(slots + ii, 0);
          qx[b] = cache.fetch(slots + ii, 1);
          bits[b] = ~Word{0};
        } else {
          const std::int64_t e0 = own_pack_at(a.s, plan, V, w, w.first + ii * w.step);
          qg[b] = load_raw<V, T>(a.dy + e0);
          qx[b] = load_raw<V, T>(a.x + e0);
          bits[b] = bits_at(e0);
        }
      }
#pragma unroll
      for (int b = 0; b < kU; ++b) {
        const std::int64_t ii = i - b;
        if (ii < 0) break;
        finish(own_pack_at(a.s, plan, V, w, w.first + ii * w.step), qg[b], qx[b], bits[b]);
      }
    }
  }
}

// Phase 1 of every own-packs backward (v4 to v6, v17 and v19, and tools/phase_timeline.cu's
// probes): the thread's partials of g = dy * m and g * (x - mean), dy, x and the mask read front to
// back; the cache keeps g and x of each pack it holds. kWarpCols: as own_partials.
template <int V, class T, class Cache, bool kWarpCols = false>
__device__ __forceinline__ void bwd_own_stats(const BwdArgs<T>& a, const V3Plan& plan, GradSums* partials, GradSums* smem,
                                              const Cache& cache) {
  using Op = GradStreams<V, T>;
  own_partials<Op, kUnrollFor<V>, kWarpCols>(
      a.s, plan, partials, smem,
      [&](const OwnItem& w) {
        Op op(a.dy, a.x, a.mask);
        if (w.active) {
          int ch[V];
          own_channels<V>(a.s, w, ch);
#pragma unroll
          for (int k = 0; k < V; ++k) op.mu[k] = a.saved_mean[ch[k]];
        }
        return op;
      },
      [&](std::int64_t slot, const typename Op::Data& d) {
        float g[V];
#pragma unroll
        for (int k = 0; k < V; ++k) g[k] = ((d.bits >> k) & 1u) ? d.dy[k] : 0.0f;
        cache.keep(slot, 0, repack<V, T>(g));
        cache.keep(slot, 1, repack<V, T>(d.x));
      },
      [&](std::int64_t e, std::int64_t c) { return grad_of(a, e, c); });
}

template <int V, class T, bool kAdd, class Cache>
__global__ void __launch_bounds__(kBlock, Cache::kMinBlocks)
    bwd_v4_own_packs_kernel(BwdArgs<T> a, ChannelParams p, GradSums* partials, V3Plan plan, ChannelMap map,
                            std::int64_t tail_first, int cache_slots) {
  __shared__ GradSums smem[kBlock * V];
  extern __shared__ uint4 ch05_onchip[];
  const Cache cache(ch05_onchip, cache_slots);
  cg::grid_group grid = cg::this_grid();

  // 1. Partials, dy, x and the mask read front to back; the cache keeps g and x of the first packs.
  bwd_own_stats<V>(a, plan, partials, smem, cache);
  grid.sync();

  // 2. A block (or a warp) per channel.
  own_merge(partials, a.s.C, plan.slots, smem,
            [&](std::int64_t c, GradSums total) { finish_backward_channel(a, p, static_cast<int>(c), total); });
  grid.sync();

  // 3. dx, the thread's own packs back to front; the elements after the last whole pack by one warp.
  if (blockIdx.x == gridDim.x - 1 && threadIdx.x < 32)
    bwd_apply_tail<T, kAdd>(a, p, map, tail_first, static_cast<int>(threadIdx.x));
  bwd_own_pass<V, T, kAdd>(a, p, plan, cache);
}

template <int V, class T, bool kAdd, class Cache>
void bwd_own_launch(cudaStream_t st, BwdArgs<T> a, const Scratch& sc, void* ws, std::size_t dyn_bytes, int cache_slots) {
  const void* kernel = reinterpret_cast<const void*>(&bwd_v4_own_packs_kernel<V, T, kAdd, Cache>);
  const int grid = own_grid<Cache>(kernel, dyn_bytes, "bwd_own_packs");
  V3Plan plan = v3_plan(a.s, V, grid);
  ChannelParams p = sc.params_at(ws);
  GradSums* partials = sc.partials_at<GradSums>(ws);
  ChannelMap map(a.s);
  std::int64_t tail_first = a.s.layout == Layout::nchw ? a.s.numel() : plan.nhwc.q_full * V;
  void* args[] = {&a, &p, &partials, &plan, &map, &tail_first, &cache_slots};
  TUT_CUDA(cudaLaunchCooperativeKernel(kernel, grid, kBlock, args, dyn_bytes, st));
}

// 16-byte packs where dy, x, dx (and dr) are aligned and, in NCHW, H*W is a whole number of packs.
template <class T, bool kAdd>
bool bwd_own_packs_ok(const BwdArgs<T>& a) {
  return stats_packs_ok<T>(a.s, a.x) && bwd_apply_packs_ok<T, kAdd>(a);
}

template <class T, bool kAdd, int kBlocks = kOwnBlocksBwd>
void bwd_v4_own_packs(cudaStream_t st, const BwdArgs<T>& a, void* ws) {
  check_shape(a.s, "bwd_v4_own_packs");
  constexpr int V = kPack<T>;
  const Scratch sc(a.s.C, v3_partial_bytes(a.s, V, sizeof(GradSums)), 0);
  if (bwd_own_packs_ok<T, kAdd>(a)) bwd_own_launch<V, T, kAdd, NoCache<kBlocks>>(st, a, sc, ws, 0, 0);
  else bwd_own_launch<1, T, kAdd, NoCache<kBlocks>>(st, a, sc, ws, 0, 0);
}

template <class T>
std::size_t bwd_v4_scratch_bytes(const Shape4& s) {
  return bwd_v3_scratch_bytes<T>(s);
}

template <class T, bool kAdd, int kBlocks = kOwnBlocksBwd>
std::vector<const void*> bwd_v4_kernels() {
  return {TUT_KERNEL(bwd_v4_own_packs_kernel<kPack<T>, T, kAdd, NoCache<kBlocks>>)};
}

}  // namespace ch05
