// bwd v8_cluster: the forward v8's cut for the backward: a thread-block cluster per group of
// channels, g and x held in registers, the two sums merged through distributed shared memory,
// one launch with no grid barrier.
//
// What changed since v6. As in the forward (kernels/fwd_v8_cluster.cuh says why the cooperative
// grid loses on tensors that are small per channel group): each thread loads its R items of dy, x
// and their mask bits at once, keeps g = kept ? dy : 0 and x in registers, and sums g and
// g * (x - mean) per channel (mean is the saved one: no Welford here); the block merges its rows,
// the cluster's K blocks read each other's sums in rank order after one cluster barrier, and dx
// (and dr) is written from the registers. R is 8 packs of each (64 registers), half the
// forward's, so the host plan takes narrower groups (more clusters) sooner.
// Prediction: at 64x1024x7x7 NHWC float, 64 groups of 16 channels, 512 blocks, 7 packs of dy and
// of x per thread: dy, x and the mask read once, dx written once, plus a launch and a cluster
// barrier: under cuDNN's 31.0 us; at 4x33x17x19, launch latency, under cuDNN's 9.6 us.
// Evidence: the benchmark against cuDNN in one run.
// Measured on the H100 at 64x1024x7x7 NHWC float (Nsight Compute, results/..._ncu_v8.csv): 28.6 us
// against cuDNN's fused 28.0 us, the same DRAM bytes (26.1 MB read against 25.7): not met, 1.02x
// its time. (Cut by the fewest waves of clusters instead, 42.5 us.) In the benchmark
// (results/..._v8_cases.json, one process with cuDNN): 0.0295 ms against cuDNN's fused 0.0314 ms
// (0.94x its time; Add 0.98x, half 0.91x); at 4x33x17x19 0.88x in NCHW, 1.12x in NHWC.
#pragma once

#include "kernels/fwd_v8_cluster.cuh"

namespace ch05 {

template <class T, int V, int R, bool kAdd, bool kNchw>
__global__ void __launch_bounds__(kBlock, 2) bwd_v8_cluster_kernel(BwdArgs<T> a, ClusterPlan plan) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  static_assert(!kNchw || V == 1, "NCHW walks single values");
  __shared__ GradSums red[kWarps][kGroupSlots];
  __shared__ GradSums part[kGroupSlots];
  __shared__ float s_a[kGroupSlots], s_b[kGroupSlots], s_k[kGroupSlots];
  cg::cluster_group cluster = cg::this_cluster();
  const int t = static_cast<int>(threadIdx.x), P = plan.P;
  const int col = t % P, lrow = t / P;
  const int rank = static_cast<int>(cluster.block_rank());
  const std::int64_t g = blockIdx.x / plan.K, C = a.s.C, M = plan.M;
  const std::int64_t c_first = kNchw ? g : (g * P + col) * V;
  const bool col_ok = c_first < C;
  const std::int64_t row0 = static_cast<std::int64_t>(rank) * plan.L + lrow;
  const std::int64_t step = static_cast<std::int64_t>(plan.L) * plan.K;
  constexpr unsigned kBits = V == 32 ? ~0u : (1u << V) - 1u;

  float mean[V];
  CH05_UNROLL
  for (int k = 0; k < V; ++k) mean[k] = col_ok ? a.saved_mean[c_first + (kNchw ? 0 : k)] : 0.0f;

  // g = kept ? dy : +0 for one item, from its dy and its V mask bits.
  const auto masked = [](const Item<T, V>& dy, unsigned bits) {
    Item<T, V> out;
    CH05_UNROLL
    for (int k = 0; k < V; ++k) out.elem[k] = (bits >> k) & 1u ? dy.elem[k] : from_float<T>(0.0f);
    return out;
  };
  const auto bits_at = [&](std::int64_t e) { return (a.mask[e >> 5] >> (e & 31)) & kBits; };

  // 1. The first R items of dy, x and the mask into registers, then the sums; the items past R by
  // the same sums as they stream.
  Item<T, V> gs[R], xs[R];
  unsigned bs[R];
  int cached = 0;
  CH05_UNROLL
  for (int i = 0; i < R; ++i) {
    const std::int64_t row = row0 + i * step;
    if (col_ok && row < M) {
      const std::int64_t e = item_index<kNchw>(a.s, plan, c_first, row);
      gs[i] = *reinterpret_cast<const Item<T, V>*>(a.dy + e);
      xs[i] = *reinterpret_cast<const Item<T, V>*>(a.x + e);
      bs[i] = bits_at(e);
      ++cached;
    }
  }
  GradSums sums[V];
  CH05_UNROLL
  for (int k = 0; k < V; ++k) sums[k] = GradSums{0.0f, 0.0f};
  CH05_UNROLL
  for (int i = 0; i < R; ++i)
    if (i < cached) {
      gs[i] = masked(gs[i], bs[i]);
      CH05_UNROLL
      for (int k = 0; k < V; ++k) {
        const float gv = to_float(gs[i].elem[k]);
        sums[k].g += gv;
        sums[k].gx = fmaf(gv, to_float(xs[i].elem[k]) - mean[k], sums[k].gx);
      }
    }
  for (std::int64_t row = row0 + R * step; col_ok && row < M; row += step) {
    const std::int64_t e = item_index<kNchw>(a.s, plan, c_first, row);
    const Item<T, V> gv = masked(*reinterpret_cast<const Item<T, V>*>(a.dy + e), bits_at(e));
    const Item<T, V> xv = *reinterpret_cast<const Item<T, V>*>(a.x + e);
    CH05_UNROLL
    for (int k = 0; k < V; ++k) {
      const float gf = to_float(gv.elem[k]);
      sums[k].g += gf;
      sums[k].gx = fmaf(gf, to_float(xv.elem[k]) - mean[k], sums[k].gx);
    }
  }
  block_columns<V>(sums, P, red, part);

  // 2. Every block merges the cluster's K partials of its channels, in rank order.
  cluster.sync();
  const int width = P * V;
  if (t < width) {
    GradSums total = *cluster.map_shared_rank(&part[t], 0);
    for (int q = 1; q < plan.K; ++q) total = merge(total, *cluster.map_shared_rank(&part[t], q));
    const std::int64_t c = kNchw ? g : g * width + t;
    if (c < C) {
      const float Mf = static_cast<float>(M);
      const float invstd = a.saved_invstd[c];
      const float dgamma = total.gx * invstd, dbeta = total.g;
      const float A = a.gamma[c] * invstd;
      s_a[t] = A;
      s_b[t] = -A * invstd * (dgamma / Mf);
      s_k[t] = -A * (dbeta / Mf);
      if (rank == 0) {
        a.dgamma[c] = dgamma;
        a.dbeta[c] = dbeta;
      }
    }
  }
  cluster_arrive();
  __syncthreads();

  // 3. dx (and dr) from the registers (the items past R read again).
  float A[V], B[V], K[V];
  CH05_UNROLL
  for (int k = 0; k < V; ++k) {
    const int s = kNchw ? 0 : (col_ok ? col * V + k : 0);
    A[k] = s_a[s];
    B[k] = s_b[s];
    K[k] = s_k[s];
  }
  const auto emit = [&](std::int64_t e, const Item<T, V>& gv, const Item<T, V>& xv) {
    float dx[V], dr[V];
    CH05_UNROLL
    for (int k = 0; k < V; ++k) {
      const float gf = to_float(gv.elem[k]);
      dx[k] = fmaf(A[k], gf, fmaf(B[k], to_float(xv.elem[k]) - mean[k], K[k]));
      dr[k] = gf;
    }
    store_item<V, T>(a.dx + e, dx);
    if constexpr (kAdd) store_item<V, T>(a.dr + e, dr);
  };
  CH05_UNROLL
  for (int i = 0; i < R; ++i)
    if (i < cached) emit(item_index<kNchw>(a.s, plan, c_first, row0 + i * step), gs[i], xs[i]);
  for (std::int64_t row = row0 + R * step; col_ok && row < M; row += step) {
    const std::int64_t e = item_index<kNchw>(a.s, plan, c_first, row);
    emit(e, masked(*reinterpret_cast<const Item<T, V>*>(a.dy + e), bits_at(e)),
         *reinterpret_cast<const Item<T, V>*>(a.x + e));
  }
  cluster_wait();
#else
  __trap();  // clusters: sm_90 and later (the launcher refuses older GPUs)
#endif
}

// Items of dy and of x kept in registers per thread: 8 packs of each (64 registers), or 16 values.
template <int V>
inline constexpr int kBwdRegItems = V == 1 ? 16 : 8;

template <class T, bool kAdd>
void bwd_v8_cluster(cudaStream_t st, const BwdArgs<T>& a, void*) {
  check_shape(a.s, "bwd_v8_cluster");
  require_clusters("bwd_v8_cluster");
  constexpr int V = kPack<T>, R = kBwdRegItems<V>, R1 = kBwdRegItems<1>;
  const bool packs = a.s.layout == Layout::nhwc && a.s.C % V == 0 && aligned16(a.dy) && aligned16(a.x) &&
                     aligned16(a.dx) && (!kAdd || aligned16(a.dr));
  const auto kernel = packs ? &bwd_v8_cluster_kernel<T, V, R, kAdd, false>
                      : a.s.layout == Layout::nhwc ? &bwd_v8_cluster_kernel<T, 1, R1, kAdd, false>
                                                   : &bwd_v8_cluster_kernel<T, 1, R1, kAdd, true>;
  const ClusterPlan plan = cluster_plan(a.s, packs ? V : 1, packs ? R : R1);
  launch_clusters(kernel, plan, st, "bwd_v8_cluster", a, plan);
}

template <class T>
std::size_t bwd_v8_scratch_bytes(const Shape4&) {
  return 0;
}

template <class T, bool kAdd>
std::vector<const void*> bwd_v8_kernels() {
  constexpr int V = kPack<T>;
  return {TUT_KERNEL(bwd_v8_cluster_kernel<T, V, kBwdRegItems<V>, kAdd, false>),
          TUT_KERNEL(bwd_v8_cluster_kernel<T, 1, kBwdRegItems<1>, kAdd, false>),
          TUT_KERNEL(bwd_v8_cluster_kernel<T, 1, kBwdRegItems<1>, kAdd, true>)};
}

}  // namespace ch05
