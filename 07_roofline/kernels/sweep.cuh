// The empirical roofline: one kernel whose arithmetic per byte is a template parameter.
//
// Each thread reads one element, applies F floating-point operations to it, and writes it back:
// 8 bytes moved per element in both precisions (a float in and out, or a pair of halves in and
// out), so the arithmetic intensity is F / 8 FLOP per byte, from 1/8 (F = 1) to 256 (F = 2048):
//
//   float   F = 1: y = x + b (FADD)                F >= 2: F / 2 dependent FFMAs, v = v * a + b
//   half2   F = 1: the low half + b (HADD)         F = 2: HADD2           F >= 4: F / 4 HFMA2s
//
// Prediction: below the ridge (peak / bandwidth, about 20 FLOP per byte on an H100) the time is the
// bytes at the copy ceiling whatever F is; above it, F / peak per element, doubling with F. A
// thread's FMAs form one dependent chain, but a full SM has 16 warps on each scheduler, four times
// the 4-cycle FMA latency, so the pipe never waits on the chain.
//
// The dead-code guard is the output itself: every element's result is stored, and a and b are
// kernel arguments, so nothing folds and no FMA can be dropped. The SASS test counts them: F / 2
// FFMAs in the fully unrolled float kernel.
//
// kUnroll is the form of the FMA loop, the performance guide's three `#pragma unroll` forms:
//   1  `#pragma unroll 1`: a loop of one FFMA and its counter, compare and branch, four
//      instructions issued per FMA, so at most a quarter of the FMA peak;
//   4  `#pragma unroll 4`: four FFMAs per iteration and the same three instructions of overhead;
//   0  `#pragma unroll` (the trip count is a constant): FFMAs only.
// SASS shows each (tests/test_sass.cpp); the sweep times them.
#pragma once

#include "tut/check.hpp"

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace ch07 {

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

template <int kFlops, int kUnroll>
__global__ void __launch_bounds__(kBlock) sweep_f32_kernel(std::int64_t n, const float* __restrict__ x,
                                                           float* __restrict__ y, float a, float b) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(kBlock) + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  if constexpr (kFlops == 1) {
    v = __fadd_rn(v, b);
  } else {
    v = chain<kFlops / 2, kUnroll>(v, [=](float u) { return __fmaf_rn(u, a, b); });
  }
  y[i] = v;
}

template <int kFlops, int kUnroll>
__global__ void __launch_bounds__(kBlock) sweep_f16_kernel(std::int64_t n, const __half2* __restrict__ x,
                                                           __half2* __restrict__ y, __half2 a, __half2 b) {
  const std::int64_t i = blockIdx.x * static_cast<std::int64_t>(kBlock) + threadIdx.x;
  if (i >= n) return;
  __half2 v = x[i];
  if constexpr (kFlops == 1) {
    v = __halves2half2(__hadd(__low2half(v), __low2half(b)), __high2half(v));
  } else if constexpr (kFlops == 2) {
    v = __hadd2(v, b);
  } else {
    v = chain<kFlops / 4, kUnroll>(v, [=](__half2 u) { return __hfma2(u, a, b); });
  }
  y[i] = v;
}

// The launchers: F is a run-time value here and a template constant in the kernel, one
// instantiation per power of two. kUnroll: 1, 4, or 0 (full).
inline void check_sweep(std::int64_t n, int flops, const char* who) {
  if (n < 0) throw std::invalid_argument(std::string(who) + ": n must be >= 0, got " + std::to_string(n));
  if (flops < kMinFlops || flops > kMaxFlops || (flops & (flops - 1)) != 0)
    throw std::invalid_argument(std::string(who) + ": FLOPs per element must be a power of two from 1 to 2048, got " +
                                std::to_string(flops));
}

namespace detail {
template <int kFlops, int kUnroll>
struct F32 {
  static void run(unsigned grid, cudaStream_t s, std::int64_t n, const float* x, float* y) {
    sweep_f32_kernel<kFlops, kUnroll><<<grid, kBlock, 0, s>>>(n, x, y, kA, kB);
    TUT_CHECK_LAUNCH("sweep_f32_kernel");
  }
  static const void* kernel() { return reinterpret_cast<const void*>(&sweep_f32_kernel<kFlops, kUnroll>); }
};
template <int kFlops, int kUnroll>
struct F16 {
  static void run(unsigned grid, cudaStream_t s, std::int64_t n, const __half2* x, __half2* y) {
    sweep_f16_kernel<kFlops, kUnroll><<<grid, kBlock, 0, s>>>(n, x, y, __floats2half2_rn(kA, kA),
                                                               __floats2half2_rn(kB, kB));
    TUT_CHECK_LAUNCH("sweep_f16_kernel");
  }
  static const void* kernel() { return reinterpret_cast<const void*>(&sweep_f16_kernel<kFlops, kUnroll>); }
};

// Calls Kind<F, kUnroll>::fn for the F given at run time.
template <template <int, int> class Kind, int kUnroll, class Fn>
auto with_flops(int flops, Fn&& fn) {
  switch (flops) {
    case 1: return fn(Kind<1, kUnroll>{});
    case 2: return fn(Kind<2, kUnroll>{});
    case 4: return fn(Kind<4, kUnroll>{});
    case 8: return fn(Kind<8, kUnroll>{});
    case 16: return fn(Kind<16, kUnroll>{});
    case 32: return fn(Kind<32, kUnroll>{});
    case 64: return fn(Kind<64, kUnroll>{});
    case 128: return fn(Kind<128, kUnroll>{});
    case 256: return fn(Kind<256, kUnroll>{});
    case 512: return fn(Kind<512, kUnroll>{});
    case 1024: return fn(Kind<1024, kUnroll>{});
    default: return fn(Kind<2048, kUnroll>{});
  }
}
}  // namespace detail

template <int kUnroll>
void sweep_f32(cudaStream_t s, std::int64_t n, int flops, const float* x, float* y) {
  check_sweep(n, flops, "sweep_f32");
  if (n == 0) return;
  const auto grid = static_cast<unsigned>((n + kBlock - 1) / kBlock);
  detail::with_flops<detail::F32, kUnroll>(flops, [&](auto k) { decltype(k)::run(grid, s, n, x, y); });
}

template <int kUnroll>
void sweep_f16(cudaStream_t s, std::int64_t n, int flops, const __half2* x, __half2* y) {
  check_sweep(n, flops, "sweep_f16");
  if (reinterpret_cast<std::uintptr_t>(x) % 4 != 0 || reinterpret_cast<std::uintptr_t>(y) % 4 != 0)
    throw std::invalid_argument("sweep_f16: x and y must be 4-byte aligned (pairs of halves)");
  if (n == 0) return;
  const auto grid = static_cast<unsigned>((n + kBlock - 1) / kBlock);
  detail::with_flops<detail::F16, kUnroll>(flops, [&](auto k) { decltype(k)::run(grid, s, n, x, y); });
}

// The kernel a version runs for F, for the registers column.
template <int kUnroll>
const void* sweep_f32_kernel_for(int flops) {
  return detail::with_flops<detail::F32, kUnroll>(flops, [](auto k) { return decltype(k)::kernel(); });
}
template <int kUnroll>
const void* sweep_f16_kernel_for(int flops) {
  return detail::with_flops<detail::F16, kUnroll>(flops, [](auto k) { return decltype(k)::kernel(); });
}

}  // namespace ch07
