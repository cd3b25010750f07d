// Hopper's copy engine from CUDA C++ (sm_90): bulk copies from global memory into shared memory,
// completed on an mbarrier in shared memory. A bulk copy holds no register while it is in flight,
// so a block can keep tens of kilobytes on their way without the registers a load would need.
//
//   __shared__ std::uint64_t bar;
//   if (threadIdx.x == 0) tut::bulk::init(&bar);          // one arrival per phase
//   __syncthreads();
//   if (threadIdx.x == 0) tut::bulk::load(dst, src, bytes, &bar);   // expect the bytes, ask for them
//   tut::bulk::wait(&bar);                                // every thread: phase 0 complete
//
// Addresses and sizes are whole 16-byte units (the copy engine's rule). Several copies may complete
// on one barrier: one thread announces their sum with expect_tx, then any threads issue them with
// copy. wait waits for phase 0: a barrier here is used once.
// Before sm_90 these compile to nothing; the versions that use them refuse other GPUs.
#pragma once

#include <cstdint>

namespace tut::bulk {

__device__ __forceinline__ unsigned smem_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// One thread: a barrier that completes a phase on one arrival and its announced bytes.
__device__ __forceinline__ void init(std::uint64_t* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_addr(bar)) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
}

// One thread: the phase's arrival, announcing the bytes its copies will bring.
__device__ __forceinline__ void expect_tx(std::uint64_t* bar, unsigned bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)), "r"(bytes) : "memory");
#endif
}

// Any thread: one copy of `bytes` from global `src` to shared `dst`, counted on `bar`.
__device__ __forceinline__ void copy(void* dst, const void* src, unsigned bytes, std::uint64_t* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                   smem_addr(dst)),
               "l"(src), "r"(bytes), "r"(smem_addr(bar))
               : "memory");
#endif
}

// One thread: expect `bytes` on `bar`, and ask for them in one copy.
__device__ __forceinline__ void load(void* dst, const void* src, unsigned bytes, std::uint64_t* bar) {
  expect_tx(bar, bytes);
  copy(dst, src, bytes, bar);
}

// Bring `bytes` from `src` into the L2, for a later read.
__device__ __forceinline__ void prefetch_l2(const void* src, unsigned bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(src), "r"(bytes) : "memory");
#endif
}

// Every thread: wait until the barrier's phase 0 has completed (its bytes have landed). The hint
// lets the warp sleep in the wait up to that long instead of asking again and again.
inline constexpr unsigned kWaitHintNs = 1000000;
__device__ __forceinline__ void wait(std::uint64_t* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  unsigned done = 0;
  do {
    asm volatile(
        "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0, %2; selp.u32 %0, 1, 0, p; }"
        : "=r"(done)
        : "r"(smem_addr(bar)), "r"(kWaitHintNs)
        : "memory");
  } while (!done);
#endif
}

}  // namespace tut::bulk
