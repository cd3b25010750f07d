// fwd v10_cluster_narrow: v8's kernel with half the items per thread, cut for 4 blocks per SM.
//
// What changed since v8. Nsight Compute at 64x1024x7x7 NHWC float measured v8's forward at 22 % of
// the warps active against 42 % for cuDNN's fused kernel (results/NVIDIA_H100_80GB_HBM3.ncu_v8.csv):
// each thread holds 16 packs (64 registers of x, 128 in all), so an SM runs 2 blocks of 256
// threads, 16 warps, and v8's cut gives each thread 13 packs. cuDNN's kernel there
// (batchnorm_fwtr_nhwc_semiPersist) runs 512 threads per block at 64 registers. Here the same
// kernel keeps at most 8 packs (16 single values) per thread and is compiled for 4 blocks per SM
// in float (64 registers; 3 in half); v8's rule then picks narrower groups for the same rows: at 64x1024x7x7 NHWC
// float, 64 clusters of 8 blocks holding 16 channels each (P = 4) with 7 packs per thread, 512
// blocks, where v8 ran 32 clusters with 13 packs. The same bytes, twice the threads to wait on
// them, and half the packs each thread walks one by one in the pass (the mask's writes among
// them). At 4x33x17x19 (C = 33, single values) the groups narrow from 32 channels to 16, with 11
// values per thread instead of 21.
// Prediction: warps active up from v8's 22 % toward cuDNN's 42 %; 64x1024x7x7 NHWC float under
// cuDNN's fused 0.0188 ms; the tiny tensor's forward under v8's 0.0197 ms.
// Evidence: the benchmark against cuDNN in one run.
// Measured on the H100 (results/NVIDIA_H100_80GB_HBM3.ncu_v9_v10.csv, ..._v9_v10_cases.json): at
// 64x1024x7x7 NHWC float 45 % of the warps active (v8 23 %) but 35.8 us against v8's 32.3 and
// cuDNN's 17.6: compiled for 64 registers the float kernel spills (local loads and stores in its
// SASS, tests/test_sass.cpp) and moves 19.1 MB through DRAM against v8's 13.3; in the benchmark
// 0.0329 ms against cuDNN's 0.0188: not met. Our fastest at 64x1024x7x7 NHWC half (0.0215 ms,
// 1.40x cuDNN's time) and Add half (1.35x), and at 4x33x17x19 in NCHW (float 0.0127 ms, 1.23x)
// and NHWC half (0.0158 ms, 1.52x; v8 0.0205).
#pragma once

#include "kernels/fwd_v8_cluster.cuh"

#include <vector>

namespace ch05 {

template <int V>
inline constexpr int kNarrowItems = V == 1 ? 16 : 8;
// Float: 4 blocks per SM (64 registers; at 64x1024x7x7 the 512 blocks are one wave). Half: 3 (85
// registers; at 64 the pass's packs spilled, 90 local loads in the SASS; its groups of 32 channels
// make 256 blocks there).
template <class T>
inline constexpr int kNarrowBlocksPerSm = sizeof(T) == 2 ? 3 : 4;

template <class T, bool kAdd>
void fwd_v10_cluster_narrow(cudaStream_t st, const FwdArgs<T>& a, void*) {
  check_shape(a.s, "fwd_v10_cluster_narrow");
  require_clusters("fwd_v10_cluster_narrow");
  constexpr int V = kPack<T>, R = kNarrowItems<V>, R1 = kNarrowItems<1>, B = kNarrowBlocksPerSm<T>;
  const bool packs = a.s.layout == Layout::nhwc && a.s.C % V == 0 && fwd_apply_packs_ok<T, kAdd>(a);
  const char* who = "fwd_v10_cluster_narrow";
  if (packs) {
    const ClusterPlan plan = cluster_plan(a.s, V, R);
    if (a.s.C % 8 == 0 && plan.P * V % 8 == 0)
      launch_clusters(&fwd_v8_cluster_kernel<T, V, R, kAdd, false, true, B>, plan, st, who, a, plan);
    else launch_clusters(&fwd_v8_cluster_kernel<T, V, R, kAdd, false, false, B>, plan, st, who, a, plan);
  } else {
    const bool nchw = a.s.layout == Layout::nchw;
    const auto kernel = nchw ? &fwd_v8_cluster_kernel<T, 1, R1, kAdd, true, false, B>
                             : &fwd_v8_cluster_kernel<T, 1, R1, kAdd, false, false, B>;
    const ClusterPlan plan = cluster_plan(a.s, 1, R1);
    launch_clusters(kernel, plan, st, who, a, plan);
  }
}

template <class T, bool kAdd>
std::vector<const void*> fwd_v10_kernels() {
  constexpr int V = kPack<T>, R = kNarrowItems<V>, R1 = kNarrowItems<1>, B = kNarrowBlocksPerSm<T>;
  return {TUT_KERNEL(fwd_v8_cluster_kernel<T, V, R, kAdd, false, true, B>),
          TUT_KERNEL(fwd_v8_cluster_kernel<T, V, R, kAdd, false, false, B>),
          TUT_KERNEL(fwd_v8_cluster_kernel<T, 1, R1, kAdd, false, false, B>),
          TUT_KERNEL(fwd_v8_cluster_kernel<T, 1, R1, kAdd, true, false, B>)};
}

}  // namespace ch05
