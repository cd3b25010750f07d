// The pack kernel the sweep had before kernels/sweep.cuh took its present shape: one 16-byte pack
// per thread, one tile per block, four chains. Kept for `sweep_shapes` (sweep_shapes.cu), which
// times it beside the present shapes; the benchmark uses kernels/sweep.cuh only.
#pragma once

#include "tut/check.hpp"

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace ch07_previous {

inline constexpr int kBlock = 256;
inline constexpr int kMinFlops = 1, kMaxFlops = 2048;  // FLOPs per element: intensity 1/8 ... 256
inline constexpr float kA = 0.5f, kB = 0.25f;           // v = v * a + b stays in [-1, 1] for inputs there

// The FMA chain, in the loop form kUnroll names.
template <int kFmas, int kUnroll, class T, class Fma>
__device__ __forceinline__ T chain(T v, Fma fma) {
  if constexpr (kUnroll == 1) {
#pragma unroll 1
    for (int k = 0; k < kFmas; ++k) v = fma(v);
  } else if constexpr (kUnroll == 4) {
#pragma unroll 4
    for (int k = 0; k < kFmas; ++k) v = fma(v);
  } else {
#pragma unroll
    for (int k = 0; k < kFmas; ++k) v = fma(v);
  }
  return v;
}

// The operation F FLOPs stand for, on one value.
template <int kFlops>
struct OpF32 {
  float a, b;
  __device__ __forceinline__ float first(float v) const { return __fadd_rn(v, b); }  // F = 1
  __device__ __forceinline__ float fma(float v) const { return __fmaf_rn(v, a, b); }
};
template <int kFlops>
struct OpF16 {
  __half2 a, b;
  __device__ __forceinline__ __half2 first(__half2 v) const {  // F = 1: the low half only; F = 2: both
    if constexpr (kFlops == 1) return __halves2half2(__hadd(__low2half(v), __low2half(b)), __high2half(v));
    else return __hadd2(v, b);
  }
  __device__ __forceinline__ __half2 fma(__half2 v) const { return __hfma2(v, a, b); }
};

// kPer values in registers, each through its own chain of FMAs, the chains interleaved: iteration
// k applies FMA k to every value, so kPer independent FMAs are in flight, in the unroll form kUnroll.
template <int kFmas, int kUnroll, int kPer, class T, class Op>
__device__ __forceinline__ void chains(T (&v)[kPer], const Op& op) {
  if constexpr (kUnroll == 1) {
#pragma unroll 1
    for (int k = 0; k < kFmas; ++k)
#pragma unroll
      for (int j = 0; j < kPer; ++j) v[j] = op.fma(v[j]);
  } else if constexpr (kUnroll == 4) {
#pragma unroll 4
    for (int k = 0; k < kFmas; ++k)
#pragma unroll
      for (int j = 0; j < kPer; ++j) v[j] = op.fma(v[j]);
  } else {
#pragma unroll
    for (int k = 0; k < kFmas; ++k)
#pragma unroll
      for (int j = 0; j < kPer; ++j) v[j] = op.fma(v[j]);
  }
}

// F FLOPs on kPer values: one FADD (F = 1), else F / (FLOPs per FMA) FMAs each.
template <int kFlops, int kUnroll, int kPer, class T, class Op>
__device__ __forceinline__ void apply(T (&v)[kPer], const Op& op) {
  constexpr int kFlopsPerFma = std::is_same_v<T, float> ? 2 : 4;
  if constexpr (kFlops < kFlopsPerFma) {
#pragma unroll
    for (int j = 0; j < kPer; ++j) v[j] = op.first(v[j]);
  } else {
    chains<kFlops / kFlopsPerFma, kUnroll>(v, op);
  }
}

// The main kernel: one 16-byte pack per thread (4 floats, or 4 pairs of halves), one tile of
// kBlock packs per block, as chapter 01's v4_tiles: 16 bytes in flight per thread at the memory end,
// four independent chains at the compute end. x and y must be 16-byte aligned; `packs` whole packs.
template <int kFlops, int kUnroll, class T, class Op>
__global__ void __launch_bounds__(kBlock) sweep_pack_kernel(std::int64_t packs, const T* __restrict__ x,
                                                            T* __restrict__ y, Op op) {
  struct alignas(16) Pack {
    T v[16 / sizeof(T)];
  };
  constexpr int kPer = 16 / sizeof(T);
  const std::int64_t p = blockIdx.x * static_cast<std::int64_t>(kBlock) + threadIdx.x;
  if (p >= packs) return;
  Pack in = reinterpret_cast<const Pack*>(x)[p];
  apply<kFlops, kUnroll, kPer>(in.v, op);
  reinterpret_cast<Pack*>(y)[p] = in;
}

// The rest: one element per thread, for the last n % 4 elements, or all of them when x or y is not
// 16-byte aligned.
template <int kFlops, int kUnroll, class T, class Op>
__global__ void __launch_bounds__(kBlock) sweep_scalar_kernel(std::int64_t n, const T* __restrict__ x,
                                                              T* __restrict__ y, Op op) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(kBlock) + threadIdx.x;
  if (i >= n) return;
  T v[1] = {x[i]};
  apply<kFlops, kUnroll, 1>(v, op);
  y[i] = v[0];
}

// The launchers: F is a run-time value here and a template constant in the kernel, one
// instantiation per power of two. kUnroll: 1, 4, or 0 (full).
// F must be one of the instantiated powers of two.
constexpr bool valid_flops(std::int64_t f) { return f >= kMinFlops && f <= kMaxFlops && (f & (f - 1)) == 0; }

inline void check_sweep(std::int64_t n, int flops, const char* who) {
  if (n < 0) throw std::invalid_argument(std::string(who) + ": n must be >= 0, got " + std::to_string(n));
  if (!valid_flops(flops))
    throw std::invalid_argument(std::string(who) + ": FLOPs per element must be a power of two from 1 to 2048, got " +
                                std::to_string(flops));
}

namespace detail {
inline unsigned blocks_for(std::int64_t work) { return static_cast<unsigned>((work + kBlock - 1) / kBlock); }

// Runs the kernels of F = kFlops: whole packs if both pointers are 16-byte aligned, then the tail.
template <int kFlops, int kUnroll, class T, class Op>
void run(cudaStream_t s, std::int64_t n, const T* x, T* y, Op op) {
  constexpr std::int64_t kPer = 16 / sizeof(T);
  const bool aligned = reinterpret_cast<std::uintptr_t>(x) % 16 == 0 && reinterpret_cast<std::uintptr_t>(y) % 16 == 0;
  const std::int64_t packs = aligned ? n / kPer : 0, done = packs * kPer;
  if (packs > 0) {
    sweep_pack_kernel<kFlops, kUnroll><<<blocks_for(packs), kBlock, 0, s>>>(packs, x, y, op);
    TUT_CHECK_LAUNCH("sweep_pack_kernel");
  }
  if (n > done) {
    sweep_scalar_kernel<kFlops, kUnroll><<<blocks_for(n - done), kBlock, 0, s>>>(n - done, x + done, y + done, op);
    TUT_CHECK_LAUNCH("sweep_scalar_kernel");
  }
}

// Calls fn(std::integral_constant<int, F>{}) for the F given at run time.
template <class Fn>
auto with_flops(int flops, Fn&& fn) {
  switch (flops) {
    case 1: return fn(std::integral_constant<int, 1>{});
    case 2: return fn(std::integral_constant<int, 2>{});
    case 4: return fn(std::integral_constant<int, 4>{});
    case 8: return fn(std::integral_constant<int, 8>{});
    case 16: return fn(std::integral_constant<int, 16>{});
    case 32: return fn(std::integral_constant<int, 32>{});
    case 64: return fn(std::integral_constant<int, 64>{});
    case 128: return fn(std::integral_constant<int, 128>{});
    case 256: return fn(std::integral_constant<int, 256>{});
    case 512: return fn(std::integral_constant<int, 512>{});
    case 1024: return fn(std::integral_constant<int, 1024>{});
    default: return fn(std::integral_constant<int, 2048>{});
  }
}
}  // namespace detail

// Launchers: n values of float, or n pairs of halves; kUnroll 1, 4 or 0 (full).
template <int kUnroll>
void sweep_f32(cudaStream_t s, std::int64_t n, int flops, const float* x, float* y) {
  check_sweep(n, flops, "sweep_f32");
  if (n == 0) return;
  detail::with_flops(flops, [&](auto f) {
    constexpr int F = decltype(f)::value;
    detail::run<F, kUnroll>(s, n, x, y, OpF32<F>{kA, kB});
  });
}

template <int kUnroll>
void sweep_f16(cudaStream_t s, std::int64_t n, int flops, const __half2* x, __half2* y) {
  check_sweep(n, flops, "sweep_f16");
  if (reinterpret_cast<std::uintptr_t>(x) % 4 != 0 || reinterpret_cast<std::uintptr_t>(y) % 4 != 0)
    throw std::invalid_argument("sweep_f16: x and y must be 4-byte aligned (pairs of halves)");
  if (n == 0) return;
  detail::with_flops(flops, [&](auto f) {
    constexpr int F = decltype(f)::value;
    detail::run<F, kUnroll>(s, n, x, y, OpF16<F>{__floats2half2_rn(kA, kA), __floats2half2_rn(kB, kB)});
  });
}

}  // namespace ch07_previous
