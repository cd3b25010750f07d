// Scans with warp shuffles, the building block of v3 and every version after it.
//
// warp_inclusive_scan: five __shfl_up_sync steps (offsets 1, 2, 4, 8, 16). A shuffle moves a
// register from one lane to another directly: no shared memory, no barrier; the 32 lanes of a warp
// execute it together. Every lane of the warp must call it (the mask is the full warp).
//
// block_exclusive_scan: each warp scans its values; lane 31 leaves the warp's total in shared
// memory; after a barrier warp 0 scans those (at most 32) totals; after a second barrier each
// thread adds its warp's offset. Two barriers per block scan, whatever the block size, against
// two per step (v1) or one per step (v2) for log2(block) steps. No subtraction anywhere, so a
// float scan rounds exactly as its additions say.
#pragma once

#include <cuda_runtime.h>

namespace ch03 {

inline constexpr unsigned kFullWarp = 0xffffffffu;

template <class T>
__device__ __forceinline__ T warp_inclusive_scan(T v) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int offset = 1; offset < 32; offset <<= 1) {
    const T before = __shfl_up_sync(kFullWarp, v, offset);
    if (lane >= offset) v = before + v;
  }
  return v;
}

template <class T>
__device__ __forceinline__ T warp_sum(T v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(kFullWarp, v, offset);
  return v;
}

// Shared memory a block scan needs. The warps' totals (written before the first barrier) and
// their offsets (written between the two) live apart, so a block can scan again straight away:
// every slot is written and read on opposite sides of a barrier.
template <class T>
struct BlockScanStorage {
  T warp_total[32];
  T warp_offset[32];
  T total;
};

// The barrier a block scan waits at. WholeBlock is __syncthreads(); WholeBlockOf<THREADS> too, with
// the block's size a constant. FirstThreads<THREADS> is a named barrier (bar.sync 1, THREADS) that
// only the block's first THREADS threads wait at, so a block can keep a warp out of its scan (v7's
// look-back warp). Every thread of a warp that takes part must reach it.
struct WholeBlock {
  __device__ __forceinline__ void operator()() const { __syncthreads(); }
  __device__ __forceinline__ static int warps() { return blockDim.x >> 5; }
};
// __syncthreads() in a block whose THREADS the kernel knows at compile time (v3's compiled forms).
template <int THREADS>
struct WholeBlockOf {
  static_assert(THREADS % 32 == 0 && THREADS <= 1024, "whole warps, at most 1024 threads");
  __device__ __forceinline__ void operator()() const { __syncthreads(); }
  __device__ __forceinline__ static constexpr int warps() { return THREADS / 32; }
};
template <int THREADS>
struct FirstThreads {
  static_assert(THREADS % 32 == 0, "whole warps");
  __device__ __forceinline__ void operator()() const { asm volatile("bar.sync 1, %0;" ::"n"(THREADS) : "memory"); }
  __device__ __forceinline__ static int warps() { return THREADS / 32; }
};

// The sum of the totals of the warps before this one, given each warp's total in its lane 31, and
// (in `total`) the block's total. Every thread the barrier counts calls it (by default the whole
// block; blockDim.x must be a multiple of 32). Two barriers.
template <class Barrier = WholeBlock, class T>
__device__ __forceinline__ T warp_offset_in_block(T warp_total, T& total, BlockScanStorage<T>& storage) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = Barrier::warps();
  const Barrier sync;
  if (lane == 31) storage.warp_total[warp] = warp_total;
  sync();
  if (warp == 0) {
    const T mine = lane < warps ? storage.warp_total[lane] : T{};
    const T running = warp_inclusive_scan(mine);
    T before = __shfl_up_sync(kFullWarp, running, 1);
    if (lane == 0) before = T{};
    if (lane < warps) storage.warp_offset[lane] = before;
    if (lane == 31) storage.total = running;
  }
  sync();
  total = storage.total;
  return storage.warp_offset[warp];
}

// The sum of the values of the threads before this one in the block, and (in `total`) the sum of
// all. Every thread of the block calls it; blockDim.x must be a multiple of 32.
template <class Barrier = WholeBlock, class T>
__device__ __forceinline__ T block_exclusive_scan(T v, T& total, BlockScanStorage<T>& storage) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const T inclusive = warp_inclusive_scan(v);
  T exclusive = __shfl_up_sync(kFullWarp, inclusive, 1);
  if (lane == 0) exclusive = T{};
  const T offset = warp_offset_in_block<Barrier>(inclusive, total, storage);
  return warp == 0 ? exclusive : offset + exclusive;
}

}  // namespace ch03
