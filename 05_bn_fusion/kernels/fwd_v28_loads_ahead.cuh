// fwd v28_loads_ahead: v27's statistics walk with its loads in flight before its sums, paired with
// the pass that was faster in each type: v20's in half, v17's in float (v19's pair).
//
// Why. v27 (commit be1e520, README "A fifth trial that lost") capped its statistics kernel at 80
// registers for 3 blocks of 256 threads an SM, and in half the compiler kept the walk under that cap
// by using each 16-byte load before it issued the next: the loop waited on memory once a load, not
// once a round of 4 (this kernel built as v27 was, 3 blocks and 4 loads, checked in the SASS test
// "v28"). In float its 4 loads went out together and its kernel took 57.1 us against v19's 62.0;
// in half 60.1 against 42.4. Its pass was v20's in both types, and in float v19 with v17's pass was
// the faster forward (0.1638 ms against 0.1693 at 64x64x112x112 NHWC).
//
// How. v27's sums and merge (kernels below): shifted sums in float registers, to doubles in the
// thread's shared-memory slots every kV28Flush groups, moved to x's first row at the end, the
// block's sums in double in a fixed order, one grid barrier, then a block per channel. The walk
// counts its packs once (a 32-bit count) and steps a pointer; it runs whole groups of kU = 8 loads
// with no bound inside the group, then the rest one by one. The registers for 8 packs come from
// 2 blocks an SM (up to 128 a thread): 512 threads with 128 bytes each in flight, where v27 had
// 768 with 64 (on paper; in half, 16). Then the pass: v20's ring in half, v17's chunks in float.
// Where it does not apply (NCHW; a row of packs wider than a block; x, y or r off 16 bytes), v28
// runs the ladder's forward before it: v20 in half NHWC, else v19 (in half NCHW v20 took 1.056 of
// v19's time at 64x64x112x112, results/v28_trial/).
// Bytes: as v17 (x twice, the start of the second read from the L2).
// Prediction (before any run): at 64x64x112x112 NHWC under Nsight Compute, the statistics kernel
// near a plain read of x, about 30 us in half (v19's 43.4) and 53 in float (61.9); the half forward
// about 0.078 ms (v20 0.0896 in the suite), the float one about 0.155 ms (v19 0.1638).
//
// Measured on the H200 (results/v28_trial/; README "Loads before sums"): the statistics kernel 38.2
// us in half against v19's 44.2 (a plain read of x at its grid 28.9), 55.6 in float against 62.7
// (52.7); the half forward 0.0895 ms against v20's 0.0901 and cuDNN's fused 0.0893, the float one
// 0.1620 against v19's 0.1638 and cuDNN's 0.1610.
#pragma once

#include "kernels/fwd_v14_shifted_sums.cuh"  // DSum
#include "kernels/fwd_v20_async_pass.cuh"

namespace ch05 {

inline constexpr int kV28Blocks = 2;  // blocks of kBlock threads an SM: up to 128 registers a thread
inline constexpr int kV28Unroll = 8;  // loads of 16 bytes in flight a thread
inline constexpr int kV28Flush = 8;   // groups of loads whose float sums go to double together

// Whether v28's statistics take this shape: NHWC with a row of packs no wider than a block.
inline bool v28_takes(const Shape4& s, int V) { return s.layout == Layout::nhwc && nhwc_plan(s, V).P <= kBlock; }

// One pack into the thread's float sums: each value's deviation from K, and its square. Half
// packs are taken a pair at a time, so that no more than two of a pack's values are live as floats.
template <int V, class T>
__device__ __forceinline__ void v28_add(const uint4& raw, const float (&K)[V], float (&s1)[V], float (&s2)[V]) {
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    // the pack's i-th 32-bit word, chosen at compile time (no array of the words: its address
    // would put it in local memory)
    const unsigned w = i == 0 ? raw.x : i == 1 ? raw.y : i == 2 ? raw.z : raw.w;
    float v[V / 4];
    if constexpr (std::is_same_v<T, __half>) {
      v[0] = __half2float(__ushort_as_half(static_cast<unsigned short>(w & 0xffffu)));
      v[1] = __half2float(__ushort_as_half(static_cast<unsigned short>(w >> 16)));
    } else {
      v[0] = __uint_as_float(w);
    }
#pragma unroll
    for (int k = 0; k < V / 4; ++k) {
      const int j = i * (V / 4) + k;
      const float d = v[k] - K[j];
      s1[j] += d;
      s2[j] = fmaf(d, d, s2[j]);
    }
  }
}

// The first element of channel c at or past element `from` (NHWC: every C-th from there).
__device__ __forceinline__ std::int64_t first_of_channel(std::int64_t from, int c, int C) {
  return from + ((c - from % C) % C + C) % C;
}

// The merge after a grid barrier (v28, bwd v31): block b takes channels b, b + G, ...; a channel's
// partials of the G blocks are added in one order (the threads' strides, shuffles, then the warps in
// order, through w1 and w2: kThreads / 32 doubles of shared memory each), and thread 0 hands the
// totals to finish(c, t1, t2). The same bits in every launch.
template <int kThreads, class Finish>
__device__ __forceinline__ void merge_block_partials(const DSum* partials, int C, double* w1, double* w2,
                                                     const Finish& finish) {
  const int t = static_cast<int>(threadIdx.x), lane = t % 32, warp = t / 32, G = static_cast<int>(gridDim.x);
  for (int c = static_cast<int>(blockIdx.x); c < C; c += G) {
    double m1 = 0.0, m2 = 0.0;
    for (int k = t; k < G; k += kThreads) {
      const DSum d = partials[static_cast<std::int64_t>(k) * C + c];
      m1 += d.s1;
      m2 += d.s2;
    }
#pragma unroll
    for (int o = 16; o > 0; o /= 2) {
      m1 += __shfl_xor_sync(kFullWarp, m1, o);
      m2 += __shfl_xor_sync(kFullWarp, m2, o);
    }
    if (lane == 0) w1[warp] = m1, w2[warp] = m2;
    __syncthreads();
    if (t == 0) {
      double t1 = 0.0, t2 = 0.0;
      for (int k = 0; k < kThreads / 32; ++k) t1 += w1[k], t2 += w2[k];
      finish(c, t1, t2);
    }
    __syncthreads();  // w1 and w2 are read before the next channel's totals
  }
}

template <int V, class T, int kBlocks = kV28Blocks, int kU = kV28Unroll>
__global__ void __launch_bounds__(kBlock, kBlocks)
    fwd_v28_stats_kernel(FwdArgs<T> a, ChannelParams p, DSum* partials, V3Plan plan) {
  __shared__ double sh1[kBlock * V], sh2[kBlock * V];
  const NhwcPlan& q = plan.nhwc;
  const int C = static_cast<int>(a.s.C);
  const int t = static_cast<int>(threadIdx.x), tx = t % q.bx, ty = t / q.bx;
  const std::int64_t full_rows = q.q_full / q.P;
  // The last row of packs may be partial: its first q_full - full_rows P columns.
  const std::int64_t rows = ty < q.by ? full_rows + (tx < q.q_full - full_rows * q.P ? 1 : 0) : 0;
  const std::int64_t r0 = static_cast<std::int64_t>(blockIdx.x) * q.by + ty;
  const std::int64_t dr = static_cast<std::int64_t>(gridDim.x) * q.by;  // rows a round
  const std::int64_t de = dr * q.L;                                    // elements a round
  // Row r's pack in column tx starts at element (r P + tx) V: the walk counts in elements only.
  const std::int64_t e0 = (r0 * q.P + tx) * V;
  // The thread's double sums live in its own slots of sh1 and sh2; the float ones in registers.
  float K[V], s1[V], s2[V];
#pragma unroll
  for (int j = 0; j < V; ++j) K[j] = s1[j] = s2[j] = 0.0f, sh1[t * V + j] = sh2[t * V + j] = 0.0;
  // The thread's packs: rows r0, r0 + dr, ... below rows. Their count fits 32 bits (each is a
  // pack of the tensor, and a round takes at least one a thread); the pointer carries the offset.
  const int n_packs = r0 < rows ? static_cast<int>((rows - r0 + dr - 1) / dr) : 0;
  const T* px = a.x + (n_packs > 0 ? e0 : 0);
  if (n_packs > 0) unpack<V, T>(load_raw<V, T>(px), K);
  // Whole groups of kU loads, all issued before the first is used and no bound checked inside;
  // the float sums go to double every kV28Flush groups.
#pragma unroll 1
  for (int g = 0; g < n_packs / kU; ++g) {
    uint4 raw[kU];
#pragma unroll
    for (int u = 0; u < kU; ++u) raw[u] = load_raw<V, T>(px + u * de);
    px += kU * de;
#pragma unroll
    for (int u = 0; u < kU; ++u) v28_add<V, T>(raw[u], K, s1, s2);
    if (g % kV28Flush == kV28Flush - 1) {
#pragma unroll
      for (int j = 0; j < V; ++j) sh1[t * V + j] += s1[j], sh2[t * V + j] += s2[j], s1[j] = s2[j] = 0.0f;
    }
  }
  // The last n_packs % kU packs, one at a time (fewer than kU * kV28Flush values in the float sums).
#pragma unroll 1
  for (int i = 0; i < n_packs % kU; ++i, px += de) v28_add<V, T>(load_raw<V, T>(px), K, s1, s2);
  const double n = n_packs;  // packs added
  // To K* = x[c]: the same shift in every block.
  const int c0 = (tx * V) % C;
#pragma unroll
  for (int j = 0; j < V; ++j) {
    const double a1 = sh1[t * V + j] + s1[j], a2 = sh2[t * V + j] + s2[j];
    const int c = c0 + j < C ? c0 + j : (c0 + j) % C;
    const double d = static_cast<double>(K[j]) - static_cast<double>(to_float(a.x[c]));
    sh1[t * V + j] = a1 + n * d;
    sh2[t * V + j] = a2 + 2.0 * d * a1 + n * d * d;
  }
  __syncthreads();
  // The block's sums: channel c is held by the (column, element) pairs c, c + C, ... of a row of L
  // elements, in each of the block's rows.
  const int pairs = static_cast<int>(q.L / C);
  for (int c = t; c < C; c += kBlock) {
    double b1 = 0.0, b2 = 0.0;
    for (int m = 0; m < pairs; ++m) {
      const int i = c + m * C, col = i / V, j = i % V;
      for (int row = 0; row < q.by; ++row) {
        b1 += sh1[(row * q.bx + col) * V + j];
        b2 += sh2[(row * q.bx + col) * V + j];
      }
    }
    partials[static_cast<std::int64_t>(blockIdx.x) * C + c] = DSum{b1, b2};
  }
  cg::grid_group grid = cg::this_grid();
  grid.sync();
  pdl_launch_dependents();  // every block is past its reads of x: the pass may start
  // The merge: block b takes channels b, b + G, ...
  __shared__ double w1[kWarps], w2[kWarps];
  const std::int64_t tail_first = q.q_full * V, numel = a.s.numel();
  merge_block_partials<kBlock>(partials, C, w1, w2, [&](int c, double t1, double t2) {
    const double ks = to_float(a.x[c]);
    // the elements past the last whole pack (fewer than V): channel c's among them
    for (std::int64_t i = first_of_channel(tail_first, c, C); i < numel; i += C) {
      const double d = static_cast<double>(to_float(a.x[i])) - ks;
      t1 += d;
      t2 += d * d;
    }
    const double M = static_cast<double>(a.s.per_channel());
    const double mean = ks + t1 / M, m2w = fmax(t2 - t1 * t1 / M, 0.0);
    finish_forward_channel(a, p, c, Welford{static_cast<float>(M), static_cast<float>(mean), static_cast<float>(m2w)});
  });
}

template <class T>
std::size_t fwd_v28_scratch_bytes(const Shape4& s) {
  return std::max(Scratch(s.C, v3_partial_bytes(s, kPack<T>, sizeof(DSum)), 0).total, fwd_v4_scratch_bytes<T>(s));
}

template <class T, bool kAdd>
void fwd_v28_loads_ahead(cudaStream_t st, const FwdArgs<T>& a, void* ws) {
  check_shape(a.s, "fwd_v28_loads_ahead");
  constexpr int V = kPack<T>;
  constexpr bool half = std::is_same_v<T, __half>;
  if (!v28_takes(a.s, V) || !stats_packs_ok<T>(a.s, a.x) || !fwd_apply_packs_ok<T, kAdd>(a)) {
    if (half && a.s.layout == Layout::nhwc) fwd_v20_async_pass<T, kAdd>(st, a, ws);
    else fwd_v19_warp_columns<T, kAdd>(st, a, ws);
    return;
  }
  if constexpr (half)
    v17_launch<T, kV28Blocks, V, V, 1, DSum>(st, a, ws, &fwd_v28_stats_kernel<V, T>,
                                             &fwd_v20_pass_kernel<V, T, kAdd, kV20FwdStages<kAdd>>, "fwd_v28_loads_ahead",
                                             std::int64_t{device_limits().sm_count} * kV20Blocks);
  else
    v17_launch<T, kV28Blocks, V, V, kV17Chunks, DSum>(st, a, ws, &fwd_v28_stats_kernel<V, T>,
                                                      &fwd_v17_pass_kernel<V, T, kAdd, kV17Chunks, true>,
                                                      "fwd_v28_loads_ahead");
}

// The kernels it launches, the fallbacks' included. The statistics kernel built as v27 was (3 blocks
// an SM, 4 loads) is instantiated here too, never launched: the SASS test reads its loop.
template <class T, bool kAdd>
std::vector<const void*> fwd_v28_kernels() {
  constexpr int V = kPack<T>;
  [[maybe_unused]] static const void* const v27_budget = TUT_KERNEL((fwd_v28_stats_kernel<V, T, 3, 4>));
  std::vector<const void*> k = fwd_v19_kernels<T, kAdd>();
  if constexpr (std::is_same_v<T, __half>) k.push_back(fwd_v20_kernels<T, kAdd>().back());  // v20's pass
  k.push_back(TUT_KERNEL((fwd_v28_stats_kernel<V, T>)));
  return k;
}

}  // namespace ch05
