// What every version shares: the launch arguments, the per-channel statistics and how two of them
// merge (Welford's running mean and Chan's parallel merge), warp and block reductions, packs of
// 16 bytes, the channel of an element without a 64-bit division, and the element operations.
//
// The element operations (reference.hpp says the same in double precision):
//   s     = (x - mean) * (gamma * invstd) + beta  [+ r],  computed in float, rounded once to T
//   y     = s < 0 ? 0 : s          (T)
//   kept  = !(s <= 0)              the mask bit, chapter 04's rule, taken on the rounded s
//   g     = kept ? dy : +0         the gradient that reaches BN in the backward (dr in the Add form)
//   dx    = A * g + B * (x - mean) + K,  A = gamma * invstd, B = -A * invstd * dgamma / M,
//                                         K = -A * dbeta / M
// (x - mean) is formed before the multiply, not folded into one shift: for x near 1000 with a
// spread of 3, x * scale and mean * scale are both near 580 and their difference loses 10 bits.
#pragma once

#include "bn_shape.hpp"
#include "tut/bitmask.cuh"
#include "tut/check.hpp"
#include "tut/elementwise.cuh"
#include "tut/problem.hpp"

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace ch05 {

using tut::bitmask::Word;
inline constexpr unsigned kFullWarp = 0xffffffffu;

// ---- Arguments -------------------------------------------------------------------------------------

// A training forward. r is null outside the Add form.
template <class T>
struct FwdArgs {
  Shape4 s;
  const T* x = nullptr;
  const T* r = nullptr;
  const float* gamma = nullptr;
  const float* beta = nullptr;
  float* running_mean = nullptr;
  float* running_var = nullptr;
  T* y = nullptr;
  Word* mask = nullptr;
  float* saved_mean = nullptr;
  float* saved_invstd = nullptr;
  float eps = 1e-5f, momentum = 0.1f;
};

// A training backward. dr is null outside the Add form; y is read only by v0.
template <class T>
struct BwdArgs {
  Shape4 s;
  const T* dy = nullptr;
  const T* x = nullptr;
  const float* gamma = nullptr;
  const float* saved_mean = nullptr;
  const float* saved_invstd = nullptr;
  const Word* mask = nullptr;
  const T* y = nullptr;
  T* dx = nullptr;
  float* dgamma = nullptr;
  float* dbeta = nullptr;
  T* dr = nullptr;
};

// An inference forward: BN with the running statistics, then ReLU.
template <class T>
struct InferArgs {
  Shape4 s;
  const T* x = nullptr;
  const float* gamma = nullptr;
  const float* beta = nullptr;
  const float* running_mean = nullptr;
  const float* running_var = nullptr;
  T* y = nullptr;
  float eps = 1e-5f;
};

// ---- Element conversions -----------------------------------------------------------------------------

__host__ __device__ __forceinline__ float to_float(float v) { return v; }
__host__ __device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
template <class T>
__device__ __forceinline__ T from_float(float v) {
  if constexpr (std::is_same_v<T, __half>) return __float2half_rn(v);
  else return v;
}
// s rounded to T and back: the value y is made of, and the one the mask bit is taken on.
template <class T>
__device__ __forceinline__ float round_to(float v) {
  if constexpr (std::is_same_v<T, __half>) return __half2float(__float2half_rn(v));
  else return v;
}
__device__ __forceinline__ float relu(float s) { return s < 0.0f ? 0.0f : s; }
__device__ __forceinline__ bool kept(float s) { return !(s <= 0.0f); }

// ---- Packs: V elements in one 16-byte access ---------------------------------------------------------

template <class T>
constexpr int kPack = 16 / sizeof(T);  // 4 floats, 8 halves

template <int V, class T>
__device__ __forceinline__ void load_pack(const T* __restrict__ p, float (&v)[V]) {
  const tut::ew::Packed<T, V> pk = *reinterpret_cast<const tut::ew::Packed<T, V>*>(p);
#pragma unroll
  for (int k = 0; k < V; ++k) v[k] = to_float(pk.elem[k]);
}
// One 16-byte store, said explicitly: __stwb (st.global.wb.v4, the default write-back policy), or
// with kStream __stcs (st.global.cs: evict first, for data nobody reads soon; version 3 writes y so
// that it does not push x out of the L2). Assigning a 16-byte struct is not enough: the compiler
// split that store into four STG.E where it could not prove the address 16-byte aligned
// (tests/test_sass.cpp checks for STG.E.128).
// Half also in 8-byte packs of 4 (v13's pass: 4 channels' parameters fit in registers).
template <int V, class T, bool kStream = false>
__device__ __forceinline__ void store_pack(T* __restrict__ p, const float (&v)[V]) {
  static_assert(V * sizeof(T) == 16 || (V == 4 && sizeof(T) == 2), "a 16-byte pack, or 4 halves");
  if constexpr (V == 4 && sizeof(T) == 2) {
    uint2 w;
    const __half2 h0 = __floats2half2_rn(v[0], v[1]), h1 = __floats2half2_rn(v[2], v[3]);
    w.x = *reinterpret_cast<const unsigned*>(&h0);
    w.y = *reinterpret_cast<const unsigned*>(&h1);
    if constexpr (kStream) __stcs(reinterpret_cast<uint2*>(p), w);
    else __stwb(reinterpret_cast<uint2*>(p), w);
  } else if constexpr (std::is_same_v<T, float>) {
    const float4 w = make_float4(v[0], v[1], v[2], v[3]);
    if constexpr (kStream) __stcs(reinterpret_cast<float4*>(p), w);
    else __stwb(reinterpret_cast<float4*>(p), w);
  } else {
    uint4 w;
    const __half2 h0 = __floats2half2_rn(v[0], v[1]), h1 = __floats2half2_rn(v[2], v[3]),
                  h2 = __floats2half2_rn(v[4], v[5]), h3 = __floats2half2_rn(v[6], v[7]);
    w.x = *reinterpret_cast<const unsigned*>(&h0);
    w.y = *reinterpret_cast<const unsigned*>(&h1);
    w.z = *reinterpret_cast<const unsigned*>(&h2);
    w.w = *reinterpret_cast<const unsigned*>(&h3);
    if constexpr (kStream) __stcs(reinterpret_cast<uint4*>(p), w);
    else __stwb(reinterpret_cast<uint4*>(p), w);
  }
}
// V consecutive floats of a per-channel array (V-aligned: the scratch arrays are padded and aligned).
template <int V>
__device__ __forceinline__ void load_params(const float* p, float (&v)[V]) {
  const tut::ew::Packed<float, (V > 4 ? 4 : V)>* q = reinterpret_cast<const tut::ew::Packed<float, (V > 4 ? 4 : V)>*>(p);
  constexpr int W = V > 4 ? 4 : V;
#pragma unroll
  for (int h = 0; h < V / W; ++h) {
    const auto pk = q[h];
#pragma unroll
    for (int k = 0; k < W; ++k) v[h * W + k] = pk.elem[k];
  }
}

inline bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

// ---- The channel of an element -------------------------------------------------------------------------

// n / d for 0 <= n < 2^52 without a 64-bit integer division (dozens of instructions): one
// double multiply by 1/d, truncated, is within one of the quotient (both roundings are at most
// 2^-53 relative), and the remainder's sign fixes it.
struct Divisor {
  std::int64_t d = 1;
  double inv = 1.0;
  Divisor() = default;
  explicit Divisor(std::int64_t divisor) : d(divisor), inv(1.0 / static_cast<double>(divisor)) {}
  CH05_HD std::int64_t div(std::int64_t n) const {
    std::int64_t q = static_cast<std::int64_t>(static_cast<double>(n) * inv);
    const std::int64_t r = n - q * d;
    if (r < 0) --q;
    else if (r >= d) ++q;
    return q;
  }
};

// Where an element's channel comes from: (e / inner) % C, walked forward one element at a time.
struct ChannelMap {
  Divisor inner, channels;
  ChannelMap() = default;
  explicit ChannelMap(const Shape4& s) : inner(s.inner()), channels(s.C) {}
  // The channel of element e, and e's position within its run of `inner` elements.
  CH05_HD void locate(std::int64_t e, int& c, std::int64_t& pos) const {
    const std::int64_t run = inner.d == 1 ? e : inner.div(e);
    pos = e - run * inner.d;
    c = static_cast<int>(run - channels.div(run) * channels.d);
  }
  // From element e to e + 1.
  CH05_HD void step(int& c, std::int64_t& pos) const {
    if (++pos == inner.d) {
      pos = 0;
      c = (c + 1 == channels.d) ? 0 : c + 1;
    }
  }
};

// One float sum (v0's two-pass statistics).
// (Plain aggregates without default member initializers, so they may live in __shared__ arrays;
// S{} is zero.)
struct Sum {
  float v;
};
CH05_HD inline Sum merge(Sum a, Sum b) { return {a.v + b.v}; }

// ---- Statistics and their merges ---------------------------------------------------------------------

// Count, mean and M2 = sum of squared deviations from the mean: var = M2 / n.
struct Welford {
  float n, mean, m2;
};

// Chan, Golub and LeVeque's merge of two disjoint sets' statistics. The deviation d of the two
// means enters squared, weighted by n_a * n_b / n: no sum of squares of the raw values is ever
// formed, so nothing cancels when the mean is large against the spread.
CH05_HD inline Welford merge(Welford a, Welford b) {
  const float n = a.n + b.n;
  if (n == 0.0f) return a;
  const float d = b.mean - a.mean;
  const float wb = b.n / n;
  return {n, a.mean + d * wb, a.m2 + b.m2 + d * d * a.n * wb};
}

// The backward's two sums per channel: sum of g, and sum of g * (x - mean).
struct GradSums {
  float g, gx;
};
CH05_HD inline GradSums merge(GradSums a, GradSums b) { return {a.g + b.g, a.gx + b.gx}; }

__device__ __forceinline__ Welford shfl_down(Welford w, int off) {
  return {__shfl_down_sync(kFullWarp, w.n, off), __shfl_down_sync(kFullWarp, w.mean, off),
          __shfl_down_sync(kFullWarp, w.m2, off)};
}
__device__ __forceinline__ Sum shfl_down(Sum s, int off) { return {__shfl_down_sync(kFullWarp, s.v, off)}; }
__device__ __forceinline__ GradSums shfl_down(GradSums s, int off) {
  return {__shfl_down_sync(kFullWarp, s.g, off), __shfl_down_sync(kFullWarp, s.gx, off)};
}

// Lane 0 gets the merge of the warp's 32 values. Every lane must call it.
template <class S>
__device__ __forceinline__ S warp_reduce(S v) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v = merge(v, shfl_down(v, off));
  return v;
}

// Thread 0 gets the merge of the block's values. A 1-D block of kBlock threads; every thread calls
// it; `smem` holds kBlock / 32 values and may be reused after it returns.
template <int kBlock, class S>
__device__ S block_reduce(S v, S* smem) {
  static_assert(kBlock % 32 == 0 && kBlock <= 1024, "whole warps");
  constexpr int kWarps = kBlock / 32;
  const int warp = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);
  v = warp_reduce(v);
  if (lane == 0) smem[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < kWarps ? smem[lane] : S{};
    v = warp_reduce(v);
  }
  __syncthreads();
  return v;
}

// ---- Per-channel results of a forward's statistics ------------------------------------------------

// The scratch arrays the normalize pass reads, one float per channel each, padded to a multiple of
// 8 channels and 256-byte aligned so that 4 or 8 consecutive channels load as 16-byte packs.
struct ChannelParams {
  float* mean = nullptr;
  float* scale = nullptr;  // forward: gamma * invstd; backward: A
  float* shift = nullptr;  // forward: beta;           backward: B
  float* extra = nullptr;  //                           backward: K
};

// The inverse standard deviation of statistics over M values (the biased variance). Every block of
// version 12 computes it for itself: one expression, so that they all get the saved invstd's bits.
__device__ __forceinline__ float invstd_of(const Welford& w, float M, float eps) { return 1.0f / sqrtf(w.m2 / M + eps); }

// Channel c's saved mean and inverse std, and its running statistics (momentum, unbiased
// variance), from its statistics over M values.
template <class T>
__device__ __forceinline__ void save_channel(const FwdArgs<T>& a, int c, Welford w, float invstd, float M) {
  a.saved_mean[c] = w.mean;
  a.saved_invstd[c] = invstd;
  a.running_mean[c] = (1.0f - a.momentum) * a.running_mean[c] + a.momentum * w.mean;
  a.running_var[c] = (1.0f - a.momentum) * a.running_var[c] + a.momentum * (w.m2 / (M - 1.0f));
}

// Channel statistics over M values from sums of deviations from one of its values, K*: s1 = sum of
// (x - K*), s2 = sum of (x - K*)^2 (v14's shifted sums): mean = K* + s1 / M, M2 = s2 - s1^2 / M,
// the final subtraction in double.
__device__ __forceinline__ Welford shifted_welford(std::int64_t M, float kstar, double s1, double s2) {
  const double d = s1 / static_cast<double>(M);
  return Welford{static_cast<float>(M), static_cast<float>(static_cast<double>(kstar) + d),
                 static_cast<float>(fmax(0.0, fma(-s1, d, s2)))};
}

// save_channel's stores, with the running statistics as the kernel loaded them at its start (rmean,
// rvar). (Given to save_channel as arguments, their loads moved before its stores, and every
// earlier forward's SASS changed.)
template <class T>
__device__ __forceinline__ void save_channel_loaded(const FwdArgs<T>& a, std::int64_t c, Welford w, float invstd, float M,
                                                    float rmean, float rvar) {
  a.saved_mean[c] = w.mean;
  a.saved_invstd[c] = invstd;
  a.running_mean[c] = (1.0f - a.momentum) * rmean + a.momentum * w.mean;
  a.running_var[c] = (1.0f - a.momentum) * rvar + a.momentum * (w.m2 / (M - 1.0f));
}

// From channel c's statistics over M values: the saved mean and inverse std, the running
// statistics, and the normalize pass's parameters.
template <class T>
__device__ inline void finish_forward_channel(const FwdArgs<T>& a, const ChannelParams& p, int c, Welford w) {
  const float M = static_cast<float>(a.s.per_channel());
  const float invstd = invstd_of(w, M, a.eps);
  save_channel(a, c, w, invstd, M);
  p.mean[c] = w.mean;
  p.scale[c] = a.gamma[c] * invstd;
  p.shift[c] = a.beta[c];
}

// (finish_backward_channel below spells the same two expressions out: written through this helper,
// versions 1 to 6's backward kernels came out rescheduled, so they keep their own lines.)
// dx's coefficients of a channel from A = gamma * invstd and its dgamma and dbeta over M values:
// dx = A g + B (x - mean) + K.
struct DxCoefficients {
  float A, B, K;
};
__device__ __forceinline__ DxCoefficients dx_coefficients(float A, float invstd, float dgamma, float dbeta, float M) {
  return {A, -A * invstd * (dgamma / M), -A * (dbeta / M)};
}

// From channel c's two sums: dgamma, dbeta and dx's coefficients.
template <class T>
__device__ inline void finish_backward_channel(const BwdArgs<T>& a, const ChannelParams& p, int c, GradSums s) {
  const float M = static_cast<float>(a.s.per_channel());
  const float invstd = a.saved_invstd[c];
  const float dgamma = s.gx * invstd, dbeta = s.g;
  a.dgamma[c] = dgamma;
  a.dbeta[c] = dbeta;
  const float A = a.gamma[c] * invstd;
  p.mean[c] = a.saved_mean[c];
  p.scale[c] = A;
  p.shift[c] = -A * invstd * (dgamma / M);
  p.extra[c] = -A * (dbeta / M);
}

// ---- Launch helpers ------------------------------------------------------------------------------------

inline unsigned grid_of(std::int64_t blocks, const char* who) {
  if (blocks < 1 || blocks > 0x7fffffff) throw std::invalid_argument(std::string(who) + ": a grid of " +
                                                                     std::to_string(blocks) + " blocks");
  return static_cast<unsigned>(blocks);
}

struct DeviceLimits {
  int sm_count = 0, max_threads_per_sm = 0, l2_bytes = 0;
};
// The current device's, read once per device.
inline DeviceLimits device_limits() {
  static DeviceLimits cache[64];
  int dev = 0;
  TUT_CUDA(cudaGetDevice(&dev));
  DeviceLimits& d = cache[dev & 63];
  if (d.sm_count == 0) {
    DeviceLimits got;
    TUT_CUDA(cudaDeviceGetAttribute(&got.sm_count, cudaDevAttrMultiProcessorCount, dev));
    TUT_CUDA(cudaDeviceGetAttribute(&got.max_threads_per_sm, cudaDevAttrMaxThreadsPerMultiProcessor, dev));
    TUT_CUDA(cudaDeviceGetAttribute(&got.l2_bytes, cudaDevAttrL2CacheSize, dev));
    d = got;
  }
  return d;
}

inline void check_shape(const Shape4& s, const char* who) {
  if (s.N < 1 || s.C < 1 || s.HW < 1)
    throw std::invalid_argument(std::string(who) + ": every dimension must be at least 1");
  if (s.C > (std::int64_t{1} << 30)) throw std::invalid_argument(std::string(who) + ": more than 2^30 channels");
  if (s.numel() >= (std::int64_t{1} << 50)) throw std::invalid_argument(std::string(who) + ": more than 2^50 elements");
}

}  // namespace ch05
