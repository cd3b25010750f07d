// fwd v9_two_launches: for the tensors that fit in the L2, two plain launches instead of one
// cooperative or cluster kernel: a statistics kernel writing a few partials per channel, then the
// pass as a second kernel, started early by programmatic dependent launch, reading x again from L2.
//
// What changed since v8. v8 holds each thread's rows in registers across a cluster barrier, so a
// block keeps 128 registers per thread for the whole kernel: at 64x1024x7x7 NHWC float Nsight
// Compute measured 22 % of the warps active against 42 % for cuDNN's fused kernel, 25.0 us against
// 16.2 (results/NVIDIA_H100_80GB_HBM3.ncu_v8.csv). Where x fits in the 50 MB L2, reading it a
// second time costs L2 bandwidth, not DRAM bytes; then nothing needs to live across the merge, and
// each kernel can be as light as a copy. The two launches are chained by programmatic dependent
// launch (sm_90): the statistics kernel lets the next launch start as soon as every one of its
// blocks is running (griddepcontrol.launch_dependents), so the pass's blocks are already resident,
// waiting in griddepcontrol.wait (which returns once the statistics kernel has finished and its
// writes are visible), instead of the launch gap between two kernels in one stream.
//
// Three walks (the plan, v9_plan):
//   flat  NHWC with C <= 64 (the rows are short: 12 bytes at C = 3): the tensor is one stream of
//         16-byte packs (or of single values where the packs do not fit: a pointer off 16 bytes,
//         or numel % V != 0). Thread t of block q takes packs q * 256 + t + j * Q * 256; the grid
//         Q is a multiple of C / gcd(C, 256 * V), so the step Q * 256 * V is a multiple of C and
//         element k of every pack a thread reads lies in the same channel. Each thread keeps V
//         statistics, one per slot; the block merges the slots of each channel (a warp per
//         channel, its lanes over the slots, then shuffles). A warp's packs are 32 * V
//         consecutive elements from a multiple of 32 * V: V whole words of the mask, built by
//         shuffles and stored by one lane each (no atomics).
//   rows  NHWC with C > 64: v8's cut without the cluster: a block holds P columns of packs (P * V
//         <= 32 channels) and L = 256 / P row lanes; the Q blocks of one channel group split its
//         rows. The mask: whole bytes where C and the group are multiples of 8, else v8's runs
//         of lanes (write_mask_bits).
//   nchw  one channel per group, single values, as v8.
// Every block writes one Welford triple per channel it touched to partials[c * Q + q]; every
// block of the pass merges its channels' Q partials in the same order (so every block computes
// the same statistics, bit for bit), and the pass's blocks of chunk 0 write the saved and running
// statistics. Every merge is spread over all the block's threads (block_merge). The grid is at
// most 528 blocks, one wave of 4 blocks of 256 threads per SM on the H100 (flat: Q * C <= 8192).
// Prediction: at 64x1024x7x7 NHWC float each kernel streams 12.8 MB (the statistics from DRAM,
// the pass from L2 plus 12.8 MB written) at the occupancy of a copy; about one DRAM read and one
// write, under cuDNN's fused 0.0185 ms. At 4x33x17x19, two short kernels with the launch gap
// hidden: near the 0.0057 ms of a one-kernel inference pass plus one short kernel, under
// cuDNN's 0.0100 ms. At 8x3x224x224 NHWC, the flat walk with 16-byte accesses instead of rows of
// 12 bytes: under cuDNN's fused 0.0182 ms.
// Evidence: the benchmark against cuDNN in one run, Nsight Compute on both kernels.
// Measured on the H100 (results/NVIDIA_H100_80GB_HBM3.ncu_v9_v10.csv, ..._v9_v10_cases.json). The
// first form (at least 528 blocks, 8 packs per thread, each channel's partials merged by one warp
// whose shuffles compiled to a divergent collective) at 64x1024x7x7 NHWC float: statistics 13.8 us
// in 544 blocks at 76 registers, the pass 32.8 us in 544 blocks at 4 per SM. This form: 11.4 us
// and 20.0 us with 40 % and 43 % of the warps active, against 17.6 us for cuDNN's fused kernel; in
// the benchmark 0.0291 ms against cuDNN's 0.0188 (v8 0.0290): not met. The Add forward there is
// our fastest (0.0317 ms, 1.41x cuDNN's time), and so is the half forward at 8x3x224x224 NHWC
// (0.0275 ms, 1.60x). At 4x33x17x19 NHWC float 0.0183 ms against cuDNN's 0.0101; the half forward
// there (the flat walk on single values) took 0.0892 ms, not profiled.
#pragma once

#include "kernels/fwd_v8_cluster.cuh"

#include <algorithm>
#include <numeric>
#include <type_traits>
#include <vector>

namespace ch05 {

inline constexpr int kFlatMaxC = 64;       // the flat walk: NHWC with C <= 64
inline constexpr int kV9Blocks = 528;      // at most this many blocks, where the shape allows: one
                                           // wave of 4 blocks of 256 threads per SM on the H100
inline constexpr int kV9FlatPartials = 8192;  // flat: Q * C at most

enum class V9Walk : int { flat = 0, rows = 1, nchw = 2 };

struct V9Plan {
  V9Walk walk = V9Walk::flat;
  int V = 1;               // elements per item
  int P = 1;               // rows, nchw: pack columns per block
  int L = kBlock;          // rows, nchw: row lanes per block
  std::int64_t groups = 1;  // channel groups (flat: 1)
  std::int64_t Q = 1;      // blocks per group: the partials per channel
  std::int64_t units = 0;  // flat: packs (or values); rows, nchw: rows per channel M
  std::int64_t items = 0;  // items per thread, the same for every thread
  Divisor hw;
};

// Items a thread loads at once: 4 packs (or 8 single values) in both kernels, which with 64
// registers let 4 blocks of 256 threads share an SM (1024 threads: 64 KB of loads in flight).
template <int V>
inline constexpr int kV9Items = V == 1 ? 8 : 4;
// The pass of the flat walk on single values builds a word from 5 shuffles per item: 4 items (8
// spilled).
template <int V, V9Walk kWalk>
inline constexpr int kV9PassItems = V == 1 && kWalk == V9Walk::flat ? 4 : kV9Items<V>;

// `packs`: x, y (and r) 16-byte aligned. `flat_partials`: the flat walk's Q * C at most (v11 asks
// for fewer).
inline V9Plan v9_plan(const Shape4& s, bool packs, int Vp, std::int64_t flat_partials = kV9FlatPartials) {
  V9Plan p;
  const std::int64_t n = s.numel(), M = s.per_channel();
  p.hw = Divisor(s.HW);
  const auto cdiv = [](std::int64_t a, std::int64_t b) { return (a + b - 1) / b; };
  if (s.layout == Layout::nhwc && s.C <= kFlatMaxC) {
    p.walk = V9Walk::flat;
    p.V = packs && n % Vp == 0 ? Vp : 1;
    p.units = n / p.V;
    const std::int64_t per_step = static_cast<std::int64_t>(kBlock) * p.V;
    const std::int64_t unit = s.C / std::gcd(s.C, per_step);  // Q a multiple of it: the step a multiple of C
    const std::int64_t most = std::max(unit, kV9Blocks / unit * unit);
    std::int64_t Q = std::min(most, cdiv(cdiv(p.units, kBlock), unit) * unit);  // no block without a pack
    Q = std::min(Q, std::max(unit, flat_partials / s.C / unit * unit));
    p.Q = Q;
    p.groups = 1;
    p.items = cdiv(p.units, Q * kBlock);
    return p;
  }
  p.units = M;
  if (s.layout == Layout::nchw) {
    p.walk = V9Walk::nchw;
    p.V = 1;
    p.P = 1;
    p.groups = s.C;
  } else {
    p.walk = V9Walk::rows;
    p.V = packs && s.C % Vp == 0 ? Vp : 1;
    const std::int64_t cols = cdiv(s.C, p.V);
    p.P = 1;
    for (int P = kGroupSlots / p.V; P >= 1; P /= 2)
      if (P == 1 || P / 2 < cols) {  // the widest P with not more than half its columns idle
        p.P = P;
        break;
      }
    p.groups = cdiv(s.C, static_cast<std::int64_t>(p.P) * p.V);
  }
  p.L = kBlock / p.P;
  const std::int64_t steps = cdiv(M, p.L);  // row steps of one block
  p.Q = std::clamp<std::int64_t>(kV9Blocks / p.groups, 1, steps);
  p.items = cdiv(M, static_cast<std::int64_t>(p.L) * p.Q);
  return p;
}

__device__ __forceinline__ void pdl_launch_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Chan's merge with the weight b.n / n by __fdividef (2 ulp; the count is exact in float up to
// 2^24 and its ratio needs no correctly rounded division). The merges below run in chains of a
// few per thread; merge()'s IEEE division has a slow path the compiler keeps beside every one.
__device__ __forceinline__ Welford merge_fast(Welford a, Welford b) {
  const float n = a.n + b.n;
  if (n == 0.0f) return a;
  const float d = b.mean - a.mean, wb = __fdividef(b.n, n);
  return {n, fmaf(d, wb, a.mean), a.m2 + b.m2 + d * d * a.n * wb};
}

// The block's merge of `width` channels (width <= 64), channel i's values get(i, j) for j <
// count(i): thread t takes channel i = t % width and every S-th value from t / width (S = 256 /
// width threads per channel, every load issued before its merge), then a tree over the S shares
// in shared memory. Every thread calls it; red[i] holds channel i's total on return. The order of
// the merges depends only on width and the counts, so every block merges the same values in the
// same order.
template <class Count, class Get>
__device__ __forceinline__ void block_merge(int width, Count count, Get get, Welford* red) {
  const int t = static_cast<int>(threadIdx.x), S = kBlock / width, i = t % width, s = t / width;
  if (s < S) {
    Welford acc = {0.0f, 0.0f, 0.0f};
    const int n = count(i);
    for (int j = s; j < n; j += S) acc = merge_fast(acc, get(i, j));
    red[t] = acc;
  }
  __syncthreads();
  int h = 1;
  while (h < S) h <<= 1;
  for (h >>= 1; h >= 1; h >>= 1) {
    if (s < h && s + h < S) red[t] = merge_fast(red[t], red[t + h * width]);
    __syncthreads();
  }
}

// Where this thread walks: units first + i * step (i < items), below `limit`; c_first, the first
// channel of its item (rows, nchw); ok, whether its column holds channels.
struct V9Walker {
  std::int64_t first, step, limit, c_first, q, g;
  int col;
  bool ok;
};

template <V9Walk kWalk>
__device__ __forceinline__ V9Walker v9_walker(const Shape4& s, const V9Plan& p, int V) {
  V9Walker w;
  const int t = static_cast<int>(threadIdx.x);
  if constexpr (kWalk == V9Walk::flat) {
    w.g = 0;
    w.q = blockIdx.x;
    w.col = 0;
    w.c_first = 0;
    w.ok = true;
    w.first = w.q * kBlock + t;
    w.step = p.Q * kBlock;
    w.limit = p.units;
  } else {
    w.g = blockIdx.x / p.Q;
    w.q = blockIdx.x - w.g * p.Q;
    w.col = t % p.P;
    const int lrow = t / p.P;
    w.c_first = kWalk == V9Walk::nchw ? w.g : (w.g * p.P + w.col) * V;
    w.ok = w.c_first < s.C;
    w.first = w.q * p.L + lrow;
    w.step = static_cast<std::int64_t>(p.L) * p.Q;
    w.limit = p.units;
  }
  return w;
}

// The memory index of unit u's first element.
template <V9Walk kWalk>
__device__ __forceinline__ std::int64_t v9_index(const Shape4& s, const V9Plan& p, const V9Walker& w, int V,
                                                 std::int64_t u) {
  if constexpr (kWalk == V9Walk::flat) return u * V;
  else if constexpr (kWalk == V9Walk::rows) return u * s.C + w.c_first;
  else {
    const std::int64_t n = p.hw.div(u);
    return (n * s.C + w.c_first) * s.HW + (u - n * s.HW);
  }
}

// The statistics: each thread's items in batches of R (loaded at once, then their mean and squared
// deviations, merged into the thread's V triples), the block's merge per channel, one triple per
// channel to partials[c * Q + q].
template <class T, int V, int R, V9Walk kWalk>
__global__ void __launch_bounds__(kBlock, 4) fwd_v9_stats_kernel(FwdArgs<T> a, V9Plan plan, Welford* partials) {
  pdl_launch_dependents();  // the pass's blocks may start as soon as all of these run
  const V9Walker wk = v9_walker<kWalk>(a.s, plan, V);
  Welford w[V];
  CH05_UNROLL
  for (int k = 0; k < V; ++k) w[k] = {0.0f, 0.0f, 0.0f};
  for (std::int64_t i0 = 0; i0 < plan.items; i0 += R) {
    Item<T, V> xs[R];
    int cnt = 0;  // units grow with i: the valid items are a prefix
    CH05_UNROLL
    for (int i = 0; i < R; ++i) {
      const std::int64_t u = wk.first + (i0 + i) * wk.step;
      if (wk.ok && u < wk.limit) {
        xs[i] = *reinterpret_cast<const Item<T, V>*>(a.x + v9_index<kWalk>(a.s, plan, wk, V, u));
        ++cnt;
      }
    }
    if (cnt == 0) break;
    CH05_UNROLL
    for (int k = 0; k < V; ++k) {
      float sum = 0.0f;
      CH05_UNROLL
      for (int i = 0; i < R; ++i)
        if (i < cnt) sum += to_float(xs[i].elem[k]);
      const float nb = static_cast<float>(cnt), mean = __fdividef(sum, nb);
      float m2 = 0.0f;
      CH05_UNROLL
      for (int i = 0; i < R; ++i)
        if (i < cnt) {
          const float d = to_float(xs[i].elem[k]) - mean;
          m2 = fmaf(d, d, m2);
        }
      w[k] = merge_fast(w[k], Welford{nb, mean, m2});
    }
  }
  const int t = static_cast<int>(threadIdx.x);
  if constexpr (kWalk == V9Walk::flat) {
    // Slot o = t * V + k of this block holds channel (q * 256 * V + o) % C.
    __shared__ Welford slots[kBlock * V];
    __shared__ Welford red[kBlock];
    CH05_UNROLL
    for (int k = 0; k < V; ++k) slots[t * V + k] = w[k];
    __syncthreads();
    const int C = static_cast<int>(a.s.C);
    const int base = static_cast<int>((wk.q * kBlock * V) % C);
    const auto first_slot = [&](int c) { return c >= base ? c - base : c - base + C; };
    block_merge(
        C, [&](int c) { return (kBlock * V - first_slot(c) + C - 1) / C; },
        [&](int c, int j) { return slots[first_slot(c) + j * C]; }, red);
    if (t < C) partials[static_cast<std::int64_t>(t) * plan.Q + wk.q] = red[t];
  } else {
    __shared__ Welford red[kWarps][kGroupSlots];
    __shared__ Welford part[kGroupSlots];
    block_columns<V>(w, plan.P, red, part);
    const int width = plan.P * V;
    if (t < width) {
      const std::int64_t c = kWalk == V9Walk::nchw ? wk.g : wk.g * width + t;
      if (c < a.s.C) partials[c * plan.Q + wk.q] = part[t];
    }
  }
}

// The pass: wait for the statistics kernel, merge this block's channels' Q partials (a warp per
// channel), then normalize, add, ReLU and the mask, x (and r) read in batches of R.
template <class T, int V, int R, bool kAdd, V9Walk kWalk, bool kBytes>
__global__ void __launch_bounds__(kBlock, 4) fwd_v9_apply_kernel(FwdArgs<T> a, V9Plan plan, const Welford* partials) {
  static_assert(kWalk != V9Walk::nchw || V == 1, "NCHW walks single values");
  static_assert(!kBytes || (kWalk == V9Walk::rows && (V == 4 || V == 8)), "whole bytes from row packs of 4 or 8");
  __shared__ float s_mean[kFlatMaxC], s_scale[kFlatMaxC], s_shift[kFlatMaxC];
  const V9Walker wk = v9_walker<kWalk>(a.s, plan, V);
  const int t = static_cast<int>(threadIdx.x), lane = t & 31;
  const std::int64_t C = a.s.C;
  const int width = kWalk == V9Walk::flat ? static_cast<int>(C) : plan.P * V;
  __shared__ Welford red[kBlock];
  const auto channel = [&](int i) -> std::int64_t {
    return kWalk == V9Walk::flat ? i : (kWalk == V9Walk::nchw ? wk.g : wk.g * width + i);
  };
  const int Q = static_cast<int>(plan.Q);
  pdl_wait();  // the statistics kernel has finished; its partials are visible
  block_merge(
      width, [&](int i) { return channel(i) < C ? Q : 0; },
      [&](int i, int j) { return load_partial(partials + channel(i) * Q + j); }, red);
  {
    const int i = t;
    const std::int64_t c = i < width ? channel(i) : C;
    if (c < C) {
      const Welford tot = red[i];
      {
        const float Mf = static_cast<float>(a.s.per_channel());
        const float invstd = 1.0f / sqrtf(tot.m2 / Mf + a.eps);
        s_mean[i] = tot.mean;
        s_scale[i] = a.gamma[c] * invstd;
        s_shift[i] = a.beta[c];
        if (wk.q == 0) {
          a.saved_mean[c] = tot.mean;
          a.saved_invstd[c] = invstd;
          a.running_mean[c] = (1.0f - a.momentum) * a.running_mean[c] + a.momentum * tot.mean;
          a.running_var[c] = (1.0f - a.momentum) * a.running_var[c] + a.momentum * (tot.m2 / (Mf - 1.0f));
        }
      }
    }
  }
  __syncthreads();
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
    Item<T, V> xs[R];
    CH05_UNROLL
    for (int i = 0; i < R; ++i) {
      const std::int64_t u = wk.first + (i0 + i) * wk.step;
      if (wk.ok && u < wk.limit) xs[i] = *reinterpret_cast<const Item<T, V>*>(a.x + v9_index<kWalk>(a.s, plan, wk, V, u));
    }
    CH05_UNROLL
    for (int i = 0; i < R; ++i) {
      const std::int64_t u = wk.first + (i0 + i) * wk.step;
      const bool has = wk.ok && u < wk.limit;
      const std::int64_t e = has ? v9_index<kWalk>(a.s, plan, wk, V, u) : 0;
      unsigned bits = 0;
      if (has) {
        Item<T, V> rv;
        if constexpr (kAdd) rv = *reinterpret_cast<const Item<T, V>*>(a.r + e);
        float y[V];
        CH05_UNROLL
        for (int k = 0; k < V; ++k) {
          float s = fmaf(to_float(xs[i].elem[k]) - mean[k], scale[k], shift[k]);
          if constexpr (kAdd) s += to_float(rv.elem[k]);
          s = round_to<T>(s);
          y[k] = relu(s);
          bits |= static_cast<unsigned>(kept(s)) << k;
        }
        store_item<V, T>(a.y + e, y);
      }
      if constexpr (kWalk == V9Walk::flat) {
        // The 32 / V lanes of one word: lane l's V bits at (l % (32 / V)) * V. The first of them
        // starts at element u * V, a multiple of 32 (u = lane mod 32).
        constexpr int kLanes = 32 / V;
        unsigned word = bits << ((lane % kLanes) * V);
        CH05_UNROLL
        for (int off = 1; off < kLanes; off <<= 1) word |= __shfl_xor_sync(kFullWarp, word, off);
        const std::int64_t wi = ((wk.first + (i0 + i) * wk.step) * V) >> 5;
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
        // Keys that never decrease from lane to lane: a lane with no item passes where it would be,
        // clamped into the tensor (v8's rule).
        std::int64_t key = e;
        if (!has) {
          const std::int64_t row = u;
          if (row >= plan.units) key = n - 1;
          else key = row * C + C - 1;  // rows: a column past C
        }
        write_mask_bits<V>(a.mask, n, has, key, bits);
      }
    }
  }
}

// Programmatic dependent launch needs sm_90; elsewhere the pass is an ordinary second launch.
inline bool pdl_supported() {
  int dev = 0, major = 0;
  TUT_CUDA(cudaGetDevice(&dev));
  TUT_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
  return major >= 9;
}

// `kernel` on `grid` blocks of kBlock threads in stream `st`, after the launch before it, with the
// dependent launch's attribute where the GPU has it: its blocks may start once every block of the
// launch before has called griddepcontrol.launch_dependents (or ended). `who` names it in an error.
template <class... Params, class... Args>
void launch_dependent(cudaStream_t st, unsigned grid, void (*kernel)(Params...), const char* who, Args... args) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(grid);
  cfg.blockDim = dim3(kBlock);
  cfg.dynamicSmemBytes = 0;
  cfg.stream = st;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = pdl_supported() ? 1 : 0;
  ::tut::check_cuda(cudaLaunchKernelEx(&cfg, kernel, args...), who, __FILE__, __LINE__);
}

template <class T, int V, bool kAdd, V9Walk kWalk, bool kBytes>
void fwd_v9_launch(cudaStream_t st, const FwdArgs<T>& a, const V9Plan& plan, Welford* partials) {
  constexpr int R = kV9Items<V>;
  const unsigned grid = grid_of(plan.groups * plan.Q, "fwd_v9_two_launches");
  fwd_v9_stats_kernel<T, V, R, kWalk><<<grid, kBlock, 0, st>>>(a, plan, partials);
  TUT_CHECK_LAUNCH("fwd_v9_stats_kernel");
  const Welford* cpartials = partials;
  launch_dependent(st, grid, &fwd_v9_apply_kernel<T, V, kV9PassItems<V, kWalk>, kAdd, kWalk, kBytes>,
                   "dependent launch of fwd_v9_apply_kernel", a, plan, cpartials);
}

// The plan's form as template arguments: launch(V, walk, bytes), each a std::integral_constant, V
// the elements per item (Vp, or 1 where the packs do not fit) and bytes whether the rows walk writes
// its mask in whole bytes (C and the group multiples of 8). v9 and v11 launch their kernels through it.
template <int Vp, class Launch>
void with_v9_form(const V9Plan& plan, std::int64_t C, Launch&& launch) {
  using Pack = std::integral_constant<int, Vp>;
  using One = std::integral_constant<int, 1>;
  using Flat = std::integral_constant<V9Walk, V9Walk::flat>;
  using Rows = std::integral_constant<V9Walk, V9Walk::rows>;
  using Nchw = std::integral_constant<V9Walk, V9Walk::nchw>;
  if (plan.walk == V9Walk::flat) {
    if (plan.V == Vp) launch(Pack{}, Flat{}, std::false_type{});
    else launch(One{}, Flat{}, std::false_type{});
  } else if (plan.walk == V9Walk::rows) {
    if (plan.V == Vp) {
      if (C % 8 == 0 && plan.P * Vp % 8 == 0) launch(Pack{}, Rows{}, std::true_type{});
      else launch(Pack{}, Rows{}, std::false_type{});
    } else {
      launch(One{}, Rows{}, std::false_type{});
    }
  } else {
    launch(One{}, Nchw{}, std::false_type{});
  }
}

template <class T, bool kAdd>
void fwd_v9_two_launches(cudaStream_t st, const FwdArgs<T>& a, void* ws) {
  check_shape(a.s, "fwd_v9_two_launches");
  constexpr int Vp = kPack<T>;
  const bool packs = fwd_apply_packs_ok<T, kAdd>(a);
  const V9Plan plan = v9_plan(a.s, packs, Vp);
  auto* partials = static_cast<Welford*>(ws);
  with_v9_form<Vp>(plan, a.s.C, [&](auto v, auto walk, auto bytes) {
    fwd_v9_launch<T, decltype(v)::value, kAdd, decltype(walk)::value, decltype(bytes)::value>(st, a, plan, partials);
  });
}

// The partials: C * Q triples, for either plan (packs or not).
template <class T>
std::size_t fwd_v9_scratch_bytes(const Shape4& s) {
  const V9Plan a = v9_plan(s, true, kPack<T>), b = v9_plan(s, false, kPack<T>);
  return static_cast<std::size_t>(s.C) * static_cast<std::size_t>(std::max(a.Q, b.Q)) * sizeof(Welford);
}

template <class T, bool kAdd>
std::vector<const void*> fwd_v9_kernels() {
  constexpr int Vp = kPack<T>;
  return {TUT_KERNEL(fwd_v9_stats_kernel<T, Vp, kV9Items<Vp>, V9Walk::flat>),
          TUT_KERNEL(fwd_v9_apply_kernel<T, Vp, kV9PassItems<Vp, V9Walk::flat>, kAdd, V9Walk::flat, false>),
          TUT_KERNEL(fwd_v9_stats_kernel<T, 1, kV9Items<1>, V9Walk::flat>),
          TUT_KERNEL(fwd_v9_apply_kernel<T, 1, kV9PassItems<1, V9Walk::flat>, kAdd, V9Walk::flat, false>),
          TUT_KERNEL(fwd_v9_stats_kernel<T, Vp, kV9Items<Vp>, V9Walk::rows>),
          TUT_KERNEL(fwd_v9_apply_kernel<T, Vp, kV9PassItems<Vp, V9Walk::rows>, kAdd, V9Walk::rows, true>),
          TUT_KERNEL(fwd_v9_apply_kernel<T, Vp, kV9PassItems<Vp, V9Walk::rows>, kAdd, V9Walk::rows, false>),
          TUT_KERNEL(fwd_v9_stats_kernel<T, 1, kV9Items<1>, V9Walk::rows>),
          TUT_KERNEL(fwd_v9_apply_kernel<T, 1, kV9PassItems<1, V9Walk::rows>, kAdd, V9Walk::rows, false>),
          TUT_KERNEL(fwd_v9_stats_kernel<T, 1, kV9Items<1>, V9Walk::nchw>),
          TUT_KERNEL(fwd_v9_apply_kernel<T, 1, kV9PassItems<1, V9Walk::nchw>, kAdd, V9Walk::nchw, false>)};
}

}  // namespace ch05
