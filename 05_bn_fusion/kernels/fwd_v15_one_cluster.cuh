// fwd v15_one_cluster: a tensor that fits in the registers of one cluster, done by that one
// cluster in one launch: every value loaded at once, the sums merged in shared memory, then the
// pass from the registers. No partial goes to global memory and no block waits on another cluster.
//
// What changed since v14 (and v8). At 4x33x17x19 NHWC (1292 rows of 33 channels, 42 K values,
// 170 KB in float) v14 spreads the rows over every SM: about 10 rows a block, 132 blocks that each
// publish and gather (results/NVIDIA_H200.v14_bench.txt: 0.0128 ms against cuDNN's fused 0.0093 and
// v11's 0.0099). v8 cut it into 2 clusters of 8 blocks of 256 threads (32 channels each, so the
// second cluster has one channel), 21 values per thread walked one after another with a division
// each (Nsight Compute on the H100: 26.2 us, 12.5 % of the warps active; README, Appendix M). Here
// the whole tensor goes to one cluster of K blocks of 1024 threads (K = 16, the non-portable size,
// where the GPU can place it; else 8):
//   The cut. A block's thread t takes channel c = t % C and row group g = t / C (G = 1024 / C
//   groups, B = G C threads with values); block b takes `rows` consecutive rows, rows C a multiple
//   of 32 (so a block's elements start on a mask word); thread t's values are rows g, g + G, ... of
//   its block, value m at element (b rows) C + t + m B: a warp's 32 lanes load 32 consecutive
//   elements, every load of the thread issued before the first add. At most 8 values per thread.
//   The sums. As v14's: each value's deviation from K* = x[c] (x's first row), summed here in double
//   from the start (8 values a thread at most), the block's groups added per channel in one warp's
//   lanes and a butterfly (v14's dsum_block).
//   The cluster's sum. One cluster barrier; every block copies the K blocks' sums into its own
//   shared memory (each load instruction reads one block's consecutive channels) and adds them per
//   channel in rank order, so every block gets the same statistics bit for bit; block 0 writes the
//   saved and running statistics.
//   The pass, from the registers: y, and the mask's bits by warp ballots ORed into the block's
//   words in shared memory (a warp's 32 elements straddle two words when B is not a multiple of
//   32), stored whole at the end; no word is shared with another block.
// Precision: v14's (K* is one of the channel's values; the final subtraction in double).
// Prediction: at 4x33x17x19 (14 blocks of 96 rows, 4 values a thread) the time of one DRAM round
// trip for the loads, two block barriers, one cluster barrier and the stores: below cuDNN's fused
// kernel, 7.5 us under Nsight Compute on the H200 (results/NVIDIA_H200.ncu_v14.csv), and v11's two
// kernels.
// Measured on the H200 (results/NVIDIA_H200.v15_*, NVIDIA_H200.ncu_v15.csv; README "One cluster for
// a small tensor"). Two forms came first: one thread per channel reading the other blocks' sums one
// block after another, then 16 lanes per channel, lane q reading block q, and a butterfly. Both
// took 9.5 us under Nsight Compute against cuDNN's 7.4. The phase timeline (results/NVIDIA_H200.
// v15_form2_*.txt) put the second form's reads at 1.2 to 2.1 us after the cluster barrier, the
// longest step (0.6 us with one channel): each load instruction read 16 blocks. This form copies
// them, an instruction reading one block's consecutive channels: the copies take 1.1 to 1.2 us
// (why is not measured), and the float forward 8.8 us under Nsight Compute against cuDNN's 7.5, so
// the prediction was wrong under the profiler. In the benchmark (events, as every version is timed):
// float 0.0093 ms against cuDNN's fused 0.0094 and v11's 0.0100, half 0.0100 against 0.0102, and
// our fastest forward in the Add forms; 1.20x PyTorch in float in one race (v11 1.15x). An empty
// kernel launched as the same cluster costs 3.8 to 4.1 us by events, as a plain launch does.
//
// Where it does not apply (NCHW, C > 512, more rows than K blocks hold at 8 values a thread, no
// sm_90), v15 runs v14.
#pragma once

#include "kernels/fwd_v14_shifted_sums.cuh"
#include "kernels/fwd_v8_cluster.cuh"

#include <cooperative_groups.h>

#include <numeric>
#include <optional>

namespace ch05 {

inline constexpr int kOneItems = 8;    // values of each operand a thread holds, at most
inline constexpr int kOneMaxC = 512;   // channels, at most (dsum_block's groups: 1024 + C doubles)
inline constexpr int kOneMaxK = 16;    // blocks in the cluster: 16 where the GPU can place them, else 8
inline constexpr int kOneWords = kResBlock * kOneItems / 32 + 2;  // a block's mask words, and one over

// How v15 cuts the tensor: one cluster of K blocks of kResBlock threads.
struct OnePlan {
  int C = 1, G = 1, B = 1;  // channels; row groups per block, 1024 / C; threads with values, G C
  int K = 1;                // blocks
  int rows = 1;             // rows per block (the last block: the rest); rows C is a multiple of 32
  int items = 1;            // values per thread: ceil(rows / G)
  std::int64_t M = 0;       // rows: N H W
};

// The cut with the most blocks (at most maxK), or none where v15 does not apply.
inline std::optional<OnePlan> one_plan(const Shape4& s, int maxK) {
  if (s.layout != Layout::nhwc || s.C > kOneMaxC) return std::nullopt;
  OnePlan p;
  p.C = static_cast<int>(s.C);
  p.G = kResBlock / p.C;
  p.B = p.G * p.C;
  p.M = s.per_channel();
  const std::int64_t align = 32 / std::gcd(p.C, 32);  // rows C a multiple of 32
  const std::int64_t rows = ((p.M + maxK - 1) / maxK + align - 1) / align * align;
  const std::int64_t items = (rows + p.G - 1) / p.G;
  if (items > kOneItems) return std::nullopt;
  p.rows = static_cast<int>(rows);
  p.items = static_cast<int>(items);
  p.K = static_cast<int>((p.M + rows - 1) / rows);
  return p;
}

// The blocks a cluster of `Kernel` may have on this device for C channels: 16 where
// cudaOccupancyMaxActiveClusters places one cluster of 16 (the non-portable size, allowed here), else
// 8. A kernel with kDynPerCell bytes of dynamic shared memory per block and channel (v30's) is granted
// the most it may ask for (kOneMaxK kOneMaxC cells), and placed with what C asks for, C rounded up to
// a power of two (C past kOneMaxC, which v15 refuses, as kOneMaxC). Asked once per device and power of two.
template <auto Kernel, std::size_t kDynPerCell = 0>
int one_cluster_blocks(std::int64_t C) {
  constexpr int kSizes = 10;  // the powers of two from 1 to kOneMaxC
  static_assert(1 << (kSizes - 1) == kOneMaxC);
  static int cache[64][kSizes] = {};
  int size = 0;
  while (kDynPerCell > 0 && size + 1 < kSizes && (std::int64_t{1} << size) < C) ++size;
  int dev = 0;
  TUT_CUDA(cudaGetDevice(&dev));
  int& k = cache[dev & 63][size];
  if (k == 0) {
    constexpr std::size_t most = kDynPerCell * kOneMaxK * kOneMaxC;
    const std::size_t dyn = kDynPerCell * kOneMaxK * (std::size_t{1} << size);
    TUT_CUDA(cudaFuncSetAttribute(Kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    if (most > 0)
      TUT_CUDA(cudaFuncSetAttribute(Kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(most)));
    const ClusterLaunch l(kOneMaxK, kResBlock, kOneMaxK, nullptr, "one_cluster_blocks", dyn);
    int clusters = 0;
    TUT_CUDA(cudaOccupancyMaxActiveClusters(&clusters, Kernel, &l.cfg));
    k = clusters >= 1 ? kOneMaxK : kClusterMax;
  }
  return k;
}

// kOneItems values of T held in registers: half two to a register (the half Add forward spilt with
// one a register).
template <class T>
struct OneHeld {
  T v[kOneItems];
  __device__ __forceinline__ T get(int m) const { return v[m]; }
  __device__ __forceinline__ void set(int m, T x) { v[m] = x; }
};
template <>
struct OneHeld<__half> {
  __half2 v[kOneItems / 2];
  __device__ __forceinline__ __half get(int m) const { return m % 2 ? __high2half(v[m / 2]) : __low2half(v[m / 2]); }
  __device__ __forceinline__ void set(int m, __half x) {
    v[m / 2] = m % 2 ? __halves2half2(__low2half(v[m / 2]), x) : __halves2half2(x, __high2half(v[m / 2]));
  }
};

// The block's shared memory: dsum_block's groups (channel c's at c (G | 1) + g), then the copies
// of the other blocks' sums; the block's sums per channel, which every block of the cluster reads; per channel, what the statistics' end needs,
// loaded at the start (v[k][c]), then the pass's three parameters in v[0..2][c]; the block's mask
// words (the forward).
inline constexpr int kOneStaged = 5;
struct OneShared {
  double s1[kResBlock + kOneMaxC], s2[kResBlock + kOneMaxC];
  double t1[kOneMaxC], t2[kOneMaxC];
  float v[kOneStaged][kOneMaxC];
  Word words[kOneWords];
};

// Thread t < C loads channel t's `count` per-channel values into sh.v[k][t], at the kernel's start
// (their loads in flight with x's; read after the first block barrier).
template <int kCount>
__device__ __forceinline__ void one_stage(OneShared& sh, const OnePlan& p, const float* const (&from)[kCount]) {
  static_assert(kCount <= kOneStaged, "room for kOneStaged arrays");
  const int t = static_cast<int>(threadIdx.x);
  if (t < p.C) {
    float got[kCount];
#pragma unroll
    for (int k = 0; k < kCount; ++k) got[k] = from[k][t];
#pragma unroll
    for (int k = 0; k < kCount; ++k) sh.v[k][t] = got[k];
  }
}

// Where thread t of block b stands: its channel, its first element, the rows of its block.
struct OneSpot {
  int t, c, g, rows;
  bool on;    // t < B: a thread with values
  int first;  // its value m is element first + m B (a tensor v15 takes has at most 16 x 8 x 1024 elements)
  __device__ __forceinline__ bool has(const OnePlan& p, int m) const { return on && g + m * p.G < rows; }
};

__device__ __forceinline__ OneSpot one_spot(const OnePlan& p) {
  OneSpot s;
  s.t = static_cast<int>(threadIdx.x);
  s.c = s.t % p.C;
  s.g = s.t / p.C;
  s.on = s.g < p.G;
  const int row0 = static_cast<int>(blockIdx.x) * p.rows;
  s.rows = min(p.rows, static_cast<int>(p.M) - row0);
  s.first = row0 * p.C + s.t;
  return s;
}

// The sums of every channel over the cluster, in three steps (tools/phase_timeline.cu stamps between
// them): thread t's `mine` added per channel in the block (dsum_block), the block's sums to sh.t1
// and sh.t2; one cluster barrier; then, for up to kOneChunk channels a round, the K blocks' sums
// copied into this block's sh.s1 and sh.s2 (block q's at q width + i: consecutive threads read
// consecutive channels of one block, every load in flight at once), a block barrier, and one
// thread per channel adding the K copies in rank order and handing the totals to done(c, s1, s2).
// Every block adds the same numbers in the same order, so every block gets the same bits. Every
// thread calls each step. After the last the thread has arrived at the cluster's second barrier: it
// must call cluster_wait() before it leaves, so that no block's shared memory goes while read.
__device__ __forceinline__ void one_block_sums(OneShared& sh, const OnePlan& p, DSum mine) {
  dsum_block(sh, mine, p.C, p.G, [&](int c, double s1, double s2) {
    sh.t1[c] = s1;
    sh.t2[c] = s2;
  });
}

__device__ __forceinline__ void one_cluster_barrier() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cooperative_groups::this_cluster().sync();
#endif
}

// `read`: called by every thread once a round's sums are copied, before they are added (the phase
// timeline stamps there; nothing in the kernels).
struct OneNothing {
  __device__ __forceinline__ void operator()() const {}
};

inline constexpr int kOneChunk = (kResBlock + kOneMaxC) / kOneMaxK;  // channels a round: K x 96 doubles fill s1

template <class Done, class Read = OneNothing>
__device__ __forceinline__ void one_cluster_totals(OneShared& sh, const OnePlan& p, Done done, Read read = {}) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cooperative_groups::cluster_group cluster = cooperative_groups::this_cluster();
  const int t = static_cast<int>(threadIdx.x);
  for (int c0 = 0; c0 < p.C; c0 += kOneChunk) {
    const int width = min(kOneChunk, p.C - c0);
    for (int w = t; w < p.K * width; w += kResBlock) {
      const int q = w / width, i = w - q * width;
      sh.s1[w] = *cluster.map_shared_rank(&sh.t1[c0 + i], q);
      sh.s2[w] = *cluster.map_shared_rank(&sh.t2[c0 + i], q);
    }
    __syncthreads();
    read();
    for (int i = t; i < width; i += kResBlock) {
      double s1 = 0.0, s2 = 0.0;
#pragma unroll 2
      for (int q = 0; q < p.K; ++q) {
        s1 += sh.s1[q * width + i];
        s2 += sh.s2[q * width + i];
      }
      done(c0 + i, s1, s2);
    }
    __syncthreads();  // the next round's copies overwrite s1 and s2
  }
  cluster_arrive();
  __syncthreads();
#endif
}

template <class Done>
__device__ __forceinline__ void one_cluster_sums(OneShared& sh, const OnePlan& p, DSum mine, Done done) {
  one_block_sums(sh, p, mine);
  one_cluster_barrier();
  one_cluster_totals(sh, p, done);
}

template <class... Params, class... Args>
void launch_one_cluster(void (*kernel)(Params...), const OnePlan& p, std::size_t dynamic_smem, cudaStream_t st,
                        const char* who, Args... args) {
  const ClusterLaunch l(p.K, kResBlock, p.K, st, who, dynamic_smem);
  TUT_CUDA(cudaLaunchKernelEx(&l.cfg, kernel, args...));  // returns the launch's own error
}

// How a kernel of v15's cut adds the cluster's sums: v15 pulls the other blocks' sums after the
// cluster barrier (one_cluster_sums), so no block may leave before the others have read it (the
// second barrier, waited at the kernel's end); v30 pushes them before it
// (kernels/fwd_v30_pushed_sums.cuh).
struct OnePulled {
  static constexpr std::size_t kDynPerCell = 0;  // dynamic shared memory, bytes per block and channel
  static constexpr bool kWaitAtEnd = true;
  __device__ __forceinline__ static void start() {}  // at the kernel's start, before its loads
  template <class Done>
  __device__ __forceinline__ static void sums(OneShared& sh, const OnePlan& p, DSum mine, Done done) {
    one_cluster_sums(sh, p, mine, done);
  }
};

// Launches Kernel(a, plan) as one cluster where v15 takes a's shape on this device, and says whether
// it did (where not, the caller runs its fallback).
template <auto Kernel, class Sums = OnePulled, class Args>
bool launch_if_one_cluster(cudaStream_t st, const Args& a, const char* who) {
  if (a.s.layout != Layout::nhwc || !clusters_supported()) return false;
  const auto p = one_plan(a.s, one_cluster_blocks<Kernel, Sums::kDynPerCell>(a.s.C));
  if (p) launch_one_cluster(Kernel, *p, Sums::kDynPerCell * p->K * p->C, st, who, a, *p);
  return p.has_value();
}

// ---- The forward's steps (tools/phase_timeline.cu stamps between them) --------------------------------

// Phase 1: every value into registers (x, and r in the Add form, added in the pass); each channel's gamma, beta, running statistics and
// K* into shared memory; the block's mask words zeroed; then the thread's sums from K*, in double.
template <class T, bool kAdd>
__device__ __forceinline__ DSum one_fwd_phase1(const FwdArgs<T>& a, const OnePlan& p, const OneSpot& s, OneShared& sh,
                                               float (&xv)[kOneItems], OneHeld<T>& rv) {
#pragma unroll
  for (int m = 0; m < kOneItems; ++m) {
    const bool has = s.has(p, m);
    xv[m] = has ? to_float(a.x[s.first + m * p.B]) : 0.0f;
    if constexpr (kAdd) rv.set(m, has ? a.r[s.first + m * p.B] : T{});
  }
  const float kstar = to_float(a.x[s.c]);
  one_stage<4>(sh, p, {a.gamma, a.beta, a.running_mean, a.running_var});
  if (s.t < p.C) sh.v[4][s.t] = to_float(a.x[s.t]);  // channel t's K*
  for (int i = s.t; i < kOneWords; i += kResBlock) sh.words[i] = 0u;
  DSum mine{0.0, 0.0};
#pragma unroll
  for (int m = 0; m < kOneItems; ++m)
    if (s.has(p, m)) {
      const double d = static_cast<double>(xv[m]) - static_cast<double>(kstar);
      mine.s1 += d;
      mine.s2 = fma(d, d, mine.s2);
    }
  return mine;
}

// The statistics' end of channel c, in every block (one_cluster_totals's `done`): the pass's
// parameters into sh.v[0..2][c]; block 0 writes the saved and running statistics (save_channel's,
// with the running statistics loaded at the start).
template <class T>
struct OneFwdDone {
  const FwdArgs<T>& a;
  const OnePlan& p;
  OneShared& sh;
  float M;  // p.M
  __device__ __forceinline__ void operator()(int c, double s1, double s2) const {
    const float gamma = sh.v[0][c], beta = sh.v[1][c], rmean = sh.v[2][c], rvar = sh.v[3][c];
    const Welford w = shifted_welford(p.M, sh.v[4][c], s1, s2);
    const float invstd = invstd_of(w, M, a.eps);
    sh.v[0][c] = w.mean;
    sh.v[1][c] = gamma * invstd;
    sh.v[2][c] = beta;
    if (blockIdx.x == 0) save_channel_loaded(a, c, w, invstd, M, rmean, rvar);
  }
};

// Phase 3: the pass from the registers; the mask's bits ORed into the block's words, then stored.
template <class T, bool kAdd>
__device__ __forceinline__ void one_fwd_pass(const FwdArgs<T>& a, const OnePlan& p, const OneSpot& s, OneShared& sh,
                                             const float (&xv)[kOneItems], const OneHeld<T>& rv) {
  const float mean = sh.v[0][s.c], scale = sh.v[1][s.c], shift = sh.v[2][s.c];
  const int lane = s.t % 32;
#pragma unroll
  for (int m = 0; m < kOneItems; ++m) {
    if (m >= p.items) break;  // the same in every thread: the ballots' lanes all vote
    const bool has = s.has(p, m);
    float v = fmaf(xv[m] - mean, scale, shift);
    if constexpr (kAdd) v += to_float(rv.get(m));
    v = round_to<T>(v);
    if (has) a.y[s.first + m * p.B] = from_float<T>(relu(v));
    const unsigned bits = __ballot_sync(kFullWarp, has && kept(v));
    if (lane == 0 && bits != 0u) {
      const int at = s.t + m * p.B;  // the lane's element within the block's
      atomicOr(&sh.words[at / 32], bits << (at % 32));
      if (at % 32 != 0) atomicOr(&sh.words[at / 32 + 1], bits >> (32 - at % 32));
    }
  }
  __syncthreads();
  Word* words = a.mask + (s.first - s.t) / 32;
  for (int i = s.t; i < (s.rows * p.C + 31) / 32; i += kResBlock) words[i] = sh.words[i];
}

// The forward of v15's cut, its sums added as Sums says (v15's kernel, and v30's).
template <class T, bool kAdd, class Sums>
__device__ __forceinline__ void fwd_one_cluster(const FwdArgs<T>& a, const OnePlan& p) {
  __shared__ OneShared sh;
  Sums::start();
  const OneSpot s = one_spot(p);
  float xv[kOneItems];
  OneHeld<T> rv{};  // r as it is, added in the pass
  const DSum mine = one_fwd_phase1<T, kAdd>(a, p, s, sh, xv, rv);
  Sums::sums(sh, p, mine, OneFwdDone<T>{a, p, sh, static_cast<float>(p.M)});
  one_fwd_pass<T, kAdd>(a, p, s, sh, xv, rv);
  if constexpr (Sums::kWaitAtEnd) cluster_wait();
}

template <class T, bool kAdd>
__global__ void __launch_bounds__(kResBlock, 1) fwd_v15_one_cluster_kernel(FwdArgs<T> a, OnePlan p) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  fwd_one_cluster<T, kAdd, OnePulled>(a, p);
#else
  __trap();  // clusters: sm_90 and later (the launcher runs v14 on older GPUs)
#endif
}

template <class T, bool kAdd>
void fwd_v15_one_cluster(cudaStream_t st, const FwdArgs<T>& a, void* ws) {
  check_shape(a.s, "fwd_v15_one_cluster");
  if (!launch_if_one_cluster<&fwd_v15_one_cluster_kernel<T, kAdd>>(st, a, "fwd_v15_one_cluster"))
    fwd_v14_shifted_sums<T, kAdd>(st, a, ws);
}

template <class T, bool kAdd>
std::vector<const void*> fwd_v15_kernels() {
  auto k = fwd_v14_kernels<T, kAdd>();
  k.push_back(TUT_KERNEL(fwd_v15_one_cluster_kernel<T, kAdd>));
  return k;
}

}  // namespace ch05
