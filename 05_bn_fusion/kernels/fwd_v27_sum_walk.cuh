// fwd v27_sum_walk: v20 with a leaner statistics kernel: the walk keeps shifted sums in registers
// (no Welford update per value, no Chan tree in the block), the block adds its threads' sums per
// channel in double, and after the one grid barrier each channel's partials are added by one block.
//
// Why. On the H200 at 64x64x112x112 NHWC, v19's statistics kernel (which v20 runs) takes 43.4 us in
// half and 61.9 in float under Nsight Compute, where a plain read of x with the same grid (3 blocks
// of 256 threads an SM, 4 loads of 16 bytes in flight a thread) takes 27.6 and 51.8 us
// (results/NVIDIA_H200.ncu_read_vs_stats.csv, tools/l2_sweeps; README "A fourth trial that
// lost"). Neither the warps resident nor the loads in flight hold it, so its own work does; the
// candidates are the walk's Welford updates (a reciprocal a pack, four dependent operations a value),
// v4's unit indexing, the column tree and Chan's merge. The second trial after v17 ("the statistics as
// shifted sums") changed the updates inside that walk and issued as many instructions as before.
//
// How. The grid walks rows of packs as v17's does (NhwcPlan: a block is bx = P columns by by rows
// of threads, P the packs of lcm(C, V) elements, so a thread's channels never change), but the loop
// only adds a constant to its element index, and a thread issues kV27Unroll loads before it adds.
//   The sums. Thread t keeps, for each of its V channels, s1 = sum of (x - K) and s2 = sum of
//   (x - K)^2 in float, K its own first value of the channel (bounded cancellation, as v14), added
//   every kV27Flush rounds into doubles in its own slots of shared memory. At the end they are
//   moved to K* = x[c] (x's first row, the same in every block): with d = K - K*, s1' = s1 + n d
//   and s2' = s2 + 2 d s1 + n d^2.
//   The block's sums. The threads' doubles go to shared memory; thread c adds channel c's, the
//   columns that hold c (lcm(C, V) / C of them) over the block's rows, in that order, and writes the
//   block's DSum to partials[block][c].
//   The merge. One grid barrier; then the pass may launch (griddepcontrol.launch_dependents); block
//   b takes channels b, b + G, ...: its threads add the G partials of the channel in a fixed order,
//   a butterfly and the warps' totals in order give the channel's (s1, s2), thread 0 adds the
//   elements past the last whole pack, and mean = K* + s1 / M, M2 = s2 - s1^2 / M in double. Every
//   sum runs in a fixed order: the statistics have the same bits launch after launch.
//   The pass is v20's, unchanged.
// Precision: as v14, K* is one of the channel's values, so the final subtraction in double loses at
// most log2(M + 1) of its 53 bits; a float sum holds at most kV27Unroll * kV27Flush values of
// x - K before it goes to double.
// Where it does not apply (NCHW; a row of packs wider than a block, C / gcd(C, V) > 256; x, y or r
// off 16 bytes), v27 runs v20.
// Bytes: as v20 (x twice, the start of the second read from the L2).
// Prediction (before the kernel ran): the statistics kernel near the plain read's time, about 31 us
// in half and 53 in float at 64x64x112x112 NHWC under Nsight Compute; the half forward there under
// cuDNN's fused one (v20 1.008 of its time in the suite's run), the float one level with it.
#pragma once

#include "kernels/fwd_v14_shifted_sums.cuh"  // DSum
#include "kernels/fwd_v20_async_pass.cuh"

namespace ch05 {

inline constexpr int kV27Blocks = 3;   // blocks of kBlock threads an SM, as v17's statistics
inline constexpr int kV27Unroll = 4;   // loads of 16 bytes in flight a thread
inline constexpr int kV27Flush = 16;   // rounds of float sums before they go to double

// Whether v27's statistics take this shape: NHWC with a row of packs no wider than a block.
inline bool v27_takes(const Shape4& s, int V) { return s.layout == Layout::nhwc && nhwc_plan(s, V).P <= kBlock; }

// One pack into the thread's float sums: each value's deviation from K, and its square. Half
// packs are taken a pair at a time, so that no more than two of a pack's values are live as floats.
template <int V, class T>
__device__ __forceinline__ void v27_add(const uint4& raw, const float (&K)[V], float (&s1)[V], float (&s2)[V]) {
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

template <int V, class T>
__global__ void __launch_bounds__(kBlock, kV27Blocks)
    fwd_v27_stats_kernel(FwdArgs<T> a, ChannelParams p, DSum* partials, V3Plan plan) {
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
  const std::int64_t e0 = (r0 * q.P + tx) * V, e_end = (rows * q.P + tx) * V;
  // The thread's double sums live in its own slots of sh1 and sh2 (registers are short: 3 blocks
  // an SM leave 85 a thread); the float ones in registers.
  float K[V], s1[V], s2[V];
#pragma unroll
  for (int j = 0; j < V; ++j) K[j] = s1[j] = s2[j] = 0.0f, sh1[t * V + j] = sh2[t * V + j] = 0.0;
  if (e0 < e_end) unpack<V, T>(load_raw<V, T>(a.x + e0), K);
  int round = 0;
#pragma unroll 1
  for (std::int64_t e = e0; e < e_end; e += kV27Unroll * de) {
    uint4 raw[kV27Unroll];
#pragma unroll
    for (int u = 0; u < kV27Unroll; ++u)
      raw[u] = e + u * de < e_end ? load_raw<V, T>(a.x + e + u * de) : make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int u = 0; u < kV27Unroll; ++u) {
      if (e + u * de >= e_end) break;
      v27_add<V, T>(raw[u], K, s1, s2);
    }
    if (++round == kV27Flush) {
      round = 0;
#pragma unroll
      for (int j = 0; j < V; ++j) sh1[t * V + j] += s1[j], sh2[t * V + j] += s2[j], s1[j] = s2[j] = 0.0f;
    }
  }
  const double n = r0 < rows ? static_cast<double>((rows - r0 + dr - 1) / dr) : 0.0;  // packs added
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
  const int G = static_cast<int>(gridDim.x), lane = t % 32, warp = t / 32;
  const std::int64_t tail_first = q.q_full * V, numel = a.s.numel();
  for (int c = static_cast<int>(blockIdx.x); c < C; c += G) {
    double m1 = 0.0, m2 = 0.0;
    for (int k = t; k < G; k += kBlock) {
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
      for (int k = 0; k < kWarps; ++k) t1 += w1[k], t2 += w2[k];
      const double ks = to_float(a.x[c]);
      // the elements past the last whole pack (fewer than V): channel c's among them
      for (std::int64_t i = tail_first + ((c - tail_first % C) % C + C) % C; i < numel; i += C) {
        const double d = static_cast<double>(to_float(a.x[i])) - ks;
        t1 += d;
        t2 += d * d;
      }
      const double M = static_cast<double>(a.s.per_channel());
      const double mean = ks + t1 / M, m2w = fmax(t2 - t1 * t1 / M, 0.0);
      finish_forward_channel(a, p, c, Welford{static_cast<float>(M), static_cast<float>(mean), static_cast<float>(m2w)});
    }
    __syncthreads();  // w1 and w2 are read before the next channel's totals
  }
}

template <class T>
std::size_t fwd_v27_scratch_bytes(const Shape4& s) {
  return std::max(Scratch(s.C, v3_partial_bytes(s, kPack<T>, sizeof(DSum)), 0).total, fwd_v4_scratch_bytes<T>(s));
}

template <class T, bool kAdd>
void fwd_v27_sum_walk(cudaStream_t st, const FwdArgs<T>& a, void* ws) {
  check_shape(a.s, "fwd_v27_sum_walk");
  constexpr int V = kPack<T>;
  if (!v27_takes(a.s, V) || !stats_packs_ok<T>(a.s, a.x) || !fwd_apply_packs_ok<T, kAdd>(a)) {
    fwd_v20_async_pass<T, kAdd>(st, a, ws);
    return;
  }
  v17_launch<T, kV27Blocks, V, V, 1, DSum>(st, a, ws, &fwd_v27_stats_kernel<V, T>,
                                           &fwd_v20_pass_kernel<V, T, kAdd, kV20FwdStages<kAdd>>, "fwd_v27_sum_walk",
                                           std::int64_t{device_limits().sm_count} * kV20Blocks);
}

template <class T, bool kAdd>
std::vector<const void*> fwd_v27_kernels() {
  constexpr int V = kPack<T>;
  return {TUT_KERNEL((fwd_v27_stats_kernel<V, T>)), TUT_KERNEL((fwd_v20_pass_kernel<V, T, kAdd, kV20FwdStages<kAdd>>))};
}

}  // namespace ch05
