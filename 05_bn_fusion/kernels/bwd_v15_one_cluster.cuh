// bwd v15_one_cluster: the forward v15's cut for the backward. One cluster holds the whole tensor:
// each thread loads its values of dy, x and their mask bits at once, sums g = kept ? dy : 0 and
// g (x - mean) in double, the cluster adds the sums in shared memory in rank order (every block the
// same bits), block 0 writes dgamma and dbeta, and dx (and dr) come from the registers.
//
// What changed since v8. At 4x33x17x19 NHWC v8 gives 2 clusters of 8 blocks of 256 threads 21
// values each, read one after another; cuDNN's fused backward was faster on the H100 (0.0097 ms
// against v8's 0.0109, results/NVIDIA_H100_80GB_HBM3.cudnn_suite.txt). Here 14 blocks of 1024
// threads, 4 values each, every load issued before the first add.
// Prediction: as the forward's, one DRAM round trip, two block barriers and one cluster barrier:
// below cuDNN's fused backward.
// Measured on the H200 (results/NVIDIA_H200.v15_bench.txt, ncu_v15.csv; this form's cluster sums
// as the forward's third): wrong. Our fastest backward at 4x33x17x19 NHWC in every form (float
// 0.0095 ms, half 0.0098, the Add forms 0.0099 and 0.0096, where cuDNN's best accepted path takes
// about 0.019), but cuDNN's fused backward takes 0.0086 ms in float and 0.0089 in half; under
// Nsight Compute 9.3 us against its 6.9, both reading about 370 KB from DRAM.
//
// Where it does not apply (as the forward's), v15 runs v5.
#pragma once

#include "kernels/bwd_v5_onchip_cache.cuh"
#include "kernels/fwd_v15_one_cluster.cuh"

namespace ch05 {

// ---- The backward's steps (tools/phase_timeline.cu stamps between them) -------------------------------

// What a backward thread holds: g = kept ? dy : 0, and x - mean.
struct OneBwdHeld {
  float g[kOneItems], xm[kOneItems];
};

// Phase 1: g and x - mean into registers, every load at once (dy beside the mask's word, not after
// it); each channel's gamma and invstd into shared memory; the thread's two sums, in double.
template <class T>
__device__ __forceinline__ DSum one_bwd_phase1(const BwdArgs<T>& a, const OnePlan& p, const OneSpot& s, OneShared& sh,
                                               OneBwdHeld& h) {
  const float mean = a.saved_mean[s.c];
#pragma unroll
  for (int m = 0; m < kOneItems; ++m) {
    const bool has = s.has(p, m);
    const int e = s.first + m * p.B;
    const bool keep = has && ((a.mask[e >> 5] >> (e & 31)) & 1u);
    const float dy = has ? to_float(a.dy[e]) : 0.0f;
    h.g[m] = keep ? dy : 0.0f;
    h.xm[m] = has ? to_float(a.x[e]) - mean : 0.0f;
  }
  one_stage<2>(sh, p, {a.gamma, a.saved_invstd});
  DSum mine{0.0, 0.0};
#pragma unroll
  for (int m = 0; m < kOneItems; ++m) {
    mine.s1 += static_cast<double>(h.g[m]);
    mine.s2 = fma(static_cast<double>(h.g[m]), static_cast<double>(h.xm[m]), mine.s2);
  }
  return mine;
}

// The end of channel c's sums, in every block: dx's coefficients into sh.v[0..2][c]; block 0 writes
// dgamma and dbeta.
template <class T>
struct OneBwdDone {
  const BwdArgs<T>& a;
  const OnePlan& p;
  OneShared& sh;
  float M;  // p.M
  __device__ __forceinline__ void operator()(int c, double s1, double s2) const {
    const float invstd = sh.v[1][c], dgamma = static_cast<float>(s2) * invstd, dbeta = static_cast<float>(s1);
    const DxCoefficients k = dx_coefficients(sh.v[0][c] * invstd, invstd, dgamma, dbeta, M);
    sh.v[0][c] = k.A;
    sh.v[1][c] = k.B;
    sh.v[2][c] = k.K;
    if (blockIdx.x == 0) {
      a.dgamma[c] = dgamma;
      a.dbeta[c] = dbeta;
    }
  }
};

// Phase 3: dx (and dr) from the registers.
template <class T, bool kAdd>
__device__ __forceinline__ void one_bwd_pass(const BwdArgs<T>& a, const OnePlan& p, const OneSpot& s, const OneShared& sh,
                                             const OneBwdHeld& h) {
  const float A = sh.v[0][s.c], B = sh.v[1][s.c], K = sh.v[2][s.c];
#pragma unroll
  for (int m = 0; m < kOneItems; ++m)
    if (s.has(p, m)) {
      const int e = s.first + m * p.B;
      a.dx[e] = from_float<T>(fmaf(A, h.g[m], fmaf(B, h.xm[m], K)));
      if constexpr (kAdd) a.dr[e] = from_float<T>(h.g[m]);
    }
}

// The backward of v15's cut, its sums added as Sums says (v15's kernel, and v30's).
template <class T, bool kAdd, class Sums>
__device__ __forceinline__ void bwd_one_cluster(const BwdArgs<T>& a, const OnePlan& p) {
  __shared__ OneShared sh;
  Sums::start();
  const OneSpot s = one_spot(p);
  OneBwdHeld h;
  const DSum mine = one_bwd_phase1(a, p, s, sh, h);
  Sums::sums(sh, p, mine, OneBwdDone<T>{a, p, sh, static_cast<float>(p.M)});
  one_bwd_pass<T, kAdd>(a, p, s, sh, h);
  if constexpr (Sums::kWaitAtEnd) cluster_wait();
}

template <class T, bool kAdd>
__global__ void __launch_bounds__(kResBlock, 1) bwd_v15_one_cluster_kernel(BwdArgs<T> a, OnePlan p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  bwd_one_cluster<T, kAdd, OnePulled>(a, p);
#else
  __trap();  // clusters: sm_90 and later (the launcher runs v5 on older GPUs)
#endif
}

template <class T, bool kAdd>
void bwd_v15_one_cluster(cudaStream_t st, const BwdArgs<T>& a, void* ws) {
  check_shape(a.s, "bwd_v15_one_cluster");
  if (!launch_if_one_cluster<&bwd_v15_one_cluster_kernel<T, kAdd>>(st, a, "bwd_v15_one_cluster"))
    bwd_v5_onchip_cache<T, kAdd>(st, a, ws);
}

template <class T, bool kAdd>
std::vector<const void*> bwd_v15_kernels() {
  auto k = bwd_v5_kernels<T, kAdd>();
  k.push_back(TUT_KERNEL(bwd_v15_one_cluster_kernel<T, kAdd>));
  return k;
}

}  // namespace ch05
