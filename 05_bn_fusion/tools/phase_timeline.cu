// The timeline behind versions 4 to 6 (results/NVIDIA_H100_80GB_HBM3.phases.txt): when each block of
// the cooperative kernels leaves each phase. The probe kernels below are the kernels' bodies (the
// same device functions, in the same order) with a timestamp (%globaltimer, after a __syncthreads)
// between the phases; each is timed with events over 9 launches, the L2 flushed by a read of 128 MiB
// before each, and the median time and the last launch's stamps are printed: the earliest and the
// latest block at the start, at the end of phase 1, out of the first grid barrier, at the end of
// phase 2, out of the second barrier, and at the end. Inputs are synthetic (a hash of the index); nothing is checked:
// the GPU tests check the kernels themselves. Needs a GPU:
//   build/phase_timeline > results/<gpu>.phases.txt
#include "kernels/bwd_v5_onchip_cache.cuh"
#include "kernels/fwd_v5_onchip_cache.cuh"
#include "kernels/bwd_v6_balanced.cuh"
#include "kernels/fwd_v7_mask_bytes.cuh"
#include "kernels/fwd_v12_resident.cuh"
#include "kernels/fwd_v13_arrivals.cuh"
#include "kernels/fwd_v14_shifted_sums.cuh"
#include "kernels/bwd_v15_one_cluster.cuh"
#include "tut/timing.hpp"

#include <algorithm>
#include <cstdio>
#include <initializer_list>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

using namespace ch05;

__device__ unsigned long long g_t[6][4096];
// What each stamp marks, as printed. v12 and v13 (sets v12 and v13) stamp between the gather of the
// partials and the tree instead of at a second barrier.
const char* g_stamp_names[6] = {"start", "p1 end", "sync1 out", "p2 end", "sync2 out", "end"};
// Renames stamps first, first + 1, ... for the set about to run.
void name_stamps(int first, std::initializer_list<const char*> names) {
  for (const char* n : names) g_stamp_names[first++] = n;
}
// A shape's name in the sets' rows: "NxCxHW NHWC".
std::string nhwc_name(const Shape4& s) {
  return std::to_string(s.N) + "x" + std::to_string(s.C) + "x" + std::to_string(s.HW) + " NHWC";
}
__device__ __forceinline__ unsigned long long gtime() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
#define STAMP(k)                                   \
  do {                                             \
    __syncthreads();                               \
    if (threadIdx.x == 0) g_t[k][blockIdx.x] = gtime(); \
  } while (0)

template <int V, class T, bool kAdd, class Cache, int kU1 = kUnrollFor<V>>
__global__ void __launch_bounds__(kBlock, Cache::kMinBlocks)
    probe_fwd(FwdArgs<T> a, ChannelParams p, Welford* partials, V3Plan plan, ChannelMap map, std::int64_t main_end,
              std::int64_t tail_first, int cache_slots) {
  __shared__ Welford smem[kBlock * V];
  extern __shared__ uint4 ch05_onchip[];
  const Cache cache(ch05_onchip, cache_slots);
  cg::grid_group grid = cg::this_grid();
  STAMP(0);
  fwd_own_stats<V, T, Cache, kU1>(a, plan, partials, smem, cache);
  STAMP(1);
  grid.sync();
  STAMP(2);
  own_merge(partials, a.s.C, plan.slots, smem,
            [&](std::int64_t c, Welford total) { finish_forward_channel(a, p, static_cast<int>(c), total); });
  STAMP(3);
  grid.sync();
  STAMP(4);
  if (blockIdx.x == gridDim.x - 1 && threadIdx.x < 32)
    fwd_apply_tail<T, kAdd>(a, p, map, tail_first, static_cast<int>(threadIdx.x));
  fwd_own_pass<V, T, kAdd>(a, p, plan, cache, main_end);
  STAMP(5);
}

// Version 7's body (the half forward, a byte of the mask per pack), stamped as probe_fwd.
template <class T, bool kAdd, class Cache>
__global__ void __launch_bounds__(kBlock, Cache::kMinBlocks)
    probe_fwd7(FwdArgs<T> a, ChannelParams p, Welford* partials, V3Plan plan, ChannelMap map, std::int64_t main_end,
               std::int64_t tail_first, int cache_slots) {
  constexpr int V = 8;
  __shared__ Welford smem[kBlock * V];
  extern __shared__ uint4 ch05_onchip[];
  const Cache cache(ch05_onchip, cache_slots);
  cg::grid_group grid = cg::this_grid();
  STAMP(0);
  fwd_own_stats<V>(a, plan, partials, smem, cache);
  STAMP(1);
  grid.sync();
  STAMP(2);
  own_merge(partials, a.s.C, plan.slots, smem,
            [&](std::int64_t c, Welford total) { finish_forward_channel(a, p, static_cast<int>(c), total); });
  STAMP(3);
  grid.sync();
  STAMP(4);
  if (blockIdx.x == gridDim.x - 1 && threadIdx.x < 32)
    fwd_byte_tail<T, kAdd>(a, p, map, tail_first, static_cast<int>(threadIdx.x));
  fwd_byte_pass<T, kAdd>(a, p, plan, cache, main_end);
  STAMP(5);
}

template <int V, class T, bool kAdd, class Cache>
__global__ void __launch_bounds__(kBlock, Cache::kMinBlocks)
    probe_bwd(BwdArgs<T> a, ChannelParams p, GradSums* partials, V3Plan plan, ChannelMap map, std::int64_t tail_first,
              int cache_slots) {
  __shared__ GradSums smem[kBlock * V];
  extern __shared__ uint4 ch05_onchip[];
  const Cache cache(ch05_onchip, cache_slots);
  cg::grid_group grid = cg::this_grid();
  STAMP(0);
  bwd_own_stats<V>(a, plan, partials, smem, cache);
  STAMP(1);
  grid.sync();
  STAMP(2);
  own_merge(partials, a.s.C, plan.slots, smem,
            [&](std::int64_t c, GradSums total) { finish_backward_channel(a, p, static_cast<int>(c), total); });
  STAMP(3);
  grid.sync();
  STAMP(4);
  if (blockIdx.x == gridDim.x - 1 && threadIdx.x < 32)
    bwd_apply_tail<T, kAdd>(a, p, map, tail_first, static_cast<int>(threadIdx.x));
  bwd_own_pass<V, T, kAdd>(a, p, plan, cache);
  STAMP(5);
}

// Version 12's phases, stamped: the copies and the sums (phase 1), the one grid barrier, the merge
// every block does (phase 2; stamps 3 and 4 are the same point, there is no second barrier), the pass.
template <class T, bool kAdd>
__global__ void __launch_bounds__(kResBlock, 1) probe_fwd12(FwdArgs<T> a, ChannelParams p, float4* partials, ResPlan plan) {
  extern __shared__ __align__(128) unsigned char ch05_resident[];
  T* xs = reinterpret_cast<T*>(ch05_resident);
  __shared__ ResShared sh;
  STAMP(0);
  const int t = static_cast<int>(threadIdx.x);
  const ResChunk k = res_chunk<T>(plan);
  const float gamma = t < plan.C ? a.gamma[t] : 0.0f, beta = t < plan.C ? a.beta[t] : 0.0f;
  res_phase1<T, kAdd>(a, plan, k, xs, sh, partials);
  STAMP(1);
  cg::this_grid().sync();
  STAMP(2);
  const Welford mine = res_gather(plan, partials);
  STAMP(3);
  res_finish(a, p, plan, sh, mine, gamma, beta);
  STAMP(4);
  res_phase3<T, kAdd>(a, plan, k, xs, sh);
  STAMP(5);
}

// Version 13's phases, stamped: phase 1's sums; the block's merge and its statistics published
// (stamp 2, where v12 leaves the barrier); the gather as they arrive (stamp 3); the block's merge
// of the gathered and the pass's parameters (stamp 4); the pass. With kParts (set `parts`), stamp 2
// comes between the block's merge and the publish, so that the merge stands apart.
template <class T, bool kAdd, bool kParts = false>
__global__ void __launch_bounds__(kResBlock, 1) probe_fwd13(FwdArgs<T> a, ChannelParams p, ArrScratch s, ResPlan plan) {
  extern __shared__ __align__(128) unsigned char ch05_resident[];
  T* xs = reinterpret_cast<T*>(ch05_resident);
  __shared__ ArrShared sh;
  STAMP(0);
  const int t = static_cast<int>(threadIdx.x);
  const ResChunk k = res_chunk<T>(plan);
  const float gamma = t < plan.C ? a.gamma[t] : 0.0f, beta = t < plan.C ? a.beta[t] : 0.0f;
  const Welford w = arr_phase1<T, kAdd>(a, plan, k, xs, sh, s);
  STAMP(1);
  arr_block_merge(sh, w, plan.C, plan.G);
  if constexpr (kParts) STAMP(2);
  arr_publish(plan, sh, s);
  if constexpr (!kParts) STAMP(2);
  const Welford mine = arr_gather(plan, s, sh.tag);
  STAMP(3);
  arr_block_merge(sh, mine, plan.C, plan.G);
  arr_finish(a, p, plan, sh, gamma, beta);
  STAMP(4);
  res_phase3<T, kAdd, 4>(a, plan, k, xs, sh);
  arr_leave(s, plan.blocks, sh.tag);
  STAMP(5);
}

// v14's phases (set `parts`), stamped as probe_fwd13 with kParts: the sums; the block's sum; its
// statistics published and the gather; the block's sum of the gathered (with the parameters); the pass.
template <class T, bool kAdd>
__global__ void __launch_bounds__(kResBlock, 1) probe_fwd14_parts(FwdArgs<T> a, ChannelParams p, ArrScratch s, ResPlan plan) {
  extern __shared__ __align__(128) unsigned char ch05_resident[];
  T* xs = reinterpret_cast<T*>(ch05_resident);
  __shared__ SumShared sh;
  STAMP(0);
  const int t = static_cast<int>(threadIdx.x);
  const ResChunk k = res_chunk<T>(plan);
  const float gamma = t < plan.C ? a.gamma[t] : 0.0f, beta = t < plan.C ? a.beta[t] : 0.0f;
  const DSum mine = sum_phase1<T, kAdd>(a, plan, k, xs, sh, s);
  STAMP(1);
  dsum_block(sh, mine, plan.C, plan.G, BlockStats{sh, arr_rows(plan, static_cast<int>(blockIdx.x))});
  STAMP(2);
  arr_publish(plan, sh, s);
  const DSum acc = sum_gather(plan, s, sh.tag);
  STAMP(3);
  sum_totals(a, plan, sh, acc);
  arr_finish(a, p, plan, sh, gamma, beta);
  STAMP(4);
  res_phase3<T, kAdd, 4, SumShared>(a, plan, k, xs, sh);
  arr_leave(s, plan.blocks, sh.tag);
  STAMP(5);
}

// v14's block sum after the sums, apart (set `merge`): the sums; the groups stored (the barrier);
// the channels summed and each channel's statistics worked out (`done`: in double as v14, or with
// kFloatDone in float, without v14's double division); published; the rest of v14 to the end.
template <class T, bool kAdd, bool kFloatDone>
__global__ void __launch_bounds__(kResBlock, 1) probe_fwd14_merge(FwdArgs<T> a, ChannelParams p, ArrScratch s, ResPlan plan) {
  extern __shared__ __align__(128) unsigned char ch05_resident[];
  T* xs = reinterpret_cast<T*>(ch05_resident);
  __shared__ SumShared sh;
  STAMP(0);
  const int t = static_cast<int>(threadIdx.x), C = plan.C, G = plan.G, P = G | 1;
  const ResChunk k = res_chunk<T>(plan);
  const float gamma = t < C ? a.gamma[t] : 0.0f, beta = t < C ? a.beta[t] : 0.0f;
  const DSum mine = sum_phase1<T, kAdd>(a, plan, k, xs, sh, s);
  STAMP(1);
  if (t / C < G) {
    sh.s1[t % C * P + t / C] = mine.s1;
    sh.s2[t % C * P + t / C] = mine.s2;
  }
  STAMP(2);
  const float rows = arr_rows(plan, static_cast<int>(blockIdx.x));
  const auto done = [&](int c, double s1, double s2) {
    if constexpr (kFloatDone) {
      const float d = static_cast<float>(s1) / rows;
      sh.tot[c] = Welford{rows, d, fmaxf(0.0f, static_cast<float>(s2) - static_cast<float>(s1) * d)};
    } else {
      BlockStats{sh, rows}(c, s1, s2);
    }
  };
  if (C <= 32) dsum_channels<32>(sh, C, G, P, done);
  else dsum_channels<16>(sh, C, G, P, done);
  STAMP(3);
  arr_publish(plan, sh, s);
  STAMP(4);
  sum_totals(a, plan, sh, sum_gather(plan, s, sh.tag));
  arr_finish(a, p, plan, sh, gamma, beta);
  res_phase3<T, kAdd, 4, SumShared>(a, plan, k, xs, sh);
  arr_leave(s, plan.blocks, sh.tag);
  STAMP(5);
}

// Nothing but the stamps (set `parts`): what a launch of that grid, block and shared memory costs.
__global__ void __launch_bounds__(kResBlock, 1) probe_empty() {
  STAMP(0);
  STAMP(1);
  STAMP(2);
  STAMP(3);
  STAMP(4);
  STAMP(5);
}

// v15's steps (set `v15`), one cluster: phase 1 (every load, the thread's sums); the block's sums;
// out of the cluster barrier; the other blocks' sums read and each channel's end; the pass (the
// forward's mask words stored); the cluster's second barrier waited on. With kSplit ("split"), the
// totals step apart instead: the cluster barrier passed (stamps 1 and 2); the other blocks' sums
// copied into this block (one round: C <= 96); added, with each channel's end; the pass.
struct StampRead {
  __device__ __forceinline__ void operator()() const { STAMP(3); }
};
template <class T, bool kAdd, bool kSplit = false>
__global__ void __launch_bounds__(kResBlock, 1) probe_fwd15(FwdArgs<T> a, OnePlan p) {
  __shared__ OneShared sh;
  STAMP(0);
  const OneSpot s = one_spot(p);
  float xv[kOneItems];
  OneHeld<T> rv{};
  const DSum mine = one_fwd_phase1<T, kAdd>(a, p, s, sh, xv, rv);
  if constexpr (!kSplit) STAMP(1);
  one_block_sums(sh, p, mine);
  if constexpr (!kSplit) STAMP(2);
  one_cluster_barrier();
  const OneFwdDone<T> done{a, p, sh, static_cast<float>(p.M)};
  if constexpr (kSplit) {
    STAMP(1);
    STAMP(2);
    one_cluster_totals(sh, p, done, StampRead{});
  } else {
    STAMP(3);
    one_cluster_totals(sh, p, done);
  }
  STAMP(4);
  one_fwd_pass<T, kAdd>(a, p, s, sh, xv, rv);
  cluster_wait();
  STAMP(5);
}

template <class T, bool kAdd>
__global__ void __launch_bounds__(kResBlock, 1) probe_bwd15(BwdArgs<T> a, OnePlan p) {
  __shared__ OneShared sh;
  STAMP(0);
  const OneSpot s = one_spot(p);
  OneBwdHeld h;
  const DSum mine = one_bwd_phase1(a, p, s, sh, h);
  STAMP(1);
  one_block_sums(sh, p, mine);
  STAMP(2);
  one_cluster_barrier();
  STAMP(3);
  one_cluster_totals(sh, p, OneBwdDone<T>{a, p, sh, static_cast<float>(p.M)});
  STAMP(4);
  one_bwd_pass<T, kAdd>(a, p, s, sh, h);
  cluster_wait();
  STAMP(5);
}

// Every launch is timed by tut::time_kernel: 9 repetitions, none before them, the median; with
// `flush`, tut::L2Flush reads 128 MiB before each (more than twice the H100's L2).
template <class Launch>
double median_ms(Launch launch, bool flush) {
  tut::TimingOptions opt;
  opt.warmup = 0;
  opt.reps = 9;
  opt.flush_bytes = flush ? std::size_t{128} << 20 : 0;
  return tut::time_kernel([&](cudaStream_t) { launch(); }, opt).median;
}

template <int V, class T, bool kAdd, class Cache>
__global__ void __launch_bounds__(kBlock, Cache::kMinBlocks)
    probe_fwd6(FwdArgs<T> a, ChannelParams p, Welford* partials, V3Plan plan, ChannelMap map, std::int64_t main_end,
               std::int64_t tail_first, int cache_slots, TicketPlan tp, unsigned long long* queues) {
  __shared__ Welford smem[kBlock * V];
  extern __shared__ uint4 ch05_onchip[];
  const Cache cache(ch05_onchip, cache_slots);
  cg::grid_group grid = cg::this_grid();
  if (blockIdx.x == 0 && threadIdx.x < kWarps) queues[threadIdx.x] = 0;
  STAMP(0);
  fwd_own_stats<V>(a, plan, partials, smem, cache);
  STAMP(1);
  grid.sync();
  STAMP(2);
  batched_merge(
      partials, a.s.C, plan.slots, smem, [&](std::int64_t c) { return fwd_channel_in(a, c); },
      [&](std::int64_t c, Welford total, const FwdChannelIn& in) { finish_forward_channel(a, p, static_cast<int>(c), total, in); });
  STAMP(3);
  grid.sync();
  STAMP(4);
  if (blockIdx.x == gridDim.x - 1 && threadIdx.x < 32)
    fwd_apply_tail<T, kAdd>(a, p, map, tail_first, static_cast<int>(threadIdx.x));
  fwd_balanced_pass<V, T, kAdd>(a, p, plan, cache, main_end, tp, queues);
  STAMP(5);
}

template <int V, class T, bool kAdd, class Cache>
__global__ void __launch_bounds__(kBlock, Cache::kMinBlocks)
    probe_bwd6(BwdArgs<T> a, ChannelParams p, GradSums* partials, V3Plan plan, ChannelMap map, std::int64_t tail_first,
               int cache_slots, TicketPlan tp, unsigned long long* queues) {
  __shared__ GradSums smem[kBlock * V];
  extern __shared__ uint4 ch05_onchip[];
  const Cache cache(ch05_onchip, cache_slots);
  cg::grid_group grid = cg::this_grid();
  if (blockIdx.x == 0 && threadIdx.x < kWarps) queues[threadIdx.x] = 0;
  STAMP(0);
  bwd_own_stats<V>(a, plan, partials, smem, cache);
  STAMP(1);
  grid.sync();
  STAMP(2);
  batched_merge(
      partials, a.s.C, plan.slots, smem, [&](std::int64_t c) { return bwd_channel_in(a, c); },
      [&](std::int64_t c, GradSums total, const BwdChannelIn& in) { finish_backward_channel(a, p, static_cast<int>(c), total, in); });
  STAMP(3);
  grid.sync();
  STAMP(4);
  if (blockIdx.x == gridDim.x - 1 && threadIdx.x < 32)
    bwd_apply_tail<T, kAdd>(a, p, map, tail_first, static_cast<int>(threadIdx.x));
  bwd_balanced_pass<V, T, kAdd>(a, p, plan, cache, tp, queues);
  STAMP(5);
}

template <class T>
__global__ void fill(T* x, std::int64_t n, float lo, float hi, unsigned seed) {
  for (std::int64_t i = blockIdx.x * (std::int64_t)blockDim.x + threadIdx.x; i < n; i += (std::int64_t)gridDim.x * blockDim.x) {
    unsigned h = (unsigned)i * 2654435761u ^ seed;
    h ^= h >> 15; h *= 0x2c1b3c6du; h ^= h >> 12; h *= 0x297a2d39u; h ^= h >> 15;
    x[i] = (T)(lo + (hi - lo) * (h * (1.0f / 4294967296.0f)));
  }
}

void report(const char* what, double ms, int grid) {
  std::vector<unsigned long long> t(6 * 4096);
  TUT_CUDA(cudaMemcpyFromSymbol(t.data(), g_t, sizeof(unsigned long long) * 6 * 4096));
  auto col = [&](int k) { return std::vector<unsigned long long>(t.begin() + k * 4096, t.begin() + k * 4096 + grid); };
  const auto t0 = col(0);
  const unsigned long long T0 = *std::min_element(t0.begin(), t0.end());
  auto mn = [&](int k) { auto c = col(k); return (*std::min_element(c.begin(), c.end()) - T0) / 1000.0; };
  auto mx = [&](int k) { auto c = col(k); return (*std::max_element(c.begin(), c.end()) - T0) / 1000.0; };
  std::printf("%-44s %8.1f us", what, ms * 1000);
  for (int k = 0; k < 6; ++k) std::printf(" | %s %.1f-%.1f", g_stamp_names[k], mn(k), mx(k));
  std::printf("\n");
}

// A probe kernel launched cooperatively, timed, and its last launch's stamps reported.
void time_probe(const char* name, const void* kernel, int grid, std::size_t dyn, void** args, int slots, bool flush,
                int block = kBlock) {
  const double ms = median_ms([&] { TUT_CUDA(cudaLaunchCooperativeKernel(kernel, grid, block, args, dyn, nullptr)); }, flush);
  char buf[128];
  std::snprintf(buf, sizeof buf, "%s grid %d slots %d", name, grid, slots);
  report(buf, ms, grid);
}

template <class T>
struct Buffers {
  std::int64_t n, C;
  T *x, *y, *dy, *dx, *r;
  Word* mask;
  float *gamma, *beta, *rm, *rv, *sm, *si, *dg, *db;
  void* ws;
  // A forward over these buffers, shape s.
  FwdArgs<T> fwd_args(Shape4 s) const {
    FwdArgs<T> a;
    a.s = s; a.x = x; a.y = y; a.mask = mask; a.gamma = gamma; a.beta = beta; a.running_mean = rm;
    a.running_var = rv; a.saved_mean = sm; a.saved_invstd = si;
    return a;
  }
  Buffers(std::int64_t n_, std::int64_t C_) : n(n_), C(C_) {
    TUT_CUDA(cudaMalloc(&x, n * sizeof(T)));
    TUT_CUDA(cudaMalloc(&y, n * sizeof(T)));
    TUT_CUDA(cudaMalloc(&dy, n * sizeof(T)));
    TUT_CUDA(cudaMalloc(&dx, n * sizeof(T)));
    TUT_CUDA(cudaMalloc(&mask, (n / 32 + 1) * 4));
    float** f[] = {&gamma, &beta, &rm, &rv, &sm, &si, &dg, &db};
    for (auto p : f) TUT_CUDA(cudaMalloc(p, C * sizeof(float)));
    TUT_CUDA(cudaMalloc(&ws, 64 << 20));
    TUT_CUDA(cudaMemset(ws, 0, 64 << 20));
    fill<<<1024, 256>>>(x, n, -3, 3, 1);
    fill<<<1024, 256>>>(dy, n, -1, 1, 2);
    fill<<<1024, 256>>>(mask, n / 32 + 1, 0, 4e9f, 3);
    fill<<<64, 256>>>(gamma, C, 0.5, 1.5, 4);
    fill<<<64, 256>>>(beta, C, -0.5, 0.5, 5);
    fill<<<64, 256>>>(rm, C, -1, 1, 6);
    fill<<<64, 256>>>(rv, C, 0.5, 2, 7);
    fill<<<64, 256>>>(sm, C, -0.1, 0.1, 8);
    fill<<<64, 256>>>(si, C, 0.5, 0.6, 9);
    TUT_CUDA(cudaDeviceSynchronize());
  }
};

template <class T>
void run_v3(const char* name, Buffers<T>& b, Shape4 s, bool fwd, bool flush = true) {
  FwdArgs<T> a = b.fwd_args(s);
  BwdArgs<T> g;
  g.s = s; g.dy = b.dy; g.x = b.x; g.gamma = b.gamma; g.saved_mean = b.sm; g.saved_invstd = b.si; g.mask = b.mask;
  g.dx = b.dx; g.dgamma = b.dg; g.dbeta = b.db;
  const double ms = median_ms(
      [&] {
        if (fwd) fwd_v3_single_read<T, false>(nullptr, a, b.ws);
        else bwd_v3_single_read<T, false>(nullptr, g, b.ws);
      },
      flush);
  std::printf("%-44s %8.1f us\n", name, ms * 1000);
}

// slots < 0: the budget v5's launcher computes (onchip_budget, onchip_slots).
template <int V, class T, bool kAdd, class Cache, int kU1 = kUnrollFor<V>>
void run_fwd(const char* name, Buffers<T>& b, Shape4 s, int slots, bool flush = true) {
  FwdArgs<T> a = b.fwd_args(s);
  const void* kernel = reinterpret_cast<const void*>(&probe_fwd<V, T, kAdd, Cache, kU1>);
  if (slots < 0) slots = onchip_slots(onchip_budget(kernel, 16, Cache::kMinBlocks), s, V, Cache::kMinBlocks);
  const std::size_t dyn = static_cast<std::size_t>(slots) * 16 * kBlock;
  TUT_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)dyn));
  const int grid = own_grid<Cache>(kernel, dyn, name);
  V3Plan plan = v3_plan(s, V, grid);
  const Scratch sc(s.C, v3_partial_bytes(s, V, sizeof(Welford)), 0);
  ChannelParams p = sc.params_at(b.ws);
  Welford* partials = sc.partials_at<Welford>(b.ws);
  ChannelMap map(s);
  std::int64_t main_end = own_main_end(s, V);
  std::int64_t tail_first = s.layout == Layout::nchw ? s.numel() : main_end * plan.nhwc.L;
  void* args[] = {&a, &p, &partials, &plan, &map, &main_end, &tail_first, &slots};
  time_probe(name, kernel, grid, dyn, args, slots, flush);
}

template <class T, bool kAdd, class Cache>
void run_fwd7(const char* name, Buffers<T>& b, Shape4 s, bool flush = true) {
  constexpr int V = 8;
  FwdArgs<T> a = b.fwd_args(s);
  const void* kernel = reinterpret_cast<const void*>(&probe_fwd7<T, kAdd, Cache>);
  int slots = onchip_slots(onchip_budget(kernel, 16, Cache::kMinBlocks), s, V, Cache::kMinBlocks);
  const std::size_t dyn = static_cast<std::size_t>(slots) * 16 * kBlock;
  const int grid = own_grid<Cache>(kernel, dyn, name);
  V3Plan plan = v3_plan(s, V, grid);
  const Scratch sc(s.C, v3_partial_bytes(s, V, sizeof(Welford)), 0);
  ChannelParams p = sc.params_at(b.ws);
  Welford* partials = sc.partials_at<Welford>(b.ws);
  ChannelMap map(s);
  std::int64_t main_end = s.layout == Layout::nchw ? s.per_channel() / V : plan.nhwc.q_full / plan.nhwc.P;
  std::int64_t tail_first = s.layout == Layout::nchw ? s.numel() : main_end * plan.nhwc.L;
  void* args[] = {&a, &p, &partials, &plan, &map, &main_end, &tail_first, &slots};
  time_probe(name, kernel, grid, dyn, args, slots, flush);
}

template <class T, bool kAdd>
void run_fwd12(const char* name, Buffers<T>& b, Shape4 s, bool flush = true) {
  FwdArgs<T> a = b.fwd_args(s);
  const void* kernel = reinterpret_cast<const void*>(&probe_fwd12<T, kAdd>);
  ResPlan plan = res_plan(s, device_limits().sm_count);
  const std::size_t dyn = static_cast<std::size_t>(plan.chunk) * sizeof(T);
  TUT_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)dyn));
  const Scratch sc(s.C, res_partial_bytes(s), 0);
  ChannelParams p = sc.params_at(b.ws);
  float4* partials = sc.partials_at<float4>(b.ws);
  void* args[] = {&a, &p, &partials, &plan};
  time_probe(name, kernel, plan.blocks, dyn, args, static_cast<int>(plan.chunk), flush, kResBlock);
}

template <int V, class T, bool kAdd, class Cache>
void run_bwd(const char* name, Buffers<T>& b, Shape4 s, int slots, bool flush = true) {
  BwdArgs<T> a;
  a.s = s; a.dy = b.dy; a.x = b.x; a.gamma = b.gamma; a.saved_mean = b.sm; a.saved_invstd = b.si; a.mask = b.mask;
  a.dx = b.dx; a.dgamma = b.dg; a.dbeta = b.db;
  const void* kernel = reinterpret_cast<const void*>(&probe_bwd<V, T, kAdd, Cache>);
  const std::size_t dyn = static_cast<std::size_t>(slots) * 32 * kBlock;
  TUT_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)dyn));
  const int grid = own_grid<Cache>(kernel, dyn, name);
  V3Plan plan = v3_plan(s, V, grid);
  const Scratch sc(s.C, v3_partial_bytes(s, V, sizeof(GradSums)), 0);
  ChannelParams p = sc.params_at(b.ws);
  GradSums* partials = sc.partials_at<GradSums>(b.ws);
  ChannelMap map(s);
  std::int64_t tail_first = s.layout == Layout::nchw ? s.numel() : plan.nhwc.q_full * V;
  void* args[] = {&a, &p, &partials, &plan, &map, &tail_first, &slots};
  time_probe(name, kernel, grid, dyn, args, slots, flush);
}

template <int V, class T, bool kAdd, class Cache>
void run_fwd6(const char* name, Buffers<T>& b, Shape4 s, int slots, bool flush = true) {
  FwdArgs<T> a = b.fwd_args(s);
  const void* kernel = reinterpret_cast<const void*>(&probe_fwd6<V, T, kAdd, Cache>);
  const std::size_t dyn = static_cast<std::size_t>(slots) * 16 * kBlock;
  TUT_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)dyn));
  const int grid = own_grid<Cache>(kernel, dyn, name);
  V3Plan plan = v3_plan(s, V, grid);
  const Scratch sc = v6_scratch<T, Welford>(s);
  ChannelParams p = sc.params_at(b.ws);
  Welford* partials = sc.partials_at<Welford>(b.ws);
  auto* queues = static_cast<unsigned long long*>(sc.buffer_at(b.ws));
  ChannelMap map(s);
  std::int64_t main_end = own_main_end(s, V);
  std::int64_t tail_first = s.layout == Layout::nchw ? s.numel() : main_end * plan.nhwc.L;
  TicketPlan tp = ticket_plan(s, plan, V, slots, main_end);
  void* args[] = {&a, &p, &partials, &plan, &map, &main_end, &tail_first, &slots, &tp, &queues};
  time_probe(name, kernel, grid, dyn, args, slots, flush);
}

template <int V, class T, bool kAdd, class Cache>
void run_bwd6(const char* name, Buffers<T>& b, Shape4 s, int slots, bool flush = true) {
  BwdArgs<T> a;
  a.s = s; a.dy = b.dy; a.x = b.x; a.gamma = b.gamma; a.saved_mean = b.sm; a.saved_invstd = b.si; a.mask = b.mask;
  a.dx = b.dx; a.dgamma = b.dg; a.dbeta = b.db;
  const void* kernel = reinterpret_cast<const void*>(&probe_bwd6<V, T, kAdd, Cache>);
  const std::size_t dyn = static_cast<std::size_t>(slots) * 32 * kBlock;
  TUT_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)dyn));
  const int grid = own_grid<Cache>(kernel, dyn, name);
  V3Plan plan = v3_plan(s, V, grid);
  const Scratch sc = v6_scratch<T, GradSums>(s);
  ChannelParams p = sc.params_at(b.ws);
  GradSums* partials = sc.partials_at<GradSums>(b.ws);
  auto* queues = static_cast<unsigned long long*>(sc.buffer_at(b.ws));
  ChannelMap map(s);
  std::int64_t tail_first = s.layout == Layout::nchw ? s.numel() : plan.nhwc.q_full * V;
  TicketPlan tp = ticket_plan(s, plan, V, slots, std::numeric_limits<std::int64_t>::max());
  void* args[] = {&a, &p, &partials, &plan, &map, &tail_first, &slots, &tp, &queues};
  time_probe(name, kernel, grid, dyn, args, slots, flush);
}

// `sweep`: v3, and v4 and v5 at 2, 3 and 4 blocks per SM (float, NHWC and NCHW); `v6`: v5 against v6;
template <class T, bool kAdd>
void run_fwd13(const char* name, Buffers<T>& b, Shape4 s, bool flush = true) {
  FwdArgs<T> a = b.fwd_args(s);
  const void* kernel = reinterpret_cast<const void*>(&probe_fwd13<T, kAdd>);
  ResPlan plan = res_plan(s, device_limits().sm_count);
  const std::size_t dyn = static_cast<std::size_t>(plan.chunk) * sizeof(T);
  TUT_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)dyn));
  ChannelParams p = Scratch(s.C, 0, 0).params_at(b.ws);
  ArrScratch sc = arr_scratch(b.ws, arr_offset<T>(s), s);
  void* args[] = {&a, &p, &sc, &plan};
  time_probe(name, kernel, plan.blocks, dyn, args, static_cast<int>(plan.chunk), flush, kResBlock);
}
// `kernel`: a probe with v13's arguments (probe_fwd13<T, kAdd, true> by default).
template <class T, bool kAdd, bool k14 = false>
void run_fwd13_parts(const char* name, Buffers<T>& b, Shape4 s, bool flush = true, const void* kernel = nullptr) {
  FwdArgs<T> a = b.fwd_args(s);
  if (!kernel)
    kernel = k14 ? reinterpret_cast<const void*>(&probe_fwd14_parts<T, kAdd>)
                 : reinterpret_cast<const void*>(&probe_fwd13<T, kAdd, true>);
  ResPlan plan = res_plan(s, device_limits().sm_count);
  const std::size_t dyn = static_cast<std::size_t>(plan.chunk) * sizeof(T);
  TUT_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)dyn));
  ChannelParams p = Scratch(s.C, 0, 0).params_at(b.ws);
  ArrScratch sc = arr_scratch(b.ws, arr_offset<T>(s), s);
  void* args[] = {&a, &p, &sc, &plan};
  time_probe(name, kernel, plan.blocks, dyn, args, static_cast<int>(plan.chunk), flush, kResBlock);
}
// The empty probe on v13's grid and shared memory for shape s (`dyn` 0: none), launched
// cooperatively (as v13 is) and, with `plain`, with <<< >>>.
template <class T>
void run_empty(const char* name, Shape4 s, bool smem, bool plain, bool flush = true) {
  const void* kernel = reinterpret_cast<const void*>(&probe_empty);
  ResPlan plan = res_plan(s, device_limits().sm_count);
  const std::size_t dyn = smem ? static_cast<std::size_t>(plan.chunk) * sizeof(T) : 0;
  TUT_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)dyn));
  void* none[1] = {nullptr};
  if (!plain) return time_probe(name, kernel, plan.blocks, dyn, none, static_cast<int>(dyn), flush, kResBlock);
  const double ms = median_ms([&] { probe_empty<<<plan.blocks, kResBlock, dyn>>>(); TUT_CUDA(cudaGetLastError()); }, flush);
  char buf[128];
  std::snprintf(buf, sizeof buf, "%s grid %d slots %d", name, plan.blocks, static_cast<int>(dyn));
  report(buf, ms, plan.blocks);
}
// v15's probes, launched as v15 launches: one cluster of v15's plan on this device, with `args` and
// the plan; with no args, the empty probe as the same cluster. "slots": the values per thread.
template <auto Kernel, class... Args>
void run_one_cluster(const char* name, Shape4 s, bool flush, Args... args) {
  const auto p = one_plan(s, one_cluster_blocks<Kernel>(s.C));
  if (!p) throw std::invalid_argument(std::string(name) + ": v15 does not take this shape");
  const double ms = median_ms(
      [&] {
        if constexpr (sizeof...(Args) == 0) launch_one_cluster(Kernel, *p, 0, nullptr, name);
        else launch_one_cluster(Kernel, *p, 0, nullptr, name, args..., *p);
      },
      flush);
  char buf[128];
  std::snprintf(buf, sizeof buf, "%s grid %d slots %d", name, p->K, p->items);
  report(buf, ms, p->K);
}

// `half`: the half forward in NHWC, v3 to v5 at 2 to 4 blocks per SM, with phase 1 loading 2 packs
// of 8 (32 bytes, as the versions do: `u2`), 4 (`u4`) or 8 (`u8`) before it adds the first; v7.
int main(int argc, char** argv) {
  const std::string set = argc > 1 ? argv[1] : "sweep";
  if (set != "sweep" && set != "v6" && set != "half" && set != "v12" && set != "v13" && set != "parts" && set != "merge" &&
      set != "v15" && set != "blocks") {
    std::fprintf(stderr, "usage: phase_timeline [sweep|v6|half|v12|v13|parts|merge|v15|blocks]\n");
    return 2;
  }
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA device\n");
    return 77;
  }
  const Shape4 big{64, 64, 112 * 112, Layout::nhwc}, small{16, 32, 112 * 112, Layout::nhwc};
  const Shape4 bigc{64, 64, 112 * 112, Layout::nchw};
  if (set == "blocks") {  // v4 and v5 at 4, 3 and 2 blocks per SM, phase 1 unrolled further (p1u8, p1u4), large shapes
    const Shape4 mid{128, 64, 56 * 56, Layout::nhwc};
    Buffers<float> b(big.numel(), 64);
    for (const Shape4& s : {big, bigc, mid}) {
      const std::string n = (s.N == 64 ? std::string("64x64 ") : std::string("128x64x56x56 ")) +
                            (s.layout == Layout::nhwc ? "NHWC" : "NCHW");
      run_v3(("fwd f32 " + n + " v3").c_str(), b, s, true);
      run_fwd<4, float, false, NoCache<4>>(("fwd f32 " + n + " v4<4>").c_str(), b, s, 0);
      run_fwd<4, float, false, NoCache<3>>(("fwd f32 " + n + " v4<3>").c_str(), b, s, 0);
      run_fwd<4, float, false, NoCache<2>>(("fwd f32 " + n + " v4<2>").c_str(), b, s, 0);
      run_fwd<4, float, false, NoCache<3>, 8>(("fwd f32 " + n + " v4<3> p1u8").c_str(), b, s, 0);
      run_fwd<4, float, false, NoCache<2>, 8>(("fwd f32 " + n + " v4<2> p1u8").c_str(), b, s, 0);
      run_fwd<4, float, false, SmemCache<float, 1, 3>>(("fwd f32 " + n + " v5<3>").c_str(), b, s, -1);
    }
    Buffers<__half> h(big.numel(), 64);
    run_fwd<8, __half, false, NoCache<3>>("fwd f16 64x64 NHWC v4<3>", h, big, 0);
    run_fwd<8, __half, false, NoCache<2>>("fwd f16 64x64 NHWC v4<2>", h, big, 0);
    run_fwd<8, __half, false, NoCache<2>, 4>("fwd f16 64x64 NHWC v4<2> p1u4", h, big, 0);
    return 0;
  }
  if (set == "half") {
    Buffers<__half> h(big.numel(), 64);
    run_v3("fwd f16 64x64 NHWC v3", h, big, true);
    run_fwd<8, __half, false, NoCache<3>>("fwd f16 64x64 NHWC v4<3> u2", h, big, 0);
    run_fwd<8, __half, false, NoCache<3>, 4>("fwd f16 64x64 NHWC v4<3> u4", h, big, 0);
    run_fwd<8, __half, false, SmemCache<__half, 1, 3>>("fwd f16 64x64 NHWC v5<3> u2", h, big, -1);
    run_fwd<8, __half, false, SmemCache<__half, 1, 3>, 4>("fwd f16 64x64 NHWC v5<3> u4", h, big, -1);
    run_fwd<8, __half, false, SmemCache<__half, 1, 2>>("fwd f16 64x64 NHWC v5<2> u2", h, big, -1);
    run_fwd<8, __half, false, SmemCache<__half, 1, 2>, 4>("fwd f16 64x64 NHWC v5<2> u4", h, big, -1);
    run_fwd<8, __half, false, SmemCache<__half, 1, 2>, 8>("fwd f16 64x64 NHWC v5<2> u8", h, big, -1);
    run_fwd<8, __half, false, SmemCache<__half, 1, 4>>("fwd f16 64x64 NHWC v5<4> u2", h, big, -1);
    run_fwd<8, __half, false, SmemCache<__half, 1, 4>, 4>("fwd f16 64x64 NHWC v5<4> u4", h, big, -1);
    run_fwd<8, __half, false, SmemCache<__half, 1, 3>>("fwd f16 64x64 NHWC v5<3> u2 s0", h, big, 0);
    run_fwd<8, __half, false, SmemCache<__half, 1, 3>, 4>("fwd f16 64x64 NHWC v5<3> u4 s0", h, big, 0);
    run_fwd7<__half, false, SmemCache<__half, 1, 3>>("fwd f16 64x64 NHWC v7<3>", h, big);
    run_fwd7<__half, false, SmemCache<__half, 1, 2>>("fwd f16 64x64 NHWC v7<2>", h, big);
    run_fwd<8, __half, false, SmemCache<__half, 1, 3>>("fwd f16 16x32 NHWC v5<3> flush", h, small, -1);
    run_fwd7<__half, false, SmemCache<__half, 1, 3>>("fwd f16 16x32 NHWC v7<3> flush", h, small);
    return 0;
  }
  if (set == "v12" || set == "v13") {
    name_stamps(2, {set == "v12" ? "sync out" : "sync out|published", "gathered", "merged"});
  }
  if (set == "v15") {  // v15's steps at 4x33x17x19 and 2x1x30x31 NHWC, beside an empty cluster of the same blocks
    name_stamps(1, {"loads+sums", "block sums", "cluster barrier", "totals"});
    const Shape4 c33{4, 33, 17 * 19, Layout::nhwc}, c1{2, 1, 30 * 31, Layout::nhwc};
    Buffers<float> f(c33.numel(), 64);
    Buffers<__half> h(c33.numel(), 64);
    for (const Shape4& s : {c33, c1}) {
      const std::string n = nhwc_name(s);
      BwdArgs<float> g;
      g.s = s; g.dy = f.dy; g.x = f.x; g.gamma = f.gamma; g.saved_mean = f.sm; g.saved_invstd = f.si; g.mask = f.mask;
      g.dx = f.dx; g.dgamma = f.dg; g.dbeta = f.db;
      run_one_cluster<&probe_fwd15<float, false>>(("fwd f32 " + n + " v15").c_str(), s, true, f.fwd_args(s));
      run_one_cluster<&probe_fwd15<float, false>>(("fwd f32 " + n + " v15 warm").c_str(), s, false, f.fwd_args(s));
      run_one_cluster<&probe_bwd15<float, false>>(("bwd f32 " + n + " v15").c_str(), s, true, g);
      run_one_cluster<&probe_fwd15<__half, false>>(("fwd f16 " + n + " v15").c_str(), s, true, h.fwd_args(s));
      name_stamps(1, {"cluster barrier", "cluster barrier", "copied"});
      run_one_cluster<&probe_fwd15<float, false, true>>(("fwd f32 " + n + " v15 split").c_str(), s, true, f.fwd_args(s));
      name_stamps(1, {"loads+sums", "block sums", "cluster barrier"});
      run_one_cluster<&probe_empty>(("empty " + n + " one cluster").c_str(), s, true);
      run_one_cluster<&probe_empty>(("empty " + n + " one cluster warm").c_str(), s, false);
    }
    return 0;
  }
  if (set == "merge") {  // v14's block sum after the sums, apart; "slots": the chunk in elements
    name_stamps(1, {"sums", "stored", "summed", "published"});
    const Shape4 c3{8, 3, 224 * 224, Layout::nhwc}, c33{4, 33, 17 * 19, Layout::nhwc};
    Buffers<float> f(small.numel(), 64);
    for (const Shape4& s : {small, c3, c33}) {
      const std::string n = nhwc_name(s);
      run_fwd13_parts<float, false, true>(("fwd f32 " + n + " v14 parts").c_str(), f, s);
      run_fwd13_parts<float, false>(("fwd f32 " + n + " v14 merge, double done").c_str(), f, s, true,
                                    reinterpret_cast<const void*>(&probe_fwd14_merge<float, false, false>));
      run_fwd13_parts<float, false>(("fwd f32 " + n + " v14 merge, float done").c_str(), f, s, true,
                                    reinterpret_cast<const void*>(&probe_fwd14_merge<float, false, true>));
    }
    return 0;
  }
  if (set == "parts") {  // v13's merges apart, and an empty launch; "slots": the chunk (elements) or the empty's bytes
    name_stamps(1, {"sums", "merged", "gathered", "merged"});
    const Shape4 c3{8, 3, 224 * 224, Layout::nhwc}, c33{4, 33, 17 * 19, Layout::nhwc}, c64{16, 64, 56 * 56, Layout::nhwc};
    Buffers<float> f(small.numel(), 64);
    for (const Shape4& s : {small, c64, c3, c33}) {
      const std::string n = nhwc_name(s);
      run_fwd13<float, false>(("fwd f32 " + n + " v13").c_str(), f, s);
      run_fwd13_parts<float, false>(("fwd f32 " + n + " v13 parts").c_str(), f, s);
      run_fwd13_parts<float, false, true>(("fwd f32 " + n + " v14 parts").c_str(), f, s);
      run_empty<float>(("empty " + n + " coop smem").c_str(), s, true, false);
      run_empty<float>(("empty " + n + " plain").c_str(), s, false, true);
    }
    run_fwd13_parts<float, false>("fwd f32 8x3x50176 NHWC v13 parts warm", f, c3, false);
    run_fwd13_parts<float, false, true>("fwd f32 8x3x50176 NHWC v14 parts warm", f, c3, false);
    Buffers<__half> h(small.numel(), 64);
    run_fwd13_parts<__half, false>("fwd f16 16x32x12544 NHWC v13 parts", h, small);
    run_fwd13_parts<__half, false, true>("fwd f16 16x32x12544 NHWC v14 parts", h, small);
    run_empty<float>("empty 8x3x50176 NHWC coop smem warm", c3, true, false, false);
    run_empty<float>("empty 8x3x50176 NHWC plain warm", c3, false, true, false);
    return 0;
  }
  if (set == "v12") {  // "slots" in these lines is v12's chunk, in elements
    const Shape4 c3{8, 3, 224 * 224, Layout::nhwc};
    Buffers<float> f(small.numel(), 64);
    Buffers<__half> h(small.numel(), 64);
    run_fwd<4, float, false, SmemCache<float, 1, 4>>("fwd f32 16x32 NHWC v5<4> flush", f, small, 10);
    run_fwd12<float, false>("fwd f32 16x32 NHWC v12 flush", f, small);
    run_fwd12<float, false>("fwd f32 16x32 NHWC v12 warm", f, small, false);
    run_fwd12<__half, false>("fwd f16 16x32 NHWC v12 flush", h, small);
    run_fwd12<float, false>("fwd f32 8x3x224x224 NHWC v12 flush", f, c3);
    return 0;
  }
  if (set == "v13") {  // v12 beside v13, in the same run; "slots" is the chunk, in elements
    const Shape4 c3{8, 3, 224 * 224, Layout::nhwc};
    Buffers<float> f(small.numel(), 64);
    Buffers<__half> h(small.numel(), 64);
    run_fwd12<float, false>("fwd f32 16x32 NHWC v12 flush", f, small);
    run_fwd13<float, false>("fwd f32 16x32 NHWC v13 flush", f, small);
    run_fwd12<float, false>("fwd f32 16x32 NHWC v12 warm", f, small, false);
    run_fwd13<float, false>("fwd f32 16x32 NHWC v13 warm", f, small, false);
    run_fwd12<__half, false>("fwd f16 16x32 NHWC v12 flush", h, small);
    run_fwd13<__half, false>("fwd f16 16x32 NHWC v13 flush", h, small);
    run_fwd12<float, false>("fwd f32 8x3x224x224 NHWC v12 flush", f, c3);
    run_fwd13<float, false>("fwd f32 8x3x224x224 NHWC v13 flush", f, c3);
    return 0;
  }
  Buffers<float> b(big.numel(), 64);
  if (set == "sweep") {
    run_v3("fwd f32 64x64 NHWC v3", b, big, true);
    run_fwd<4, float, false, NoCache<4>>("fwd f32 64x64 NHWC v4<4>", b, big, 0);
    run_fwd<4, float, false, NoCache<2>>("fwd f32 64x64 NHWC v4<2>", b, big, 0);
    run_fwd<4, float, false, SmemCache<float, 1, 4>>("fwd f32 64x64 NHWC v5<4>", b, big, 10);
    run_fwd<4, float, false, SmemCache<float, 1, 3>>("fwd f32 64x64 NHWC v5<3>", b, big, 15);
    run_fwd<4, float, false, SmemCache<float, 1, 2>>("fwd f32 64x64 NHWC v5<2>", b, big, 25);
    run_fwd<4, float, false, SmemCache<float, 1, 2>>("fwd f32 64x64 NHWC v5<2> s0", b, big, 0);
    run_v3("fwd f32 64x64 NCHW v3", b, bigc, true);
    run_fwd<4, float, false, NoCache<4>>("fwd f32 64x64 NCHW v4<4>", b, bigc, 0);
    run_fwd<4, float, false, SmemCache<float, 1, 4>>("fwd f32 64x64 NCHW v5<4>", b, bigc, 10);
    run_v3("fwd f32 16x32 NHWC v3 flush", b, small, true);
    run_fwd<4, float, false, NoCache<4>>("fwd f32 16x32 NHWC v4<4> flush", b, small, 0);
    run_fwd<4, float, false, SmemCache<float, 1, 4>>("fwd f32 16x32 NHWC v5<4> flush", b, small, 10);
    run_fwd<4, float, false, SmemCache<float, 1, 2>>("fwd f32 16x32 NHWC v5<2> flush", b, small, 24);
    run_v3("fwd f32 16x32 NHWC v3 warm", b, small, true, false);
    run_fwd<4, float, false, NoCache<4>>("fwd f32 16x32 NHWC v4<4> warm", b, small, 0, false);
    run_fwd<4, float, false, SmemCache<float, 1, 4>>("fwd f32 16x32 NHWC v5<4> warm", b, small, 10, false);
    run_v3("bwd f32 64x64 NHWC v3", b, big, false);
    run_bwd<4, float, false, NoCache<3>>("bwd f32 64x64 NHWC v4<3>", b, big, 0);
    run_bwd<4, float, false, NoCache<4>>("bwd f32 64x64 NHWC v4<4>", b, big, 0);
    run_bwd<4, float, false, SmemCache<float, 2, 3>>("bwd f32 64x64 NHWC v5<3>", b, big, 8);
    run_bwd<4, float, false, SmemCache<float, 2, 2>>("bwd f32 64x64 NHWC v5<2>", b, big, 13);
    run_bwd<4, float, false, SmemCache<float, 2, 4>>("bwd f32 64x64 NHWC v5<4>", b, big, 5);
    run_v3("bwd f32 64x64 NCHW v3", b, bigc, false);
    run_bwd<4, float, false, NoCache<3>>("bwd f32 64x64 NCHW v4<3>", b, bigc, 0);
    run_bwd<4, float, false, SmemCache<float, 2, 3>>("bwd f32 64x64 NCHW v5<3>", b, bigc, 8);
  } else {
    run_fwd<4, float, false, SmemCache<float, 1, 3>>("fwd f32 64x64 NHWC v5<3>", b, big, 15);
    run_fwd6<4, float, false, SmemCache<float, 1, 3>>("fwd f32 64x64 NHWC v6", b, big, 15);
    run_fwd<4, float, false, SmemCache<float, 1, 4>>("fwd f32 64x64 NCHW v5<4>", b, bigc, 10);
    run_fwd6<4, float, false, SmemCache<float, 1, 3>>("fwd f32 64x64 NCHW v6", b, bigc, 15);
    run_fwd<4, float, false, SmemCache<float, 1, 4>>("fwd f32 16x32 NHWC v5<4> flush", b, small, 10);
    run_fwd6<4, float, false, SmemCache<float, 1, 3>>("fwd f32 16x32 NHWC v6 flush", b, small, 15);
    run_bwd<4, float, false, SmemCache<float, 2, 3>>("bwd f32 64x64 NHWC v5<3>", b, big, 8);
    run_bwd6<4, float, false, SmemCache<float, 2, 3>>("bwd f32 64x64 NHWC v6", b, big, 8);
    run_bwd6<4, float, false, SmemCache<float, 2, 3>>("bwd f32 64x64 NCHW v6", b, bigc, 8);
  }
  return 0;
}
