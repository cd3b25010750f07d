// bwd v29_lean_scale: v25 with a kernel 1 that spends fewer instructions on each dy.
//
// Why. On kernel 8 stride 1, 1 x 16 x 64^3, int64, v25's kernel 1 took 7.1 us under Nsight Compute
// (caches flushed) to read 11.9 MB of dy, DRAM at 35 % of its peak, and issued 3.1 M warp
// instructions, 34 per 32 dy (results/NVIDIA_H200.v26.ncu.txt). In its SASS (cuobjdump -sass of
// bwd_v21_scale_kernel<false, float>) each dy costs a 64-bit address (an add with carry, two LEAs and
// a predicate) and v19's decode into a FloatParts: the exponent and mantissa split, the implicit bit
// put back, a finite test, and a branch around the top and lowest bits for zeros.
//
// How. Two running values a thread, both unsigned, with no branch:
//   - the largest a = |dy|'s bits (dy's bits without the sign): as unsigned integers these order as
//     the magnitudes do, so the largest gives the top bit, and any Inf or NaN lies at or above
//     0x7F800000, so it also says whether the plane falls back;
//   - the smallest key = max(E, 1) + min(ffs(a), 24) - 2, E the biased exponent: key - 149 is the
//     exponent of the lowest set bit of |dy| (subnormals included), and a zero, whose ffs is 0, wraps
//     to 0xFFFFFFFF, above every key.
// The block's partial is made from the two at the end: for finite dy the same top, low and bad as
// v21's kernel, so the same scale and dx with v25's bits. (Where some dy is not finite, the top may
// differ, and the plane falls back to v1's gather in both.) Each thread's loads are 32-bit offsets
// from one pointer to its first dy, so that each is one LDG with its offset in the instruction.
//
// Prediction (before any run), from the SASS: a warp that takes a whole strip of 12 dy issues 181
// instructions here, against 384 a warp measured for v21's kernel 1 (3,146,880 over 8,192 warps), so
// about 1.5 M warp instructions instead of 3.1 M. If, as DRAM at 35 % suggests, the kernel's time is
// the reads and then the work on them, one after the other, it drops by about half its issue time
// (3.0 us at one instruction a cycle on each scheduler): from 7.1 us to about 5.6, and v29 gains that
// over v25, about 3 % of a backward of 45 us.
//
// Measured (H200, results/forms/v29.*, one session): right about the instructions, 1.50 M warp
// instructions against v25's 3.15 M; half right about the time, 6.3 us against 7.1 with the caches
// flushed (7.0 against 8.7 with the L2 kept), its warps now waiting on a load 48 % of the time. The
// backward raced 1.020x and 1.002x PyTorch where v25 ran 0.998x and 1.012x (compact 1.056x and
// 1.036x against 1.042x and 1.025x), and in one process per kernel (3 to 8) within the spread of
// v25: a gain inside the noise, so auto keeps v25.
//
// Limits and scratch: v25's; it also needs the counters zero before the first launch.
#pragma once

#include "kernels/bwd_v25_clean_counters.cuh"

#include <algorithm>
#include <climits>
#include <cstdint>

namespace ch06 {

// The key of |dy|'s bits a (sign cleared): key - 149 is the exponent of its lowest set bit, and a
// zero's key wraps to 0xFFFFFFFF. Host and device: a CPU test checks it against v19's parts.
TUT_HD inline unsigned lean_low_key(unsigned a) {
  // The exponent, 1 for subnormals and zero (their mantissa's lowest bit is at 2^-149 + ffs - 1).
#ifdef __CUDA_ARCH__
  const unsigned e = max(a, 0x800000u) >> 23, f = min(static_cast<unsigned>(__ffs(static_cast<int>(a))), 24u);
#else
  const unsigned e = std::max(a, 0x800000u) >> 23, f = std::min(static_cast<unsigned>(__builtin_ffs(static_cast<int>(a))), 24u);
#endif
  return e + f - 2u;
}

// A block's partial from the largest |dy| bits and the smallest key: v19's top, low and bad for the
// same finite dy (where one is not finite, bad is set and the plane falls back whatever top says).
TUT_HD inline FixBits lean_fix_bits(unsigned top, unsigned key) {
  const int e = static_cast<int>(top >> 23);
  FixBits b;
  b.top = top == 0 ? INT_MIN : (e ? e - 150 : -149) + 24;  // as FloatParts: m < 2^24
  b.low = key == 0xFFFFFFFFu ? INT_MAX : static_cast<int>(key) - 149;
  b.bad = top >= 0x7F800000u;
  return b;
}

// 1 for v29: each block's partial of its plane, from the largest |dy| bits and the smallest key.
// The counters are v25's, left zero by the rounding: this kernel does not touch them.
template <class T>
__global__ void __launch_bounds__(kGlobBlock)
    bwd_v29_scale_kernel(const T* __restrict__ dy, const Window w, const GlobArgs g, FixBits* __restrict__ parts,
                         unsigned long long* __restrict__ /* counters, untouched */) {
  static_assert(std::is_same_v<T, float>, "the keys are built from float32 bits");
  constexpr int unroll = 3 * kGlobUnroll;  // v25's kernel 1's loads in flight a thread
  __shared__ unsigned warp_top[kGlobBlock / 32], warp_key[kGlobBlock / 32];
  const int tid = threadIdx.x, lane = tid % 32;
  const auto plane_out = static_cast<std::uint32_t>(w.out_plane());
  for (std::int64_t nc = g.first + blockIdx.y; nc < g.first + g.count; nc += gridDim.y) {
    unsigned top = 0, key = 0xFFFFFFFFu;
    for (std::uint32_t r0 = blockIdx.x * kGlobBlock * unroll + tid; r0 < plane_out; r0 += gridDim.x * kGlobBlock * unroll) {
      const T* q = dy + nc * plane_out + r0;
      const std::uint32_t left = plane_out - r0;
      unsigned a[unroll];
      if (left >= unroll * kGlobBlock) {  // a whole strip: no predicate
#pragma unroll
        for (int u = 0; u < unroll; ++u) a[u] = __float_as_uint(q[u * kGlobBlock]) & 0x7FFFFFFFu;
      } else {
#pragma unroll
        for (int u = 0; u < unroll; ++u) a[u] = u * kGlobBlock < left ? __float_as_uint(q[u * kGlobBlock]) & 0x7FFFFFFFu : 0u;
      }
#pragma unroll
      for (int u = 0; u < unroll; ++u) {
        top = max(top, a[u]);
        key = min(key, lean_low_key(a[u]));
      }
    }
    top = __reduce_max_sync(0xFFFFFFFFu, top);
    key = __reduce_min_sync(0xFFFFFFFFu, key);
    if (lane == 0) warp_top[tid / 32] = top, warp_key[tid / 32] = key;
    __syncthreads();
    if (tid < 32) {
      top = __reduce_max_sync(0xFFFFFFFFu, tid < kGlobBlock / 32 ? warp_top[tid] : 0u);
      key = __reduce_min_sync(0xFFFFFFFFu, tid < kGlobBlock / 32 ? warp_key[tid] : 0xFFFFFFFFu);
      if (tid == 0) parts[nc * gridDim.x + blockIdx.x] = lean_fix_bits(top, key);
    }
    __syncthreads();  // warp_top and warp_key are written again for the next plane
  }
}

// v29's counters: v25's, with kernel 1 above.
struct LeanCounters : CleanCounters {
  template <class T>
  static auto scale() { return &bwd_v29_scale_kernel<T>; }
};

template <class T>
std::string bwd_v29_refuses(const Window& w) {
  return fixed_point_refuses(w, "bwd_v29_lean_scale");
}

template <class T>
void bwd_v29_lean_scale(cudaStream_t s, const BackwardArgs<T>& a, void* scratch, std::size_t scratch_bytes) {
  glob_run<LeanCounters, FlatScatter>(s, a, scratch, scratch_bytes, "bwd_v29_lean_scale", a.w.N * a.w.C, kGlobMaxParts);
}

template <class T>
std::vector<const void*> bwd_v29_kernels() {
  return glob_kernels<LeanCounters, FlatScatter, T>();
}

}  // namespace ch06
