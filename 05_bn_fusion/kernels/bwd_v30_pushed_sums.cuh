// bwd v30_pushed_sums: the backward v15 with the forward v30's cluster sums, pushed into every
// block's shared memory before the cluster barrier (kernels/fwd_v30_pushed_sums.cuh has the why,
// the how and the prediction). Where it does not apply, as v15, it runs v5.
#pragma once

#include "kernels/bwd_v15_one_cluster.cuh"
#include "kernels/fwd_v30_pushed_sums.cuh"

namespace ch05 {

template <class T, bool kAdd>
__global__ void __launch_bounds__(kResBlock, 1) bwd_v30_pushed_sums_kernel(BwdArgs<T> a, OnePlan p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  bwd_one_cluster<T, kAdd, OnePushed>(a, p);
#else
  __trap();  // clusters: sm_90 and later (the launcher runs v5 on older GPUs)
#endif
}

template <class T, bool kAdd>
void bwd_v30_pushed_sums(cudaStream_t st, const BwdArgs<T>& a, void* ws) {
  check_shape(a.s, "bwd_v30_pushed_sums");
  if (!launch_if_one_cluster<&bwd_v30_pushed_sums_kernel<T, kAdd>, OnePushed>(st, a, "bwd_v30_pushed_sums"))
    bwd_v5_onchip_cache<T, kAdd>(st, a, ws);
}

template <class T, bool kAdd>
std::vector<const void*> bwd_v30_kernels() {
  auto k = bwd_v5_kernels<T, kAdd>();
  k.push_back(TUT_KERNEL(bwd_v30_pushed_sums_kernel<T, kAdd>));
  return k;
}

}  // namespace ch05
