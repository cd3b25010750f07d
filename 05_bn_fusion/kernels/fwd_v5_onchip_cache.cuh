// fwd v5_onchip_cache: v4, with each thread's first packs kept in shared memory from phase 1 to
// phase 3, so that part of x is read from DRAM once even where x does not fit in the L2.
//
// What changed since v4. Between phase 1 and phase 3 the 132 SMs hold 228 KiB of shared memory
// each, 30 MB in all, and v4 leaves it empty. Here phase 1 stores each thread's first K packs in
// shared memory as it reads them (one 16-byte slot per pack, slot i of every thread side by side,
// so a warp's stores and loads are conflict-free), and phase 3 takes them from there. The front
// of x goes to shared memory, because the L2 holds the back of x when phase 1 ends (v3's reverse
// sweep): the two stores add up instead of overlapping. The grid is v4's (kOwnBlocks blocks per
// SM), and each block gets its share of the SM's shared memory less its own static arrays: at four
// float blocks per SM, 10 slots per thread, 160 KiB per SM, 21 MB in all.
// Bytes at 64x64x112x112 float (205 MB of x): ~21 MB of x not read again, a tenth of the second
// read, on top of what the L2 gives back; at 16x32x112x112 (25.7 MB) most of x.
// Prediction: DRAM bytes read fall by the cached bytes against v4 (dram__bytes_read.sum), and the
// time by their share of the two-pass bytes: about 3 % at 64x64x112x112 float.
// Evidence: Nsight Compute's dram__bytes_read.sum, v4 against v5.
// Measured on the H100 (results/NVIDIA_H100_80GB_HBM3.json, 64x64x112x112): NHWC float 0.2374 ms
// against v4's 0.2368 and v3's 0.2400, reading 373 MB against v4's 394 (ncu_nhwc.csv); NCHW float
// 0.2455 against v3's 0.2357; half NHWC 0.1468 against v3's 0.1474. At three blocks per SM (15
// slots) the phase timeline timed it faster than at four (phases.txt); v6 runs at three.
//
// Where it stops fitting: the cache is K slots per thread, fixed by the GPU's shared memory, not
// by the tensor: a larger tensor keeps the same ~21 MB on chip and reads the rest twice.
// Packs of one element (operands off their 16-byte alignment) are not cached: v5 runs v4 there.
#pragma once

#include "kernels/fwd_v4_own_packs.cuh"

namespace ch05 {

// kParts 16-byte parts per slot (the forward: x; the backward: g and x), `slots` slots per thread
// in the block's dynamic shared memory: part q of slot i of thread t at (i * kParts + q) * kBlock + t,
// so a warp's 32 slots are 512 consecutive bytes (no bank conflicts). A pack is kept as it was
// loaded (repack() is exact: the floats came from T).
template <class T, int kParts, int kBlocks>
struct SmemCache {
  static constexpr int kMinBlocks = kBlocks;
  uint4* base;
  int slots;
  __device__ SmemCache(void* dyn, int n) : base(static_cast<uint4*>(dyn)), slots(n) {}
  __device__ bool holds(std::int64_t slot) const { return slot < slots; }
  __device__ void keep(std::int64_t slot, int part, uint4 v) const {
    if (slot < slots) base[(static_cast<int>(slot) * kParts + part) * kBlock + threadIdx.x] = v;
  }
  __device__ uint4 fetch(std::int64_t slot, int part) const {
    return base[(static_cast<int>(slot) * kParts + part) * kBlock + threadIdx.x];
  }
};

// How many slots of `slot_bytes` per thread a block of `kernel` may keep at `blocks_per_sm` blocks
// per SM: the SM's shared memory shared out, less what the runtime reserves per block and the
// kernel's own static arrays. Sets the kernel's dynamic shared-memory limit to that.
struct OnChip {
  int slots = -1;
  std::size_t dyn_bytes = 0;
};

inline OnChip onchip_budget(const void* kernel, std::size_t slot_bytes, int blocks_per_sm) {
  int dev = 0, per_sm_smem = 0, reserved = 0;
  TUT_CUDA(cudaGetDevice(&dev));
  TUT_CUDA(cudaDeviceGetAttribute(&per_sm_smem, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev));
  TUT_CUDA(cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, dev));
  cudaFuncAttributes attr{};
  TUT_CUDA(cudaFuncGetAttributes(&attr, kernel));
  const std::int64_t per_block = per_sm_smem / blocks_per_sm - reserved - static_cast<std::int64_t>(attr.sharedSizeBytes);
  OnChip o;
  o.slots = static_cast<int>(std::max<std::int64_t>(0, per_block / static_cast<std::int64_t>(slot_bytes * kBlock)));
  o.dyn_bytes = static_cast<std::size_t>(o.slots) * slot_bytes * kBlock;
  TUT_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(o.dyn_bytes)));
  TUT_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared));
  return o;
}

// The budget of one kernel on the current device, worked out on its first launch there.
template <const void* (*kKernel)(), int kBlocks>
const OnChip& onchip_cached(std::size_t slot_bytes) {
  static OnChip cache[64];
  int dev = 0;
  TUT_CUDA(cudaGetDevice(&dev));
  OnChip& o = cache[dev & 63];
  if (o.slots < 0) o = onchip_budget(kKernel(), slot_bytes, kBlocks);
  return o;
}

// The most units one thread of a grid of `grid` blocks walks: more slots than that are not needed.
inline std::int64_t own_units_most(const Shape4& s, int V, int grid) {
  const V3Plan plan = v3_plan(s, V, grid);
  const std::int64_t items = s.layout == Layout::nchw ? s.C * plan.S : static_cast<std::int64_t>(plan.nhwc.gx) * plan.gy;
  const OwnItem w = own_item(s, plan, V, 0, 0);  // item 0, thread 0: the first unit, so the longest
  return (items + grid - 1) / grid * w.count();
}

// The slots a launch keeps: the budget's, or as many as a thread of its grid walks where that is fewer.
inline int onchip_slots(const OnChip& oc, const Shape4& s, int V, int blocks_per_sm) {
  const int grid = device_limits().sm_count * blocks_per_sm;
  return static_cast<int>(std::min<std::int64_t>(oc.slots, own_units_most(s, V, grid)));
}

template <int V, class T, bool kAdd, int kBlocks>
const void* fwd_v5_kernel() {
  return reinterpret_cast<const void*>(&fwd_v4_own_packs_kernel<V, T, kAdd, SmemCache<T, 1, kBlocks>>);
}

template <class T, bool kAdd, int kBlocks = kOwnBlocks<T>>
void fwd_v5_onchip_cache(cudaStream_t st, const FwdArgs<T>& a, void* ws) {
  check_shape(a.s, "fwd_v5_onchip_cache");
  constexpr int V = kPack<T>;
  if (!own_packs_ok<T, kAdd>(a) || !own_words_whole(a.s, V)) return fwd_v4_own_packs<T, kAdd, kBlocks>(st, a, ws);
  const OnChip& oc = onchip_cached<&fwd_v5_kernel<V, T, kAdd, kBlocks>, kBlocks>(16);
  const int slots = onchip_slots(oc, a.s, V, kBlocks);
  const Scratch sc(a.s.C, v3_partial_bytes(a.s, V, sizeof(Welford)), 0);
  fwd_own_launch<V, T, kAdd, SmemCache<T, 1, kBlocks>>(st, a, sc, ws, static_cast<std::size_t>(slots) * 16 * kBlock, slots);
}

template <class T>
std::size_t fwd_v5_scratch_bytes(const Shape4& s) {
  return fwd_v3_scratch_bytes<T>(s);
}

template <class T, bool kAdd, int kBlocks = kOwnBlocks<T>>
std::vector<const void*> fwd_v5_kernels() {
  return {fwd_v5_kernel<kPack<T>, T, kAdd, kBlocks>()};
}

}  // namespace ch05
