// fwd v30_pushed_sums: v15's one cluster, its blocks' sums pushed into every block's shared memory
// before the cluster barrier instead of read from the other blocks after it.
//
// Why. In v15's phase timeline (results/NVIDIA_H200.v15_phases.txt, 4x33x17x19 NHWC float, us
// from the first block's start) the cluster barrier is passed at 2.9 in the forward and 4.0 in the
// backward, and the totals are ready at 4.8-5.1 and 5.8-6.0: after the barrier each block reads
// the K blocks' sums through the cluster's window, a round trip to other SMs that nothing else
// overlaps, and every block then arrives at a second barrier so that none leaves while read. In
// the whole suite's run of b44f193 (results/NVIDIA_H200.json) v15's backward there took 0.00947 ms
// in float and 0.00970 in half, cuDNN's fused backward 0.00872 and 0.00894: 0.75 us apart.
//
// How. Each block, once its sums are in shared memory (dsum_block), stores them into every block's
// dynamic shared memory, block q's copy of block b's sums of channel c at [b C + c], one 16-byte
// store to the cluster's window per (block, channel), spread over the block's threads, so that the
// stores can travel while slower blocks still sum (no timeline of v30's steps was run to show
// it). The cluster barrier (its arrival a
// release, its wait an acquire) makes them visible; then one thread per channel adds the K copies
// in rank order from its own shared memory, as v15 adds them: the same numbers in the same order,
// so v30's outputs are v15's bit for bit. After the barrier no block touches another's shared
// memory, so there is no barrier at the end. The dynamic shared memory is K C 16 bytes (8.4 KB at
// C = 33, 14 blocks; 128 KB at C = 512, 16 blocks). A block's shared memory may be written from
// another SM only once that block has started: the first form pushed without knowing, and racecheck
// reported every push as a write to "a block that might not have entered yet"
// (results/v30_trial/NVIDIA_H200.v30_form1_racecheck.txt). So every thread arrives at a relaxed
// cluster barrier at the kernel's start and waits on it just before its first push, its loads and
// sums in between.
// Prediction (before any run): the copies' 1.1-1.2 us and the second barrier gone, less the
// stores' wait at the barrier: about 1 us less than v15 by events, the backward at 4x33x17x19 NHWC
// about 0.0085 ms in float and 0.0087 in half, under cuDNN's fused backward; the forward about
// 0.0080 ms in float, under cuDNN's 0.0093.
// Measured on the H200 (results/v30_trial/; README "The cluster's sums pushed, not fetched"): right
// by events. At 4x33x17x19 NHWC, one process: the backward 0.00867 ms in float and 0.00880 in half
// (v15 0.00973 and 0.01021, cuDNN's fused backward 0.00904 and 0.00906); the forward 0.00819 and
// 0.00829 (cuDNN 0.00946 and 0.00994); the fastest of ours on all eight problems there. Under Nsight
// Compute, the caches flushed, cuDNN's backward kernel is still the shorter (6.9 us against 8.4 in
// float; v15 9.8).
//
// Where it does not apply, as v15: the forward runs v14, the backward v5.
#pragma once

#include "kernels/fwd_v15_one_cluster.cuh"

namespace ch05 {

// The cluster's sums pushed: v30's Sums for fwd_one_cluster and bwd_one_cluster.
struct OnePushed {
  static constexpr std::size_t kDynPerCell = sizeof(double2);
  static constexpr bool kWaitAtEnd = false;
  // A block's shared memory may be written from another only once that block has started: every
  // thread arrives here, and waits before its first store to another block (by then, after its
  // loads and sums, the wait finds every block arrived).
  __device__ __forceinline__ static void start() { cluster_arrive_relaxed(); }
  template <class Done>
  __device__ __forceinline__ static void sums(OneShared& sh, const OnePlan& p, DSum mine, Done done) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    extern __shared__ double2 got[];  // [b C + c]: block b's sums of channel c
    cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
    const int t = static_cast<int>(threadIdx.x), b = static_cast<int>(cluster.block_rank());
    one_block_sums(sh, p, mine);  // sh.t1, sh.t2: this block's sums; ends at a block barrier
    cluster_wait();               // every block has started (start())
    for (int w = t; w < p.K * p.C; w += kResBlock) {
      const int q = w / p.C, c = w - q * p.C;
      *cluster.map_shared_rank(&got[b * p.C + c], q) = make_double2(sh.t1[c], sh.t2[c]);
    }
    one_cluster_barrier();
    for (int c = t; c < p.C; c += kResBlock) {
      double s1 = 0.0, s2 = 0.0;
      for (int q = 0; q < p.K; ++q) {
        const double2 v = got[q * p.C + c];
        s1 += v.x;
        s2 += v.y;
      }
      done(c, s1, s2);
    }
    __syncthreads();  // the pass reads every channel's parameters
#endif
  }
};

template <class T, bool kAdd>
__global__ void __launch_bounds__(kResBlock, 1) fwd_v30_pushed_sums_kernel(FwdArgs<T> a, OnePlan p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  fwd_one_cluster<T, kAdd, OnePushed>(a, p);
#else
  __trap();  // clusters: sm_90 and later (the launcher runs v14 on older GPUs)
#endif
}

template <class T, bool kAdd>
void fwd_v30_pushed_sums(cudaStream_t st, const FwdArgs<T>& a, void* ws) {
  check_shape(a.s, "fwd_v30_pushed_sums");
  if (!launch_if_one_cluster<&fwd_v30_pushed_sums_kernel<T, kAdd>, OnePushed>(st, a, "fwd_v30_pushed_sums"))
    fwd_v14_shifted_sums<T, kAdd>(st, a, ws);
}

template <class T, bool kAdd>
std::vector<const void*> fwd_v30_kernels() {
  auto k = fwd_v14_kernels<T, kAdd>();
  k.push_back(TUT_KERNEL(fwd_v30_pushed_sums_kernel<T, kAdd>));
  return k;
}

}  // namespace ch05
