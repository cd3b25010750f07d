// fwd v26_channel_groups: NHWC with C a multiple of 64 and few rows, x held in registers by a grid
// of channel groups: one cooperative launch, x read from DRAM once, one grid barrier.
//
// Why. At 64x1024x7x7 NHWC in half, cuDNN's fused forward ran in 0.0146 ms and v11, the fastest of
// ours, in 0.0183 (results/NVIDIA_H200.cudnn_suite.txt): the chapter's largest loss to cuDNN. x is
// 6.4 MB. v22 (every block on every channel, the gather split among owner blocks) and v23 (a block
// per 8 channels and all the rows) read it once and still lost: v22 had every block handle all 1024
// channels, v23 a warp's loads 32 rows apart and a store request per row and block.
//
// How. Channels are cut into groups of 64 (128 bytes of a row in half, 256 in float), and the rows
// into K equal parts: block (g, k) holds group g's channels of part k's rows in registers, a thread
// one 16-byte pack a row for up to R rows (R = 2, 4 or 8), consecutive threads on consecutive packs
// of a row, so a warp reads whole lines. Its statistics take two passes over the registers: the
// block's mean per channel, then the squared deviations from it (nothing cancels), each summed by
// shuffles across the warp's rows and then across the block's 16 warps. Each block writes its 64
// (mean, M2) pairs; one grid barrier; every block merges its group's K pairs (Chan's formula with
// the K counts, deviations taken from the first part's mean) and runs the pass from its registers.
// A row's 64 channels are whole mask words (C % 64 == 0), so the mask is stored word by word with no
// other block touching it. K is as large as the co-resident grid allows (at most 32 partials a
// channel, and parts of at least kV26Lanes rows where the rows allow), and R the least that holds a part.
//
// Where it does not apply (NCHW, C % 64 != 0, an operand off a 16-byte boundary, more groups than
// fit on the GPU, or more rows than the registers hold), it runs v11.
//
// Prediction (before any run in the ladder, after a stand-alone sketch of this kernel in half was
// timed against the benchmark's cuDNN row): under cuDNN's time by events at 64x1024x7x7 NHWC in
// half, and under v11's in all four forward problems.
#pragma once

#include "kernels/fwd_v11_early_loads.cuh"
#include "kernels/fwd_v16_channel_blocks.cuh"

#include <cooperative_groups.h>

#include <algorithm>
#include <vector>

namespace ch05 {

inline constexpr int kV26Block = 512;     // threads a block
inline constexpr int kV26Group = 64;      // channels a group
inline constexpr int kV26MaxParts = 32;   // parts of the rows: partials a channel
inline constexpr int kV26Warps = kV26Block / 32;

template <class T>
constexpr int kV26Packs = kV26Group / kPack<T>;  // threads across a row's group: 8 (half), 16 (float)
template <class T>
constexpr int kV26Lanes = kV26Block / kV26Packs<T>;  // rows a block holds per register: 64, 32

struct V26Plan {
  std::int64_t rows = 0, per = 0;  // rows, and rows a part (the last part may have fewer)
  int groups = 0, parts = 0, R = 0;
};

template <class T, bool kAdd, int R>
__global__ void __launch_bounds__(kV26Block)
    fwd_v26_channel_groups_kernel(FwdArgs<T> a, V26Plan plan, float2* partials) {
  constexpr int V = kPack<T>, P = kV26Packs<T>, L = kV26Lanes<T>;
  using Pk = tut::ew::Packed<T, V>;
  __shared__ float red[kV26Warps][kV26Group];
  __shared__ float2 part[kV26MaxParts][kV26Group];
  __shared__ float mean_s[kV26Group], scale_s[kV26Group], shift_s[kV26Group];

  const int g = static_cast<int>(blockIdx.x) / plan.parts, k = static_cast<int>(blockIdx.x) % plan.parts;
  const int q = static_cast<int>(threadIdx.x) % P, row = static_cast<int>(threadIdx.x) / P;
  const int warp = static_cast<int>(threadIdx.x) / 32, lane = static_cast<int>(threadIdx.x) % 32;
  const std::int64_t C = a.s.C, r0 = k * plan.per, r1 = r0 + plan.per < plan.rows ? r0 + plan.per : plan.rows;
  const std::int64_t c0 = static_cast<std::int64_t>(g) * kV26Group + q * V;
  const float n_own = static_cast<float>(r1 - r0);

  // The per-channel inputs the merge needs, loaded now so that their latency hides behind x's.
  const std::int64_t cg_ = static_cast<std::int64_t>(g) * kV26Group + threadIdx.x;
  float gamma = 0.0f, beta = 0.0f, rmean = 0.0f, rvar = 0.0f;
  if (threadIdx.x < kV26Group) {
    gamma = a.gamma[cg_];
    beta = a.beta[cg_];
    if (k == 0) {
      rmean = a.running_mean[cg_];
      rvar = a.running_var[cg_];
    }
  }

  Pk xs[R];
#pragma unroll
  for (int i = 0; i < R; ++i) {
    const std::int64_t r = r0 + row + static_cast<std::int64_t>(i) * L;
    if (r < r1) xs[i] = *reinterpret_cast<const Pk*>(a.x + r * C + c0);
  }

  // Sums over the thread's rows, then the warp's rows (lanes q, q + P, ...), then the block's warps.
  const auto block_sums = [&](float (&v)[V], float* out) {
#pragma unroll
    for (int j = 0; j < V; ++j)
#pragma unroll
      for (int off = P; off < 32; off <<= 1) v[j] += __shfl_xor_sync(kFullWarp, v[j], off);
    if (lane < P) {
#pragma unroll
      for (int j = 0; j < V; ++j) red[warp][q * V + j] = v[j];
    }
    __syncthreads();
    if (threadIdx.x < kV26Group) {
      float s = 0.0f;
#pragma unroll
      for (int w = 0; w < kV26Warps; ++w) s += red[w][threadIdx.x];
      out[threadIdx.x] = s;
    }
    __syncthreads();
  };

  float v[V];
#pragma unroll
  for (int j = 0; j < V; ++j) v[j] = 0.0f;
#pragma unroll
  for (int i = 0; i < R; ++i)
    if (r0 + row + static_cast<std::int64_t>(i) * L < r1)
#pragma unroll
      for (int j = 0; j < V; ++j) v[j] += to_float(xs[i].elem[j]);
  block_sums(v, mean_s);
  if (threadIdx.x < kV26Group) mean_s[threadIdx.x] /= n_own;
  __syncthreads();

  float m[V];
#pragma unroll
  for (int j = 0; j < V; ++j) {
    m[j] = mean_s[q * V + j];
    v[j] = 0.0f;
  }
#pragma unroll
  for (int i = 0; i < R; ++i)
    if (r0 + row + static_cast<std::int64_t>(i) * L < r1)
#pragma unroll
      for (int j = 0; j < V; ++j) {
        const float d = to_float(xs[i].elem[j]) - m[j];
        v[j] = fmaf(d, d, v[j]);
      }
  block_sums(v, shift_s);  // the block's M2 per channel, for the moment in shift_s
  if (threadIdx.x < kV26Group)
    __stcg(partials + (static_cast<std::int64_t>(g) * plan.parts + k) * kV26Group + threadIdx.x,
           make_float2(mean_s[threadIdx.x], shift_s[threadIdx.x]));

  cooperative_groups::this_grid().sync();

  // The group's K partials, then Chan's merge with the parts' counts: the mean from the parts'
  // deviations from part 0's mean, M2 from each part's M2 and its mean's deviation from the total's.
  for (int t = static_cast<int>(threadIdx.x); t < plan.parts * kV26Group; t += kV26Block)
    part[t / kV26Group][t % kV26Group] =
        __ldcg(partials + static_cast<std::int64_t>(g) * plan.parts * kV26Group + t);
  __syncthreads();
  if (threadIdx.x < kV26Group) {
    const int c = static_cast<int>(threadIdx.x);
    const float m0 = part[0][c].x;
    float d = 0.0f;
    const auto count = [&](int j) {  // rows of part j
      const std::int64_t end = (j + 1) * plan.per;
      return static_cast<float>((end < plan.rows ? end : plan.rows) - j * plan.per);
    };
    for (int j = 0; j < plan.parts; ++j) d = fmaf(count(j), part[j][c].x - m0, d);
    const float M = static_cast<float>(plan.rows);
    const float mean = m0 + d / M;
    float m2 = 0.0f;
    for (int j = 0; j < plan.parts; ++j) {
      const float e = part[j][c].x - mean;
      m2 += part[j][c].y + count(j) * e * e;
    }
    const Welford w{M, mean, m2};
    const float invstd = invstd_of(w, M, a.eps);
    if (k == 0) save_channel_loaded(a, cg_, w, invstd, M, rmean, rvar);
    mean_s[c] = mean;
    scale_s[c] = gamma * invstd;
    shift_s[c] = beta;
  }
  __syncthreads();

  // The pass from the registers. A mask word is 32 / V threads' bits, OR-ed by shuffles.
  float mean[V], scale[V], shift[V];
#pragma unroll
  for (int j = 0; j < V; ++j) {
    mean[j] = mean_s[q * V + j];
    scale[j] = scale_s[q * V + j];
    shift[j] = shift_s[q * V + j];
  }
  constexpr int kPerWord = 32 / V;
#pragma unroll
  for (int i = 0; i < R; ++i) {
    const std::int64_t r = r0 + row + static_cast<std::int64_t>(i) * L;
    const bool in = r < r1;
    const std::int64_t e0 = r * C + c0;
    float rv[V] = {};
    if constexpr (kAdd) {
      if (in) load_pack<V, T>(a.r + e0, rv);
    }
    float yv[V];
    unsigned bits = 0;
#pragma unroll
    for (int j = 0; j < V; ++j) {
      float s = fmaf(to_float(xs[i].elem[j]) - mean[j], scale[j], shift[j]);
      if constexpr (kAdd) s += rv[j];
      s = round_to<T>(s);
      yv[j] = relu(s);
      bits |= static_cast<unsigned>(kept(s)) << j;
    }
    if (in) store_pack<V, T>(a.y + e0, yv);
    unsigned word = in ? bits << (V * (q % kPerWord)) : 0u;
#pragma unroll
    for (int off = 1; off < kPerWord; off <<= 1) word |= __shfl_xor_sync(kFullWarp, word, off);
    if (in && q % kPerWord == 0) a.mask[e0 / 32] = word;
  }
}

template <class T, bool kAdd>
std::vector<const void*> fwd_v26_own_kernels() {
  return {TUT_KERNEL((fwd_v26_channel_groups_kernel<T, kAdd, 2>)),
          TUT_KERNEL((fwd_v26_channel_groups_kernel<T, kAdd, 4>)),
          TUT_KERNEL((fwd_v26_channel_groups_kernel<T, kAdd, 8>))};
}

// The plan for a shape (parts = 0: v26 does not apply), given how many blocks of each form fit.
// Host only, so that the CPU tests can check it.
template <class T>
V26Plan v26_plan(const Shape4& s, int resident2, int resident4, int resident8) {
  V26Plan p;
  if (s.layout != Layout::nhwc || s.C % kV26Group != 0) return p;
  p.rows = s.N * s.HW;
  p.groups = static_cast<int>(s.C / kV26Group);  // at most 2^24: check_shape caps C at 2^30
  constexpr int L = kV26Lanes<T>;
  const std::int64_t rows_per_warp_part = (p.rows + L - 1) / L;  // parts of at least L rows
  for (const auto& [R, resident] : {std::pair{2, resident2}, std::pair{4, resident4}, std::pair{8, resident8}}) {
    if (resident / p.groups < 1) continue;
    const std::int64_t parts = std::min<std::int64_t>({resident / p.groups, kV26MaxParts, rows_per_warp_part});
    const std::int64_t per = (p.rows + parts - 1) / parts;
    if (per > static_cast<std::int64_t>(L) * R) continue;
    p.per = per;
    p.parts = static_cast<int>((p.rows + per - 1) / per);  // no empty part
    p.R = R;
    return p;
  }
  return p;
}

template <class T>
std::size_t fwd_v26_scratch_bytes(const Shape4& s) {
  const std::size_t own = static_cast<std::size_t>(s.C) * kV26MaxParts * sizeof(float2);
  return std::max(own, fwd_v11_scratch_bytes<T>(s));
}

template <class T, bool kAdd>
void fwd_v26_channel_groups(cudaStream_t st, const FwdArgs<T>& a, void* ws) {
  check_shape(a.s, "fwd_v26_channel_groups");
  V26Plan plan;
  if (fwd_apply_packs_ok<T, kAdd>(a)) {  // x, y (and r) on 16-byte boundaries
    const auto& resident = fwd_v16_resident<T, kAdd, &fwd_v26_own_kernels<T, kAdd>, true>();
    plan = v26_plan<T>(a.s, static_cast<int>(resident[0]), static_cast<int>(resident[1]), static_cast<int>(resident[2]));
  }
  if (plan.parts == 0) return fwd_v11_early_loads<T, kAdd>(st, a, ws);
  static const std::vector<const void*> kernels = fwd_v26_own_kernels<T, kAdd>();
  const void* kernel = kernels[plan.R == 2 ? 0 : plan.R == 4 ? 1 : 2];
  FwdArgs<T> args = a;
  auto* partials = static_cast<float2*>(ws);
  void* params[] = {&args, &plan, &partials};
  const unsigned grid = grid_of(static_cast<std::int64_t>(plan.groups) * plan.parts, "fwd_v26_channel_groups");
  ::tut::check_cuda(cudaLaunchCooperativeKernel(kernel, grid, kV26Block, params, 0, st),
                    "cudaLaunchCooperativeKernel(fwd_v26_channel_groups_kernel)", __FILE__, __LINE__);
}

template <class T, bool kAdd>
std::vector<const void*> fwd_v26_kernels() {
  auto k = fwd_v11_kernels<T, kAdd>();
  for (const void* own : fwd_v26_own_kernels<T, kAdd>()) k.push_back(own);
  return k;
}

}  // namespace ch05
