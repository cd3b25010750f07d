// The empirical roofline: one kernel whose arithmetic per byte is a template parameter.
//
// Every value of an array gets F floating-point operations and is written back: 8 bytes move per
// element in both precisions (a float in and out, or a pair of halves in and out), so the
// arithmetic intensity is F / 8 FLOP per byte, from 1/8 (F = 1) to 256 (F = 2048):
//
//   float   F = 1: y = x + b (FADD)                F >= 2: F / 2 dependent FFMAs, v = v * a + b
//   half2   F = 1: the low half + b (HADD)         F = 2: HADD2           F >= 4: F / 4 HFMA2s
//
// Prediction: below the ridge (peak / bandwidth, about 20 FLOP per byte on an H100) the time is the
// bytes at the copy ceiling whatever F is; above it, F / peak per element, doubling with F.
//
// Shape (kernels/sweep_shape.hpp): a tile is kBlock threads x P 16-byte packs; a thread's 4 x P
// values are 4 x P independent chains, interleaved, and a block takes K consecutive tiles, loading
// tile k + 1 before it computes tile k. What each part is for, measured with Nsight Compute against
// the previous shape (one pack a thread, one tile a block; kernels/sweep_previous.cuh):
//   - the next tile's loads in flight during this tile's FMAs: near the ridge the previous shape's
//     blocks loaded, computed and stored in step, and each resource idled while the other worked;
//   - P = 2 for half: with four chains the compiler's schedule ran long stretches of HFMA2s on one
//     of its two pipes (HFMA2, HFMA2.MMA) and warps queued on it; with eight it alternates them;
//   - K = 1 where the unrolled body has kLongBody FMAs or more (F = 2048): that body is 64 KB of
//     code, warps wait for instructions, and blocks that live over several tiles wait longer.
// (The first form of this sweep took one value per thread: 0.79 of the copy ceiling at the memory
// end, chapter 01's v0_naive again, and half the FMA peak at the compute end, where one chain per
// thread leaves the FMA pipe waiting; the lesson shows both.)
//
// The dead-code guard is the output itself: every element's result is stored, and a and b are
// kernel arguments, so nothing folds and no FMA can be dropped. The SASS test counts them: 4 x P x
// F / 2 FFMAs per tile in the fully unrolled float kernel.
//
// kUnroll is the form of the FMA loop, the performance guide's three `#pragma unroll` forms:
//   1  `#pragma unroll 1`: a loop of one FFMA per chain and its counter, compare and branch;
//   4  `#pragma unroll 4`: four FFMAs per chain per iteration and the same overhead;
//   0  `#pragma unroll` (the trip count is a constant): FFMAs only.
// SASS shows each (tests/test_sass.cpp); the sweep times them.
#pragma once

#include "kernels/sweep_shape.hpp"
#include "tut/check.hpp"

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace ch07 {

template <class T>
inline constexpr int kPacksOf = std::is_same_v<T, float> ? kPacksF32 : kPacksF16;
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

// A pack: 16 bytes, one LDG.128 / STG.128, as a float4 (4 floats) or a uint4 (4 pairs of halves).
// (A struct of four __half2 copied member by member compiles to four 4-byte accesses, and the
// compiler then starts each value's chain as its own load arrives instead of interleaving them.)
template <class T>
using Pack = std::conditional_t<std::is_same_v<T, float>, float4, uint4>;
template <class T>
__device__ __forceinline__ T value(unsigned u) {
  T v;
  memcpy(&v, &u, 4);
  return v;
}
template <class T>
__device__ __forceinline__ unsigned bits(T v) {
  unsigned u;
  memcpy(&u, &v, 4);
  return u;
}
template <class T>
__device__ __forceinline__ void unpack(const Pack<T>& p, T* v) {
  if constexpr (std::is_same_v<T, float>) v[0] = p.x, v[1] = p.y, v[2] = p.z, v[3] = p.w;
  else v[0] = value<T>(p.x), v[1] = value<T>(p.y), v[2] = value<T>(p.z), v[3] = value<T>(p.w);
}
template <class T>
__device__ __forceinline__ Pack<T> pack(const T* v) {
  if constexpr (std::is_same_v<T, float>) return make_float4(v[0], v[1], v[2], v[3]);
  else return make_uint4(bits(v[0]), bits(v[1]), bits(v[2]), bits(v[3]));
}

// The main kernel. A tile is kBlock x kPacks packs; thread t holds packs t, t + kBlock, ... of it,
// so each of its kPacks loads is coalesced across the warp, and its 4 x kPacks values go through as
// many independent chains, interleaved. Block b takes tiles b x per_block ... b x per_block +
// per_block - 1 and issues the loads of tile k + 1 before the FMAs of tile k: while the FMA pipes
// work on one tile, the DRAM fetches the next.
// x and y must be 16-byte aligned; `tiles` whole tiles; the grid is ceil(tiles / per_block).
template <int kFlops, int kUnroll, int kPacks, class T, class Op>
__global__ void __launch_bounds__(kBlock) sweep_pack_kernel(std::int64_t tiles, std::int64_t per_block,
                                                            const T* __restrict__ x, T* __restrict__ y, Op op) {
  const Pack<T>* __restrict__ in = reinterpret_cast<const Pack<T>*>(x);
  Pack<T>* __restrict__ out = reinterpret_cast<Pack<T>*>(y);
  const std::int64_t first = blockIdx.x * per_block;
  const std::int64_t end = first + per_block < tiles ? first + per_block : tiles;
  // One thread's packs of a tile, copied as a whole at the end of each iteration: copied pack by
  // pack in a loop, they let the compiler unroll the tile loop despite the pragma below.
  struct Packs {
    Pack<T> p[kPacks];
  } cur, next;
#pragma unroll
  for (int j = 0; j < kPacks; ++j) cur.p[j] = in[(first * kPacks + j) * kBlock + threadIdx.x];
  // One tile per iteration, not unrolled, so that the SASS holds each tile's FMAs once.
#pragma unroll 1
  for (std::int64_t tile = first; tile < end; ++tile) {
    if (tile + 1 < end) {  // in flight during the FMAs below
#pragma unroll
      for (int j = 0; j < kPacks; ++j) next.p[j] = in[((tile + 1) * kPacks + j) * kBlock + threadIdx.x];
    }
    T v[4 * kPacks];
#pragma unroll
    for (int j = 0; j < kPacks; ++j) unpack<T>(cur.p[j], v + 4 * j);
    apply<kFlops, kUnroll, 4 * kPacks>(v, op);
#pragma unroll
    for (int j = 0; j < kPacks; ++j) out[(tile * kPacks + j) * kBlock + threadIdx.x] = pack<T>(v + 4 * j);
    cur = next;
  }
}

// The rest: one element per thread, for the elements after the last whole tile (fewer than a tile),
// or all of them when x or y is not 16-byte aligned.
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

// Runs the kernels of F = kFlops: whole tiles if both pointers are 16-byte aligned, then the rest
// one value per thread.
template <int kFlops, int kUnroll, class T, class Op>
void run(cudaStream_t s, std::int64_t n, const T* x, T* y, Op op) {
  constexpr int kP = kPacksOf<T>;
  constexpr std::int64_t kTileValues = std::int64_t{4} * kP * kBlock;
  constexpr int kFmasPerValue = kFlops / (std::is_same_v<T, float> ? 2 : 4);
  constexpr std::int64_t kPerBlock = tiles_per_block(kP, kFmasPerValue);
  const bool aligned = reinterpret_cast<std::uintptr_t>(x) % 16 == 0 && reinterpret_cast<std::uintptr_t>(y) % 16 == 0;
  const std::int64_t tiles = aligned ? n / kTileValues : 0, done = tiles * kTileValues;
  if (tiles > 0) {
    const std::int64_t blocks = (tiles + kPerBlock - 1) / kPerBlock;
    if (blocks > 0x7fffffff) throw std::invalid_argument("sweep: too many tiles for one grid");
    sweep_pack_kernel<kFlops, kUnroll, kP><<<static_cast<unsigned>(blocks), kBlock, 0, s>>>(tiles, kPerBlock, x, y, op);
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

}  // namespace ch07
