// fwd v23_column_blocks: NHWC with few rows and many channels (ResNet's last stage: 64x1024x7x7,
// 3,136 rows of 1,024 channels). A block owns 8 adjacent channels and every row of them: it loads
// its column once into registers, computes the statistics in the block, and runs the pass from
// the registers. One launch; no block waits for another, and nothing goes through global memory
// but x, y, the mask and the per-channel results.
//
// What changed since v16 (the same idea in NCHW) and v22 (the trial that lost). In NHWC a channel's
// values are C apart; 8 channels of a row are one 16-byte load in half (two in float), and their 8
// mask bits one byte of the mask (bitmask.cuh: byte b holds elements 8b .. 8b + 7), so a block
// writes whole bytes that no other block touches: no ballots, shuffles or atomics for the mask.
// The last stage's cases are where cuDNN's fused forward keeps its largest lead (64x1024x7x7 half
// NHWC: v11 1.203x its time in results/NVIDIA_H200.cudnn_suite.txt); v11 runs two kernels there,
// its statistics kernel merging 396 blocks' partials for every channel.
//
// The statistics: the values are in registers, so the variance is taken about the mean itself (the
// two-pass formula) at the cost of a second block reduction, and nothing cancels:
//   1. each thread sums its rows' deviations from K* (the channel's value in row 0), in float;
//   2. a warp's 32 partials of 8 channels are reduced and scattered in 5 shuffle levels of 4, 2,
//      1, 1 and 1 values (lanes 4k .. 4k + 3 end with channel k's sum), where a butterfly per
//      channel would take 40;
//   3. one thread per channel adds the warps' sums in order, in double: mean = K* + s / M;
//   4. the same for sum of (x - mean)^2, which is M2.
// Both are in a fixed order, so the results are the same from run to run.
// The pass: v16's arithmetic (s = (x - mean) gamma invstd + beta [+ r], rounded to T; y = relu(s);
// the bit is kept(s)), y stored in 16-byte packs and the mask a byte per row.
//
// Where it applies: NHWC, C a multiple of 8, M = N H W at most kColRows (4,096: 512 threads x 8
// rows), x, y (and r) 16-byte aligned; half in both forms, float without the Add (whose x and r, 8
// floats a row each, would take 128 registers a thread). Elsewhere v23 runs v20. The block: the
// fewest warps that hold M rows at 8 a thread (13 warps at M = 3,136), so a thread has up to 8
// loads of x (and 8 of r) in flight before its first add.
//
// Prediction (before any run): at 64x1024x7x7 NHWC, 128 blocks of 416 threads, one per SM: one
// DRAM round trip for x, two block reductions, and the stores; under cuDNN's fused forward by
// events (0.0158 ms in half in the suite's run) and under v11 (0.0190 in half, 0.0178 in float).
#pragma once

#include "kernels/fwd_v20_async_pass.cuh"

#include <type_traits>
#include <vector>

namespace ch05 {

inline constexpr int kColChannels = 8;   // a block's channels: one byte of the mask per row
inline constexpr int kColItems = 8;      // rows a thread holds, at most
inline constexpr int kColThreads = 512;  // a block's threads, at most
inline constexpr int kColRows = kColItems * kColThreads;

// Whether v23 runs form (T, kAdd) at all: float's Add form would hold 16 floats a row.
template <class T, bool kAdd>
inline constexpr bool kColForm = !(std::is_same_v<T, float> && kAdd);

// A launch of v23: threads a block and rows a thread (at most kColItems); threads = 0 where v23
// does not apply.
struct ColPlan {
  int threads = 0, items = 0;
};

inline ColPlan col_plan(const Shape4& s, bool form, bool aligned) {
  ColPlan p;
  const std::int64_t M = s.per_channel();
  if (!form || !aligned || s.layout != Layout::nhwc || s.C % kColChannels != 0 || M > kColRows) return p;
  const std::int64_t warps = (M + 32 * kColItems - 1) / (32 * kColItems);
  p.threads = static_cast<int>(32 * warps);
  p.items = static_cast<int>((M + p.threads - 1) / p.threads);
  return p;
}

// One row's 8 channels as loaded: one 16-byte word of halves, two of floats.
template <class T>
struct ColRow {
  static constexpr int kWords = kColChannels * static_cast<int>(sizeof(T)) / 16;
  uint4 w[kWords];
};

template <class T>
__device__ __forceinline__ ColRow<T> load_row(const T* p) {
  ColRow<T> r;
#pragma unroll
  for (int k = 0; k < ColRow<T>::kWords; ++k) r.w[k] = reinterpret_cast<const uint4*>(p)[k];
  return r;
}

template <class T>
__device__ __forceinline__ void unpack_row(const ColRow<T>& r, float (&v)[kColChannels]) {
#pragma unroll
  for (int k = 0; k < ColRow<T>::kWords; ++k) {
    const unsigned u[4] = {r.w[k].x, r.w[k].y, r.w[k].z, r.w[k].w};
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      if constexpr (std::is_same_v<T, __half>) {
        const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&u[q]));
        v[8 * k + 2 * q] = f.x;
        v[8 * k + 2 * q + 1] = f.y;
      } else {
        v[4 * k + q] = __uint_as_float(u[q]);
      }
    }
  }
}

// The warp's sums of 8 values, scattered: lane l returns the sum over the warp of v[(l >> 2) & 7].
// At each of the first three levels a lane keeps the half of its values its partner does not, and
// adds the partner's copy of that half; the last two levels add the one value left.
__device__ __forceinline__ float reduce_scatter8(const float (&v)[kColChannels], int lane) {
  const bool b16 = (lane & 16) != 0, b8 = (lane & 8) != 0, b4 = (lane & 4) != 0;
  float h[4], q[2];
#pragma unroll
  for (int k = 0; k < 4; ++k) h[k] = (b16 ? v[k + 4] : v[k]) + __shfl_xor_sync(kFullWarp, b16 ? v[k] : v[k + 4], 16);
#pragma unroll
  for (int k = 0; k < 2; ++k) q[k] = (b8 ? h[k + 2] : h[k]) + __shfl_xor_sync(kFullWarp, b8 ? h[k] : h[k + 2], 8);
  float s = (b4 ? q[1] : q[0]) + __shfl_xor_sync(kFullWarp, b4 ? q[0] : q[1], 4);
  s += __shfl_xor_sync(kFullWarp, s, 2);
  s += __shfl_xor_sync(kFullWarp, s, 1);
  return s;
}

template <class T, bool kAdd>
__global__ void __launch_bounds__(kColThreads) fwd_v23_column_blocks_kernel(FwdArgs<T> a, int items) {
  constexpr int K = kColChannels;
  __shared__ float part[kColThreads / 32][K];
  __shared__ float prm[3][K];
  const int t = static_cast<int>(threadIdx.x), lane = t & 31, warp = t >> 5;
  const int threads = static_cast<int>(blockDim.x), warps = threads >> 5;
  const std::int64_t C = a.s.C, M = a.s.per_channel(), c0 = std::int64_t{blockIdx.x} * K;
  const T* x = a.x + c0;
  // Every row's loads first (a thread past the last row loads row 0 again), then K*'s row and the
  // channel's parameters (thread k < 8 for channel c0 + k).
  ColRow<T> xr[kColItems], rr[kAdd ? kColItems : 1];
#pragma unroll
  for (int m = 0; m < kColItems; ++m) {
    if (m >= items) break;
    const std::int64_t row = t + std::int64_t{m} * threads;
    const std::int64_t at = (row < M ? row : 0) * C;
    xr[m] = load_row(x + at);
    if constexpr (kAdd) rr[m] = load_row(a.r + c0 + at);
  }
  float kstar[K];
  unpack_row(load_row(x), kstar);
  float kt = 0.0f, gamma = 0.0f, beta = 0.0f, rmean = 0.0f, rvar = 0.0f;
  if (t < K) {
    kt = to_float(x[t]);
    gamma = a.gamma[c0 + t];
    beta = a.beta[c0 + t];
    rmean = a.running_mean[c0 + t];
    rvar = a.running_var[c0 + t];
  }
  // 1. The mean: deviations from K*, summed.
  float acc[K];
#pragma unroll
  for (int j = 0; j < K; ++j) acc[j] = 0.0f;
#pragma unroll
  for (int m = 0; m < kColItems; ++m) {
    if (m >= items) break;
    if (t + std::int64_t{m} * threads >= M) continue;
    float v[K];
    unpack_row(xr[m], v);
#pragma unroll
    for (int j = 0; j < K; ++j) acc[j] += v[j] - kstar[j];
  }
  float w = reduce_scatter8(acc, lane);
  if ((lane & 3) == 0) part[warp][lane >> 2] = w;
  __syncthreads();
  if (t < K) {
    double s = 0.0;
    for (int k = 0; k < warps; ++k) s += part[k][t];
    prm[0][t] = static_cast<float>(static_cast<double>(kt) + s / static_cast<double>(M));
  }
  __syncthreads();
  // 2. M2: squared deviations from the mean, summed.
  float mean[K];
#pragma unroll
  for (int j = 0; j < K; ++j) {
    mean[j] = prm[0][j];
    acc[j] = 0.0f;
  }
#pragma unroll
  for (int m = 0; m < kColItems; ++m) {
    if (m >= items) break;
    if (t + std::int64_t{m} * threads >= M) continue;
    float v[K];
    unpack_row(xr[m], v);
#pragma unroll
    for (int j = 0; j < K; ++j) {
      const float d = v[j] - mean[j];
      acc[j] = fmaf(d, d, acc[j]);
    }
  }
  w = reduce_scatter8(acc, lane);
  if ((lane & 3) == 0) part[warp][lane >> 2] = w;  // the first sums were read before the last barrier
  __syncthreads();
  if (t < K) {
    double s = 0.0;
    for (int k = 0; k < warps; ++k) s += part[k][t];
    const float fM = static_cast<float>(M);
    const Welford st{fM, prm[0][t], static_cast<float>(s)};
    const float invstd = invstd_of(st, fM, a.eps);
    save_channel_loaded(a, c0 + t, st, invstd, fM, rmean, rvar);
    prm[1][t] = gamma * invstd;
    prm[2][t] = beta;
  }
  __syncthreads();
  // 3. The pass, from the registers: y in 16-byte packs, the mask a byte a row.
  float scale[K], shift[K];
#pragma unroll
  for (int j = 0; j < K; ++j) {
    scale[j] = prm[1][j];
    shift[j] = prm[2][j];
  }
  auto* mask = reinterpret_cast<unsigned char*>(a.mask);
#pragma unroll
  for (int m = 0; m < kColItems; ++m) {
    if (m >= items) break;
    const std::int64_t row = t + std::int64_t{m} * threads;
    if (row >= M) break;
    float v[K], r[K], o[K];
    unpack_row(xr[m], v);
    if constexpr (kAdd) unpack_row(rr[m], r);
    unsigned bits = 0;
#pragma unroll
    for (int j = 0; j < K; ++j) {
      float s = fmaf(v[j] - mean[j], scale[j], shift[j]);
      if constexpr (kAdd) s += r[j];
      s = round_to<T>(s);
      o[j] = relu(s);
      bits |= (kept(s) ? 1u : 0u) << j;
    }
    const std::int64_t e = row * C + c0;
    if constexpr (std::is_same_v<T, __half>) {
      store_pack<8, T>(a.y + e, o);
    } else {
      const float lo[4] = {o[0], o[1], o[2], o[3]}, hi[4] = {o[4], o[5], o[6], o[7]};
      store_pack<4, T>(a.y + e, lo);
      store_pack<4, T>(a.y + e + 4, hi);
    }
    mask[e >> 3] = static_cast<unsigned char>(bits);
  }
  // The last word's bytes past the tensor (n is a multiple of 8, so at most 3): zero, as the
  // format asks.
  if (blockIdx.x == 0 && t < 3) {
    const std::int64_t n = M * C, b = (n >> 3) + t;
    if (b < 4 * tut::bitmask::word_count(n)) mask[b] = 0;
  }
}

template <class T, bool kAdd>
void fwd_v23_column_blocks(cudaStream_t st, const FwdArgs<T>& a, void* ws) {
  check_shape(a.s, "fwd_v23_column_blocks");
  const bool aligned = aligned16(a.x) && aligned16(a.y) && (!kAdd || aligned16(a.r));
  const ColPlan p = col_plan(a.s, kColForm<T, kAdd>, aligned);
  if constexpr (kColForm<T, kAdd>) {
    if (p.threads > 0) {
      const unsigned grid = grid_of(a.s.C / kColChannels, "fwd_v23_column_blocks");
      fwd_v23_column_blocks_kernel<T, kAdd><<<grid, static_cast<unsigned>(p.threads), 0, st>>>(a, p.items);
      TUT_CHECK_LAUNCH("fwd_v23_column_blocks_kernel");
      return;
    }
  }
  fwd_v20_async_pass<T, kAdd>(st, a, ws);
}

template <class T, bool kAdd>
std::vector<const void*> fwd_v23_kernels() {
  auto k = fwd_v20_kernels<T, kAdd>();
  if constexpr (kColForm<T, kAdd>) k.push_back(TUT_KERNEL((fwd_v23_column_blocks_kernel<T, kAdd>)));
  return k;
}

}  // namespace ch05
