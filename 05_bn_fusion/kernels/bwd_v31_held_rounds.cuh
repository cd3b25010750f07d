// bwd v31_held_rounds: the forward's v29 for the backward. NHWC, one cooperative kernel, one block
// an SM; each thread keeps its first packs of g (dy under the mask) and of x in shared memory
// between the sums and the dx pass, in the rounds the grid reads side by side.
//
// Why. Four of the ten cases where cuDNN's fused path beat every version of ours on the H200
// (results/NVIDIA_H200.cudnn_suite.txt) are the half backward at the large shapes, v20's two
// kernels there: 1.076 of cuDNN's time at 128x64x56x56 (0.0699 ms against 0.0650), 1.082 in the Add
// form, 1.016 and 1.052 at 64x64x112x112. Under Nsight Compute at 128x64x56x56
// (results/NVIDIA_H200.ncu_cudnn_wins.csv, the caches flushed before each kernel) cuDNN's one
// kernel reads 155.8 MB from DRAM where v20's two read 106.0 + 106.0: dy and x once, and about half
// of them again. The forward's v29 keeps part of x on chip between its two sweeps and read as few
// bytes as cuDNN's forward; in float at 128x64x56x56 it took 0.937 of v28's time (results/v29_float/).
//
// How.
//   The walk. A row is P = L / V packs (L = lcm(C, V) elements, P dividing 32). Thread t is column
//   tx = t % P of row ty = t / P of its block; its packs are rows ty + b by, then a grid's rows
//   further each round (by = kV31Threads / P), so a round of the grid reads one run of memory. A
//   thread's channels are the same in every pack: its saved means stay in registers. It keeps
//   kV31Ahead packs of dy, of x and their mask words in flight, adds g = (bit ? dy : 0) and
//   g (x - mean) in float (at most kV31MostPacks packs a thread), and stores its first `held`
//   packs of g (dy with the mask's zeros applied to its bits) and of x in shared memory.
//   The block's sums. In double, over the lanes of a column by shuffles and the warps in a fixed
//   order, then over the positions of a channel in a row: the same bits launch after launch.
//   The merge. A grid barrier; block b takes channels b, b + G, ..., adds the blocks' partials in
//   order and the elements past the last whole pack, and writes dgamma, dbeta and dx's
//   coefficients (finish_backward_channel); a second grid barrier.
//   The pass. The packs not held, last first (the L2 still holds the last ones read), kV31Ahead in
//   flight; then the held ones from shared memory, no mask needed. A thread's coefficients (mean,
//   A, B, K: 4 V floats) stay in registers. The elements past the last whole pack go to one warp.
//   512 threads, not v29's 1024: 128 registers a thread, where v29's 64 made it read each pack's
//   parameters from shared memory (11.1 % of its stall samples in half). kV31Ahead packs of dy and
//   of x in flight a thread: 6 (96 KiB an SM), no spill in any form; 8 spill in half.
// Where it does not apply (NCHW; P not dividing 32 or L > kV31MostL; more than kV31MostPacks packs a
// thread; dy, x, dx or dr off 16 bytes; the dynamic shared memory refused), v31 runs v20.
// Bytes: dy, x and the mask once, then again less what is held; dx (and dr) once. On the H200 a
// thread keeps 13 packs (16 KiB a round of the block, 208 KiB an SM): 7.03 M elements in half, 3.51
// M in float.
// Prediction (before any run), from the traffic at v20's pace (half) or v19's (float), one run of
// the suite (results/NVIDIA_H200.cudnn_suite.txt):
//   half 128x64x56x56: 263.4 MB (dy, x and the mask twice, dx once) falls to 235.3, 0.893 of it:
//     about 0.0624 ms against v20's 0.0699 and cuDNN's 0.0650; the forward's v29 in half won only a
//     fifth of what its traffic promised, so between 0.062 and 0.069.
//   half 64x64x112x112: 0.947 of the traffic: about 0.130 against 0.1376 and cuDNN's 0.1355.
//   half 16x32x112x112: all of dy and x held (6.42 M elements): read once, under v20's 0.0234.
//   float 128x64x56x56: 0.946 of the traffic: about 0.119 against v19's 0.1257 and cuDNN's 0.1271.
// Measured on the H200, built first with 4 packs of each in flight (commit b668c06,
// results/v31_trial/; one process, the caches flushed before each repetition): wrong at the large
// shapes. Half 128x64x56x56 0.0696 ms against v20's 0.0703 and cuDNN's 0.0658; half 64x64x112x112
// 0.1466 against 0.1382 and 0.1352; float 128x64x56x56 0.1396 against v19's 0.1254 and cuDNN's
// 0.1267. Right where all of dy and x is held (16x32x112x112): the fastest backward of ours in all
// four forms, 0.0324 ms in float against v20's 0.0357 and cuDNN's 0.0376. Under Nsight Compute at
// 128x64x56x56 in half it reads 151.5 MB from DRAM (cuDNN's kernel 155.9, v20's two 212.0) but keeps
// the DRAM 49.2 % busy; its source page puts 49.8 % of the stall samples in the walk and 42.0 % in
// the pass, 61.4 % and 54.5 % of them waiting on a load (long scoreboard): too few bytes in flight.
// Prediction for 6 in flight (before any run): 1.5 times the bytes in flight, the half backward at
// 128x64x56x56 between 0.060 and 0.066 ms, the float one between 0.120 and 0.130.
// Measured with 6 (the tree of b4dc61f; results/v31_trial/NVIDIA_H200.bwd.json, ncu.csv): wrong. Half
// 128x64x56x56 0.0696 ms again (v20 0.0704, cuDNN 0.0654), the DRAM 47.4 % busy; float 0.1391 (v19
// 0.1259); the waits on loads still 60.1 % of the walk's samples. The bytes a thread has in flight are
// not what holds it. v31 is the fastest of ours only where all of dy and x is held (16x32x112x112:
// float, 0.0328 ms against v20's 0.0358 and cuDNN's 0.0379; the half Add form; level in half).
// Again on the tree of 31b20b4 (this file's merge, block sums, plan and launch shared with v28 and
// v29): half 128x64x56x56 0.0700 ms (v20 0.0706, cuDNN 0.0658), float 0.1392 (v19 0.1261).
#pragma once

#include "kernels/bwd_v20_async_pass.cuh"
#include "kernels/fwd_v29_held_rounds.cuh"

namespace ch05 {

inline constexpr int kV31Threads = 512;  // one block an SM
inline constexpr int kV31Warps = kV31Threads / 32;
inline constexpr int kV31Ahead = 6;       // packs of dy and of x in flight a thread, in both sweeps
inline constexpr int kV31MostL = 64;      // elements a row at most (the block's buffer)
inline constexpr int kV31MostPacks = 256;  // packs a thread at most (its float sums)

using V31Plan = HeldPlan;  // held: packs a thread keeps, of g and of x (tail_from unused)

// The block's buffer: each warp's two sums by position in a row, then the block's by position.
struct V31Shared {
  double ws[kV31Warps * kV31MostL * 2];
  double w1[kV31Warps], w2[kV31Warps];
};

// The raw pack q with the elements whose bit in `bits` is clear set to +0.
template <int V, class T>
__device__ __forceinline__ uint4 v31_masked(uint4 q, Word bits) {
  unsigned w[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    if constexpr (V == 8) {
      const unsigned lo = (bits >> (2 * i)) & 1u ? 0x0000ffffu : 0u, hi = (bits >> (2 * i + 1)) & 1u ? 0xffff0000u : 0u;
      w[i] &= lo | hi;
    } else {
      static_assert(V == 4, "a pack is 8 halves or 4 floats");
      w[i] = (bits >> i) & 1u ? w[i] : 0u;
    }
  }
  return make_uint4(w[0], w[1], w[2], w[3]);
}

template <class T, bool kAdd>
__global__ void __launch_bounds__(kV31Threads, 1)
    bwd_v31_kernel(BwdArgs<T> a, ChannelParams p, DSum* partials, V31Plan plan, ChannelMap map) {
  constexpr int V = kPack<T>, kA = kV31Ahead;
  extern __shared__ uint4 held[];  // [pack][g, x][thread]
  __shared__ V31Shared sh;
  const int C = static_cast<int>(a.s.C), P = plan.P, L = P * V;
  const int t = static_cast<int>(threadIdx.x), tx = t % P, ty = t / P, lane = t % 32, warp = t / 32;
  // The thread's packs: rows r0, r0 + dr, ... whose pack in column tx is whole.
  const std::int64_t r0 = static_cast<std::int64_t>(blockIdx.x) * plan.by + ty;
  const std::int64_t dr = static_cast<std::int64_t>(gridDim.x) * plan.by;
  const std::int64_t rows = (plan.q_full - tx + P - 1) / P;
  const int n = r0 < rows ? static_cast<int>((rows - r0 + dr - 1) / dr) : 0;
  const int kept = n < plan.held ? n : plan.held;
  const std::int64_t e_first = (r0 * P + tx) * V, e_step = dr * L;  // pack k's first element: e_first + k e_step
  const auto elem = [&](int k) { return e_first + k * e_step; };
  const auto g_at = [&](int k) -> uint4& { return held[(2 * k) * kV31Threads + t]; };
  const auto x_at = [&](int k) -> uint4& { return held[(2 * k + 1) * kV31Threads + t]; };
  // Pack k's dy, x and its bits of the mask, from memory (both sweeps).
  const auto fetch = [&](int k, uint4& qg, uint4& qx, Word& bits) {
    const std::int64_t e = elem(k);
    qg = load_raw<V, T>(a.dy + e);
    qx = load_raw<V, T>(a.x + e);
    bits = a.mask[e >> 5] >> (e & 31);
  };

  // 1. The walk: sum g and g (x - mean), the first `kept` packs kept.
  float mean[V], s1[V], s2[V];
#pragma unroll
  for (int j = 0; j < V; ++j) {
    mean[j] = a.saved_mean[(tx * V + j) % C];
    s1[j] = s2[j] = 0.0f;
  }
  for (int k0 = 0; k0 < n; k0 += kA) {
    uint4 qg[kA], qx[kA];
    Word bits[kA];
#pragma unroll
    for (int u = 0; u < kA; ++u)
      if (k0 + u < n) fetch(k0 + u, qg[u], qx[u], bits[u]);
#pragma unroll
    for (int u = 0; u < kA; ++u) {
      if (k0 + u >= n) continue;
      float g[V], xv[V];
      unpack<V, T>(qg[u], g);
      unpack<V, T>(qx[u], xv);
#pragma unroll
      for (int j = 0; j < V; ++j) {
        const float gj = (bits[u] >> j) & 1u ? g[j] : 0.0f;
        s1[j] += gj;
        s2[j] = fmaf(gj, xv[j] - mean[j], s2[j]);
      }
      if (k0 + u < kept) {
        g_at(k0 + u) = v31_masked<V, T>(qg[u], bits[u]);
        x_at(k0 + u) = qx[u];
      }
    }
  }
  // 2. The block's sums in double: over a column's lanes, the warps in order, a channel's positions.
#pragma unroll
  for (int j = 0; j < V; ++j) held_column_sums(sh.ws, s1[j], s2[j], P, L, V, j, lane, warp);
  held_block_partials<kV31Warps>(sh.ws, L, C, partials, t);
  cg::grid_group grid = cg::this_grid();
  grid.sync();

  // 3. The merge: block b takes channels b, b + G, ...
  const std::int64_t tail_first = plan.q_full * V, numel = a.s.numel();
  merge_block_partials<kV31Threads>(partials, C, sh.w1, sh.w2, [&](int c, double t1, double t2) {
    // the elements past the last whole pack (fewer than V): channel c's among them
    for (std::int64_t i = first_of_channel(tail_first, c, C); i < numel; i += C) {
      const GradSums e = grad_of(a, i, c);
      t1 += e.g;
      t2 += e.gx;
    }
    finish_backward_channel(a, p, c, GradSums{static_cast<float>(t1), static_cast<float>(t2)});
  });
  grid.sync();

  // 4. The pass: the packs not held, last first, then the held ones; the tail by one warp.
  float A[V], B[V], K[V];
#pragma unroll
  for (int j = 0; j < V; ++j) {
    const int c = (tx * V + j) % C;
    A[j] = p.scale[c], B[j] = p.shift[c], K[j] = p.extra[c];
  }
  for (int k0 = n - 1; k0 >= kept; k0 -= kA) {
    uint4 qg[kA], qx[kA];
    Word bits[kA];
#pragma unroll
    for (int u = 0; u < kA; ++u)
      if (k0 - u >= kept) fetch(k0 - u, qg[u], qx[u], bits[u]);
#pragma unroll
    for (int u = 0; u < kA; ++u)
      if (k0 - u >= kept) bwd_finish_pack<V, T, kAdd>(a, elem(k0 - u), qg[u], qx[u], bits[u], mean, A, B, K);
  }
  for (int k = kept - 1; k >= 0; --k) bwd_finish_pack<V, T, kAdd>(a, elem(k), g_at(k), x_at(k), ~Word{0}, mean, A, B, K);
  if (blockIdx.x == 0 && warp == 0) bwd_apply_tail<T, kAdd>(a, p, map, tail_first, lane);
}

// The dynamic shared memory of `slots` held packs a thread: a round of the block's packs of g and of x each.
inline std::size_t v31_dynamic_bytes(int slots) { return static_cast<std::size_t>(slots) * 2 * kV31Threads * 16; }

// The blocks' partials: a DSum per channel for each block of the grid (one an SM).
inline std::size_t bwd_v31_partial_bytes(const Shape4& s) {
  return static_cast<std::size_t>(device_limits().sm_count) * static_cast<std::size_t>(s.C) * sizeof(DSum);
}

template <class T>
std::size_t bwd_v31_scratch_bytes(const Shape4& s) {
  return std::max(Scratch(s.C, bwd_v31_partial_bytes(s), 0).total, bwd_v4_scratch_bytes<T>(s));
}

// The kernel's plan, or held = -1 where v31 does not take the case.
template <class T, bool kAdd>
V31Plan v31_plan(const BwdArgs<T>& a, int grid, int slots) {
  return held_plan(a.s, kPack<T>, bwd_stats_packs_ok<T>(a) && bwd_apply_packs_ok<T, kAdd>(a), kV31Threads, grid,
                   slots, kV31MostL, kV31MostPacks);
}

// v31's kernel where it takes the case, else v20.
template <class T, bool kAdd>
void bwd_v31_held_rounds(cudaStream_t st, const BwdArgs<T>& a, void* ws) {
  check_shape(a.s, "bwd_v31_held_rounds");
  const int grid = device_limits().sm_count;
  const int slots = held_slots_once<&bwd_v31_kernel<T, kAdd>>(kV31Threads, v31_dynamic_bytes(1));
  V31Plan plan = v31_plan<T, kAdd>(a, grid, slots);
  if (plan.held < 0) {
    bwd_v20_async_pass<T, kAdd>(st, a, ws);
    return;
  }
  launch_held(reinterpret_cast<const void*>(&bwd_v31_kernel<T, kAdd>), grid, kV31Threads, v31_dynamic_bytes(slots), a,
              ws, bwd_v31_partial_bytes(a.s), plan, st, "bwd_v31_held_rounds");
}

// The kernels it launches, v20's included.
template <class T, bool kAdd>
std::vector<const void*> bwd_v31_kernels() {
  std::vector<const void*> k = bwd_v20_kernels<T, kAdd>();
  k.push_back(TUT_KERNEL((bwd_v31_kernel<T, kAdd>)));
  return k;
}

}  // namespace ch05
