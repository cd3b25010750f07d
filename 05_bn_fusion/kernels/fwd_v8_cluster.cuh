// fwd v8_cluster: for the tensors that are small per channel group, one launch with no grid
// barrier: a thread-block cluster per group of channels, x held in registers, the statistics
// merged through distributed shared memory.
//
// What changed since v7 (and v3 to v6). The single-read versions are one cooperative kernel over
// the whole GPU: every block writes partials for every channel it touched, a grid barrier, a merge,
// a second grid barrier, then the pass. At 64x1024x7x7 NHWC (3136 rows of 1024 channels, 12.8 MB)
// that shape costs more than the bytes: Nsight Compute measured v3 at 55.4 us with the DRAM busy
// 8.5 % of the time and 30 % of the warps' stalls on a barrier, against 15.9 us for cuDNN's fused
// kernel. Here the grid is cut by channels instead: a cluster of K blocks (K <= 8, the portable
// size; sm_90's clusters) owns P * V channels, P columns of V-element packs (NHWC; one channel in
// NCHW), and splits their rows among its K * L row lanes (L = 256 / P per block). Each thread
// loads its R items (packs) into registers at once, takes their mean and squared deviations in
// two passes over the registers (no division per value), and the block merges its rows (Chan,
// kernels/common.cuh) into one Welford triple per channel in shared memory. One cluster barrier;
// every block reads the K triples of its channels from the cluster's shared memories in rank
// order (so the K blocks compute the same statistics, bit for bit), and the pass runs from the
// registers: x is read once, from DRAM, and no partial ever goes to global memory. The clusters
// never wait on each other, so the grid need not be resident, and a tiny tensor is one launch
// of a few blocks instead of v1's two kernels or a cooperative grid of 132 * 4 blocks.
// The host picks the widest P (at most 32 channels, one word of the mask) and the smallest K
// whose row lanes hold the rows in R items; when even K = 8 does not, the items past R are read
// again in the pass (correct on every shape; slow where the tensor is large per channel group,
// where v3 to v7 are the versions to use).
// The mask: a word holds 32 consecutive elements, which here may belong to two clusters (C not a
// multiple of 32, NCHW runs, the last word's padding). Where C and the group are multiples of 8
// every byte lies in one group and is stored whole (a half pack is a byte; two neighbouring float
// packs are one, through a shuffle). Elsewhere the lanes of a warp holding parts of one word OR
// their bits together (write_mask_bits); a word wholly theirs is stored, a shared one is written
// by an atomicAnd then an atomicOr of the bits they own, which leaves the other clusters' bits as
// they are in any order.
// Prediction: at 64x1024x7x7 NHWC float, 256 blocks of 256 threads, 13 packs in flight per thread;
// the time of one read of 12.8 MB and one write at most of the copy rate plus a launch and a
// cluster barrier: under cuDNN's 19.6 us (results/NVIDIA_H100_80GB_HBM3.cudnn_suite.txt). At
// 4x33x17x19 (42 K elements), one launch of 16 blocks: launch latency, under cuDNN's 9.6 us.
// Evidence: the benchmark against cuDNN in one run; Nsight Compute's DRAM bytes and stall reasons.
// Measured on the H100 at 64x1024x7x7 NHWC float (Nsight Compute, results/..._ncu_v8.csv): the
// first form, whose mask writer used __match_any_sync and __reduce_or_sync on every pack, took
// 39.6 us (6.05 M warp instructions, DRAM busy 10.0 %) against cuDNN's fused 16.1 us (3.76 M);
// with whole mask bytes, 25.0 us (4.87 M; the same 256 blocks of 128 registers) against cuDNN's
// 16.2 us: not met, 1.55x its time, with 22 % of the warps active against its 42 % and issue on
// 23 % of cycles against 29 %. In the benchmark (results/..._v8_cases.json, one process with
// cuDNN): 0.0280 ms against cuDNN's fused 0.0185 ms, 1.51x its time (Add 1.68x, half 1.38x): not met.
//
// The trap: the K blocks of a cluster read each other's shared memory after the first barrier, so
// no block may leave (its shared memory is gone) before every block has read: each thread arrives
// at a second cluster barrier right after its reads and waits on it only at the end of the kernel.
#pragma once

#include "kernels/layout.cuh"

#include <cooperative_groups.h>

#include <algorithm>
#include <string>
#include <vector>

namespace ch05 {

namespace cg = cooperative_groups;

inline constexpr int kClusterMax = 8;  // the portable cluster size
inline constexpr int kGroupSlots = 32;  // channels per cluster at most: P * V <= 32

// How a v8 launch cuts the tensor.
struct ClusterPlan {
  int P = 1;               // pack columns per block (NHWC), 1 in NCHW
  int L = kBlock;          // row lanes per block: kBlock / P
  int K = 1;               // blocks per cluster
  std::int64_t groups = 1;  // clusters: groups of P * V channels (NHWC), C (NCHW)
  std::int64_t M = 0;      // rows of a group: N * H * W
  std::int64_t items = 0;  // items per thread, the same for every thread: ceil(M / (L * K))
  Divisor hw;              // NCHW: value j of channel c is at ((j / HW) * C + c) * HW + j % HW
};

// R: the items a thread keeps in registers. The widest P (whole mask bytes and words, whole
// sectors), then the smallest K whose row lanes hold every row in R items per thread. When none
// does, the widest P and K = 8, the items past R read again. (A second rule, the cut with the
// fewest waves of clusters by cudaOccupancyMaxActiveClusters, was measured and dropped: at
// 64x1024x7x7 NHWC float it left the forward's cut as it was and moved the backward off this
// rule's 64 clusters of 8 blocks (512 blocks either way), from 28.6 us to 42.5 us,
// results/NVIDIA_H100_80GB_HBM3.ncu_v8.csv.)
inline ClusterPlan cluster_plan(const Shape4& s, int V, int R) {
  ClusterPlan p;
  p.M = s.per_channel();
  p.hw = Divisor(s.HW);
  const auto items = [&](int L, int K) {
    const std::int64_t lanes = static_cast<std::int64_t>(L) * K;
    return (p.M + lanes - 1) / lanes;
  };
  std::vector<int> widths;
  if (s.layout == Layout::nchw) {
    widths = {1};
  } else {
    const std::int64_t packs = (s.C + V - 1) / V;
    for (int P = kGroupSlots / V; P >= 1; P /= 2)
      if (P == 1 || P / 2 < packs) widths.push_back(P);  // not more than half the columns idle
  }
  bool fits = false;
  for (int P : widths) {
    for (int K = 1; K <= kClusterMax && !fits; K *= 2)
      if (items(kBlock / P, K) <= R) {
        p.P = P;
        p.K = K;
        fits = true;
      }
    if (fits) break;
  }
  if (!fits) {
    p.P = widths.front();
    p.K = kClusterMax;
  }
  p.L = kBlock / p.P;
  const std::int64_t width = static_cast<std::int64_t>(p.P) * V;
  p.groups = s.layout == Layout::nchw ? s.C : (s.C + width - 1) / width;
  p.items = items(p.L, p.K);
  return p;
}

// Clusters need sm_90 or later; a clear error on an older GPU, before anything is launched.
inline bool clusters_supported() {
  int dev = 0, yes = 0;
  TUT_CUDA(cudaGetDevice(&dev));
  TUT_CUDA(cudaDeviceGetAttribute(&yes, cudaDevAttrClusterLaunch, dev));
  return yes != 0;
}
inline void require_clusters(const char* who) {
  if (!clusters_supported())
    throw tut::Unsupported(std::string(who) + ": needs thread-block clusters (compute capability 9.0 or later)");
}

// A launch of `blocks` blocks of `threads` threads in clusters of K, the cluster's dimension set.
struct ClusterLaunch {
  cudaLaunchConfig_t cfg = {};
  cudaLaunchAttribute attr[1] = {};
  ClusterLaunch(std::int64_t blocks, int threads, int K, cudaStream_t st, const char* who, std::size_t dynamic_smem = 0) {
    cfg.gridDim = dim3(grid_of(blocks, who));
    cfg.blockDim = dim3(static_cast<unsigned>(threads));
    cfg.dynamicSmemBytes = dynamic_smem;
    cfg.stream = st;
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = static_cast<unsigned>(K);
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
  }
  ClusterLaunch(const ClusterLaunch&) = delete;  // cfg points at attr
};

// Launches `kernel` as a grid of `groups` clusters of K blocks of kBlock threads.
template <class... Params, class... Args>
void launch_clusters(void (*kernel)(Params...), const ClusterPlan& plan, cudaStream_t st, const char* who,
                     Args... args) {
  const ClusterLaunch l(plan.groups * plan.K, kBlock, plan.K, st, who);
  TUT_CUDA(cudaLaunchKernelEx(&l.cfg, kernel, args...));  // returns the launch's own error
}

// The second cluster barrier, split: arrive once this thread has read the other blocks' shared
// memory, wait before leaving.
__device__ __forceinline__ void cluster_arrive() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
#endif
}
// An arrival that orders no memory: enough to say this block has started (v30's first barrier).
__device__ __forceinline__ void cluster_arrive_relaxed() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
#endif
}
__device__ __forceinline__ void cluster_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
#endif
}

// The memory index of a thread's item in row `row` (0 <= row < M): NHWC, the pack at column
// c_first of that row; NCHW, value `row` of channel c_first.
template <bool kNchw>
__device__ __forceinline__ std::int64_t item_index(const Shape4& s, const ClusterPlan& plan, std::int64_t c_first,
                                                   std::int64_t row) {
  if constexpr (kNchw) {
    const std::int64_t n = plan.hw.div(row);
    return (n * s.C + c_first) * s.HW + (row - n * s.HW);
  } else {
    return row * s.C + c_first;
  }
}

// V elements of T, one access.
template <class T, int V>
using Item = tut::ew::Packed<T, V>;

template <int V, class T>
__device__ __forceinline__ void store_item(T* p, const float (&v)[V]) {
  if constexpr (V * sizeof(T) == 16) store_pack<V, T>(p, v);
  else {
    static_assert(V == 1, "a pack of 16 bytes, or one element");
    *p = from_float<T>(v[0]);
  }
}

// The V bits `bits` of elements key .. key + V - 1 (key % V == 0, so they lie in one word), or
// nothing when !has. Every lane of the warp calls it, with keys that never decrease from lane to
// lane (a lane with nothing passes the key of where its item would be, clamped into the tensor), so
// the lanes holding parts of one word are neighbours: each finds where its word's run of lanes
// ends (a shuffle and a ballot) and the first lane of the run ORs the run's bits in five shuffles.
// (Not __match_any_sync and __reduce_or_sync: with a different lane mask per word the reduce
// compiles to a divergent path, BRA.DIV in the SASS; the first form of v8 ran them on every pack
// and its forward took 39.6 us at 64x1024x7x7 NHWC float, against 16.1 for cuDNN's fused kernel.)
// The lane holding the tensor's last element owns the last word's padding bits (zero).
template <int V>
__device__ __forceinline__ void write_mask_bits(Word* mask, std::int64_t n, bool has, std::int64_t key, unsigned bits) {
  const long long w = static_cast<long long>(key >> 5);
  const int lane = static_cast<int>(threadIdx.x & 31);
  unsigned own = 0, val = 0;
  if (has) {
    const int sh = static_cast<int>(key & 31);
    own = (V == 32 ? ~0u : ((1u << V) - 1u)) << sh;
    val = bits << sh;
    if ((n & 31) != 0 && w == (n >> 5)) own |= ~0u << (n & 31);
  }
  const long long before = __shfl_up_sync(kFullWarp, w, 1);
  const unsigned starts = __ballot_sync(kFullWarp, lane == 0 || before != w);
  const unsigned above = starts & ~(0xffffffffu >> (31 - lane));  // runs starting after this lane
  const int next = above ? __ffs(above) - 1 : 32;
  for (int off = 1; off < 32; off <<= 1) {
    const unsigned o = __shfl_down_sync(kFullWarp, own, off), v = __shfl_down_sync(kFullWarp, val, off);
    if (lane + off < next) {
      own |= o;
      val |= v;
    }
  }
  if (((starts >> lane) & 1u) && own != 0) {
    if (own == ~0u) {
      mask[w] = val;
    } else {
      atomicAnd(mask + w, ~own | val);
      atomicOr(mask + w, val);
    }
  }
}

// The block's partials of its P * V channels, one per column and slot: each warp merges its rows
// with shuffles, then one thread per channel merges the warps' results in order.
template <int V, class S>
__device__ void block_columns(S (&w)[V], int P, S (*red)[kGroupSlots], S* out) {
  const int lane = static_cast<int>(threadIdx.x & 31), warp = static_cast<int>(threadIdx.x >> 5);
  CH05_UNROLL
  for (int k = 0; k < V; ++k)
    for (int off = 16; off >= P; off >>= 1) w[k] = merge(w[k], shfl_down(w[k], off));
  if (lane < P) {
    CH05_UNROLL
    for (int k = 0; k < V; ++k) red[warp][lane * V + k] = w[k];
  }
  __syncthreads();
  if (static_cast<int>(threadIdx.x) < P * V) {
    S acc = red[0][threadIdx.x];
    for (int q = 1; q < kWarps; ++q) acc = merge(acc, red[q][threadIdx.x]);
    out[threadIdx.x] = acc;
  }
}

// kBytes: NHWC packs with C % 8 == 0 and groups of a multiple of 8 channels, so that every byte of
// the mask lies in one group: a half pack is one byte, two neighbouring float packs (lanes t and
// t ^ 1, columns 2j and 2j + 1 of one row) are one byte, and bytes are stored whole (the GPU
// stores bytes: no read-modify-write, no atomics). Otherwise write_mask_bits.
// kMinBlocks: the blocks per SM the registers are cut for (v8: 2, 128 registers; v10: 4, 64).
template <class T, int V, int R, bool kAdd, bool kNchw, bool kBytes, int kMinBlocks = 2>
__global__ void __launch_bounds__(kBlock, kMinBlocks) fwd_v8_cluster_kernel(FwdArgs<T> a, ClusterPlan plan) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  static_assert(!kNchw || V == 1, "NCHW walks single values");
  static_assert(!kBytes || V == 4 || V == 8, "bytes of the mask from packs of 4 or 8");
  __shared__ Welford red[kWarps][kGroupSlots];
  __shared__ Welford part[kGroupSlots];
  __shared__ float s_mean[kGroupSlots], s_scale[kGroupSlots], s_shift[kGroupSlots];
  cg::cluster_group cluster = cg::this_cluster();
  const int t = static_cast<int>(threadIdx.x), P = plan.P;
  const int col = t % P, lrow = t / P;
  const int rank = static_cast<int>(cluster.block_rank());
  const std::int64_t g = blockIdx.x / plan.K, C = a.s.C, M = plan.M;
  const std::int64_t c_first = kNchw ? g : (g * P + col) * V;
  const bool col_ok = c_first < C;
  const std::int64_t row0 = static_cast<std::int64_t>(rank) * plan.L + lrow;
  const std::int64_t step = static_cast<std::int64_t>(plan.L) * plan.K;

  // 1. The first R items into registers (all loads issued before any is used), then their mean and
  // squared deviations; the items past R (a tensor too large for the cluster) by Welford's update.
  Item<T, V> xs[R];
  int cached = 0;  // rows grow with i: the valid items are a prefix
  CH05_UNROLL
  for (int i = 0; i < R; ++i) {
    const std::int64_t row = row0 + i * step;
    if (col_ok && row < M) {
      xs[i] = *reinterpret_cast<const Item<T, V>*>(a.x + item_index<kNchw>(a.s, plan, c_first, row));
      ++cached;
    }
  }
  float sum[V] = {};
  CH05_UNROLL
  for (int i = 0; i < R; ++i)
    if (i < cached) {
      CH05_UNROLL
      for (int k = 0; k < V; ++k) sum[k] += to_float(xs[i].elem[k]);
    }
  Welford w[V];
  CH05_UNROLL
  for (int k = 0; k < V; ++k) {
    const float n = static_cast<float>(cached), mean = cached > 0 ? sum[k] / n : 0.0f;
    float m2 = 0.0f;
    CH05_UNROLL
    for (int i = 0; i < R; ++i)
      if (i < cached) {
        const float d = to_float(xs[i].elem[k]) - mean;
        m2 = fmaf(d, d, m2);
      }
    w[k] = {n, mean, m2};
  }
  for (std::int64_t row = row0 + R * step; col_ok && row < M; row += step) {
    const Item<T, V> v = *reinterpret_cast<const Item<T, V>*>(a.x + item_index<kNchw>(a.s, plan, c_first, row));
    CH05_UNROLL
    for (int k = 0; k < V; ++k) {
      const float x = to_float(v.elem[k]);
      w[k].n += 1.0f;
      const float d = x - w[k].mean;
      w[k].mean += d / w[k].n;
      w[k].m2 = fmaf(d, x - w[k].mean, w[k].m2);
    }
  }
  block_columns<V>(w, P, red, part);

  // 2. Every block merges the cluster's K partials of its channels, in rank order.
  cluster.sync();
  const int width = P * V;
  if (t < width) {
    Welford total = *cluster.map_shared_rank(&part[t], 0);
    for (int q = 1; q < plan.K; ++q) total = merge(total, *cluster.map_shared_rank(&part[t], q));
    const std::int64_t c = kNchw ? g : g * width + t;
    if (c < C) {
      const float Mf = static_cast<float>(M);
      const float invstd = 1.0f / sqrtf(total.m2 / Mf + a.eps);
      s_mean[t] = total.mean;
      s_scale[t] = a.gamma[c] * invstd;
      s_shift[t] = a.beta[c];
      if (rank == 0) {
        a.saved_mean[c] = total.mean;
        a.saved_invstd[c] = invstd;
        a.running_mean[c] = (1.0f - a.momentum) * a.running_mean[c] + a.momentum * total.mean;
        a.running_var[c] = (1.0f - a.momentum) * a.running_var[c] + a.momentum * (total.m2 / (Mf - 1.0f));
      }
    }
  }
  cluster_arrive();
  __syncthreads();

  // 3. The pass, from the registers (the items past R read again).
  float mean[V], scale[V], shift[V];
  CH05_UNROLL
  for (int k = 0; k < V; ++k) {
    const int s = kNchw ? 0 : (col_ok ? col * V + k : 0);
    mean[k] = s_mean[s];
    scale[k] = s_scale[s];
    shift[k] = s_shift[s];
  }
  const std::int64_t n = a.s.numel();
  const auto emit = [&](bool has, std::int64_t e, const Item<T, V>& xv) {
    unsigned bits = 0;
    if (has) {
      Item<T, V> rv;
      if constexpr (kAdd) rv = *reinterpret_cast<const Item<T, V>*>(a.r + e);
      float y[V];
      CH05_UNROLL
      for (int k = 0; k < V; ++k) {
        float s = fmaf(to_float(xv.elem[k]) - mean[k], scale[k], shift[k]);
        if constexpr (kAdd) s += to_float(rv.elem[k]);
        s = round_to<T>(s);
        y[k] = relu(s);
        bits |= static_cast<unsigned>(kept(s)) << k;
      }
      store_item<V, T>(a.y + e, y);
    }
    if constexpr (kBytes) {
      unsigned byte = bits;
      if constexpr (V == 4) byte |= __shfl_xor_sync(kFullWarp, bits, 1) << 4;  // every lane: the warp's step
      if (has && (V == 8 || (col & 1) == 0)) {
        auto* mask_bytes = reinterpret_cast<unsigned char*>(a.mask);
        mask_bytes[e >> 3] = static_cast<unsigned char>(byte);
        if ((e >> 3) == (n >> 3) - 1)  // the last element's byte: the last word's padding bytes, zero
          for (std::int64_t b = n >> 3; b < 4 * tut::bitmask::word_count(n); ++b) mask_bytes[b] = 0;
      }
    } else {
      write_mask_bits<V>(a.mask, n, has, e, bits);
    }
  };
  // An item's memory index, or for a lane with no item there, where it would be clamped into the
  // tensor (the end of its row, or the last element): keys that never decrease from lane to lane.
  // (Whole bytes need no keys: a lane with no item stores nothing.)
  const auto key_of = [&](std::int64_t row) -> std::int64_t {
    if (row >= M) return kBytes ? 0 : n - 1;
    if (kNchw || col_ok) return item_index<kNchw>(a.s, plan, c_first, row);
    return kBytes ? 0 : row * C + C - 1;
  };
  CH05_UNROLL
  for (int i = 0; i < R; ++i) emit(i < cached, key_of(row0 + i * step), xs[i]);
  for (std::int64_t i = R; i < plan.items; ++i) {  // the same count in every lane: the mask's warp steps
    const std::int64_t row = row0 + i * step;
    const bool has = col_ok && row < M;
    const std::int64_t e = key_of(row);
    Item<T, V> xv{};
    if (has) xv = *reinterpret_cast<const Item<T, V>*>(a.x + e);
    emit(has, e, xv);
  }
  cluster_wait();
#else
  __trap();  // clusters: sm_90 and later (the launcher refuses older GPUs)
#endif
}

// Items kept in registers per thread: 16 packs (64 registers), or 32 single values.
template <int V>
inline constexpr int kFwdRegItems = V == 1 ? 32 : 16;

template <class T, bool kAdd>
void fwd_v8_cluster(cudaStream_t st, const FwdArgs<T>& a, void*) {
  check_shape(a.s, "fwd_v8_cluster");
  require_clusters("fwd_v8_cluster");
  constexpr int V = kPack<T>, R = kFwdRegItems<V>, R1 = kFwdRegItems<1>;
  const bool packs = a.s.layout == Layout::nhwc && a.s.C % V == 0 && fwd_apply_packs_ok<T, kAdd>(a);
  const char* who = "fwd_v8_cluster";
  if (packs) {
    const ClusterPlan plan = cluster_plan(a.s, V, R);
    if (a.s.C % 8 == 0 && plan.P * V % 8 == 0)
      launch_clusters(&fwd_v8_cluster_kernel<T, V, R, kAdd, false, true>, plan, st, who, a, plan);
    else launch_clusters(&fwd_v8_cluster_kernel<T, V, R, kAdd, false, false>, plan, st, who, a, plan);
  } else {
    const bool nchw = a.s.layout == Layout::nchw;
    const auto kernel = nchw ? &fwd_v8_cluster_kernel<T, 1, R1, kAdd, true, false>
                             : &fwd_v8_cluster_kernel<T, 1, R1, kAdd, false, false>;
    const ClusterPlan plan = cluster_plan(a.s, 1, R1);
    launch_clusters(kernel, plan, st, who, a, plan);
  }
}

template <class T>
std::size_t fwd_v8_scratch_bytes(const Shape4&) {
  return 0;
}

template <class T, bool kAdd>
std::vector<const void*> fwd_v8_kernels() {
  constexpr int V = kPack<T>, R = kFwdRegItems<V>, R1 = kFwdRegItems<1>;
  return {TUT_KERNEL(fwd_v8_cluster_kernel<T, V, R, kAdd, false, true>),
          TUT_KERNEL(fwd_v8_cluster_kernel<T, V, R, kAdd, false, false>),
          TUT_KERNEL(fwd_v8_cluster_kernel<T, 1, R1, kAdd, false, false>),
          TUT_KERNEL(fwd_v8_cluster_kernel<T, 1, R1, kAdd, true, false>)};
}

}  // namespace ch05
