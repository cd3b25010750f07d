// fwd v12_resident: where x fits in the GPU's shared memory, hold all of it there. One block of
// 1024 threads per SM copies its contiguous chunk of x into shared memory with the copy engine
// (cp.async.bulk, sm_90), takes the statistics from there, and after a single grid barrier every
// block merges every block's partials itself and runs the pass from shared memory. NHWC, C <= 64.
//
// What changed since v5. At 16x32x112x112 NHWC the phase timeline of v5 (results/*.phases.txt)
// spends its 35.8 us like this: phase 1 (x from DRAM) ends at 11.4 to 14.1 us, the merge of the
// partials by one block per channel takes 4.6 us between two grid barriers of about 1 us each,
// and phase 3 ends 8 to 15 us later, its ends 6.6 us apart, part of x coming back from the L2.
// v12 changes each of the three:
//   Phase 1. 132 SMs have 30 MB of shared memory, more than the 25.7 MB of x. Each block owns one
//   contiguous chunk (a whole number of units of lcm(C, 32) elements: whole rows, so that element
//   i of the chunk is channel i % C, and whole mask words) and one thread asks the copy engine for
//   it in four pieces: every byte of x is requested in the first microsecond and no thread holds a
//   register while it arrives (the warps sleep on the pieces' barriers). The threads take each
//   piece's sums as it lands: thread t is channel t % C of row group t / C and reads every
//   (1024 / C)-th row, one value per row, so a warp reads consecutive values (no bank conflict);
//   it sums deviations from its own first value (res_phase1 says why that keeps the variance),
//   and Chan's merge combines the threads in a tree. In the Add form the chunk of r is meanwhile
//   prefetched into the L2.
//   Phase 2. No second barrier: every block merges all blocks' partials itself (132 x C float4,
//   67 KB at C = 32, from the L2), in the same order, so every block gets the same bits; block 0
//   writes the saved and running statistics.
//   Phase 3. Every pack comes from shared memory; each thread has the same number of packs (to one),
//   and the mask's words are ORed together by shuffles instead of built from ballots.
// Bytes: x read from DRAM once, y and the mask written once: the floor, 8.125 bytes per float.
// Prediction: phase 1 near the copy rate for 25.7 MB (8 us), the merge about one L2 round trip,
// phase 3 a store stream from shared memory; against v5, the 4.6 us merge and a barrier gone, and
// phase 3's spread gone: about 25 us on the H100 for v5's 41 (event times).
// Evidence: the benchmark at 16x32x112x112 NHWC against v5 and cuDNN; Nsight Compute's
// dram__bytes_read.sum (x once: 4 bytes per element); the phase timeline (tools/phase_timeline.cu v12).
// Measured on the H200 (results/NVIDIA_H200.v12_*, float, 16x32x112x112 NHWC): 0.0271 ms against
// v5's 0.0385 and cuDNN's fused 0.0317 in one run; 1.98x PyTorch in the race (v5 1.32x); 25.7 MB
// read from DRAM, x once; phase 1 ends at 8.8 to 11.0 us, the merge after the barrier takes 3.4 to
// 4.2 us, the pass 7 us. The first form (a Welford step per value, warps polling the barriers,
// ballots) issued 19.3 M warp instructions for this one's 10.1 M and ran 1.52x PyTorch. Two later
// forms that merged each channel by the lanes of one warp instead of the tree were slower (1.46x and
// 1.84x) and were reverted. Half takes longer than float (0.0324 ms; its pass about 14 us in the
// timeline against float's 7; it reads the parameters from shared memory for every element, not
// shown to be the cause): 1.15x PyTorch.
//
// Where it does not apply (NCHW, C > 64, x larger than the shared memory, operands off their
// 16-byte alignment, a GPU or a build without sm_90), v12 runs v5.
#pragma once

#include "kernels/fwd_v5_onchip_cache.cuh"
#include "kernels/fwd_v9_two_launches.cuh"
#include "tut/bulk_copy.cuh"

#include <numeric>

namespace ch05 {

inline constexpr int kResBlock = 1024;  // one block per SM
inline constexpr int kResPieces = 4;    // bulk copies per block, each with its own barrier
inline constexpr int kResMaxC = 64;     // 132 x 64 partials of 16 bytes: 135 KB read by every block
inline constexpr int kResMaxLoads = 4;  // partials a thread loads before it merges them

// The copy engine (sm_90): tut/bulk_copy.cuh's bulk copies into shared memory, completed on an
// mbarrier (tut::bulk::init, load, prefetch_l2, wait).

// ---- The plan (host and device) ----------------------------------------------------------------------

// Block b owns elements [b * chunk, min(n, (b + 1) * chunk)); chunk is a whole number of units of
// lcm(C, 32) elements. Piece q of a chunk is units [q * U / kResPieces ...) of it, by whole units.
struct ResPlan {
  std::int64_t n = 0, chunk = 0, unit = 1;
  int C = 1, G = 1, blocks = 1;
};

inline ResPlan res_plan(const Shape4& s, int sms) {
  ResPlan p;
  p.n = s.numel();
  p.C = static_cast<int>(s.C);
  p.G = kResBlock / p.C;
  p.unit = std::lcm<std::int64_t>(s.C, 32);
  const std::int64_t units = (p.n + p.unit - 1) / p.unit, per = (units + sms - 1) / sms;
  p.chunk = per * p.unit;
  p.blocks = static_cast<int>((units + per - 1) / per);
  return p;
}

// Where piece q of a chunk of `units` units starts: its first element, or `cap` if that is less.
CH05_HD inline int res_piece_start(const ResPlan& p, int units, int q, int cap) {
  const std::int64_t e = static_cast<std::int64_t>(units) * q / kResPieces * p.unit;
  return e < cap ? static_cast<int>(e) : cap;
}

// ---- The kernel, in its three phases (tools/phase_timeline.cu stamps each) -----------------------------

// The kernel's static shared memory: the copies' barriers, the merge's tree, the channels'
// parameters (mean, gamma * invstd, beta) as one 16-byte entry each.
struct ResShared {
  std::uint64_t bars[kResPieces];
  Welford red[kResBlock];
  float4 prm[kResMaxC];
};

// Block blockIdx.x's chunk: elements [begin, begin + len), `units` units; the copy engine takes the
// first `bulk` (whole 16-byte lines), threads load the few after them.
struct ResChunk {
  std::int64_t begin = 0;
  int len = 0, units = 0, bulk = 0;
};

template <class T>
__device__ __forceinline__ ResChunk res_chunk(const ResPlan& plan) {
  ResChunk k;
  k.begin = static_cast<std::int64_t>(blockIdx.x) * plan.chunk;
  k.len = k.begin < plan.n ? static_cast<int>(plan.n - k.begin < plan.chunk ? plan.n - k.begin : plan.chunk) : 0;
  k.units = static_cast<int>((k.len + plan.unit - 1) / plan.unit);
  k.bulk = static_cast<int>(k.len * sizeof(T) / 16 * 16 / sizeof(T));
  return k;
}

// Chan's merge of red[g * C + c] over the groups g < G, in a tree; red[c] ends with channel c's.
__device__ __forceinline__ void res_tree(Welford* red, int C, int G, int t) {
  const int g = t / C;
  for (int step = 1; step < G; step *= 2) {
    __syncthreads();
    if (g < G && g % (2 * step) == 0 && g + step < G) red[t] = merge_fast(red[t], red[t + step * C]);
  }
  __syncthreads();
}

// Phase 1: the chunk into shared memory, and thread t's sums of it (res_sums); then the block's
// statistics per channel into partials[block] (Chan's merge over the groups in a tree).
// Thread t is channel c = t % C of row group g = t / C and sums the rows g, g + G, ... as deviations
// from its own first value K: with K one of the values it sums, (K - mean)^2 <= M2, so the sum of
// squares it forms is at most (n + 1) times the M2 it stands for, and the subtraction that recovers
// M2 loses at most about log2(n + 1) bits (n, the chunk's elements over 1024 threads, is at most
// 110 here); at x = 1000 + noise, x - K is exact. res_raw_sums returns the sums, res_sums the
// thread's (n, mean, M2). `bars`: the pieces' kResPieces barriers, in shared memory.
//
// What res_raw_sums leaves a thread: whether it has values (mine), the chunk's rows, its group g of
// G, its own first value K, and the sums of its values' deviations from K, s1 and s2.
struct ResRaw {
  bool mine;
  int rows, g, G;
  float K, s1, s2;
};

template <class T, bool kAdd>
__device__ __forceinline__ ResRaw res_raw_sums(const FwdArgs<T>& a, const ResPlan& plan, const ResChunk& k, T* xs,
                                               std::uint64_t* bars) {
  const int t = static_cast<int>(threadIdx.x), C = plan.C, G = plan.G, c = t % C, g = t / C;
  const int rows = k.len / C;
  const bool mine = g < G && g < rows;
  const float K = mine ? to_float(a.x[k.begin + static_cast<std::int64_t>(g) * C + c]) : 0.0f;
  if (t == 0)
    for (int q = 0; q < kResPieces; ++q) tut::bulk::init(&bars[q]);
  if (t < k.len - k.bulk) xs[k.bulk + t] = a.x[k.begin + k.bulk + t];
  __syncthreads();
  if (t == 0) {
    for (int q = 0; q < kResPieces; ++q) {
      const int e0 = res_piece_start(plan, k.units, q, k.bulk), e1 = res_piece_start(plan, k.units, q + 1, k.bulk);
      if (e1 > e0) tut::bulk::load(xs + e0, a.x + k.begin + e0, static_cast<unsigned>((e1 - e0) * sizeof(T)), &bars[q]);
    }
    if constexpr (kAdd)
      if (k.bulk > 0) tut::bulk::prefetch_l2(a.r + k.begin, static_cast<unsigned>(k.bulk * sizeof(T)));
  }
  float s1 = 0.0f, s2 = 0.0f;
  int i = g * C + c;  // the thread's next element of the chunk
  for (int q = 0; q < kResPieces; ++q) {
    if (res_piece_start(plan, k.units, q + 1, k.bulk) > res_piece_start(plan, k.units, q, k.bulk)) tut::bulk::wait(&bars[q]);
    const int end = res_piece_start(plan, k.units, q + 1, k.len);  // the last piece's: len
    if (g < G) {
#pragma unroll 4
      for (; i < end; i += G * C) {
        const float d = to_float(xs[i]) - K;
        s1 += d;
        s2 = fmaf(d, d, s2);
      }
    }
  }
  return ResRaw{mine, rows, g, G, K, s1, s2};
}

template <class T, bool kAdd>
__device__ __forceinline__ Welford res_sums(const FwdArgs<T>& a, const ResPlan& plan, const ResChunk& k, T* xs,
                                            std::uint64_t* bars) {
  const ResRaw r = res_raw_sums<T, kAdd>(a, plan, k, xs, bars);
  Welford w{0.0f, 0.0f, 0.0f};
  if (r.mine) {
    w.n = static_cast<float>((r.rows - r.g + r.G - 1) / r.G);
    const float q = r.s1 / w.n;
    w.mean = r.K + q;
    w.m2 = fmaxf(0.0f, fmaf(-r.s1, q, r.s2));
  }
  return w;
}

template <class T, bool kAdd>
__device__ void res_phase1(const FwdArgs<T>& a, const ResPlan& plan, const ResChunk& k, T* xs, ResShared& sh,
                           float4* partials) {
  const int t = static_cast<int>(threadIdx.x);
  sh.red[t] = res_sums<T, kAdd>(a, plan, k, xs, sh.bars);
  res_tree(sh.red, plan.C, plan.G, t);
  if (t < plan.C)
    partials[static_cast<std::int64_t>(blockIdx.x) * plan.C + t] = make_float4(sh.red[t].n, sh.red[t].mean, sh.red[t].m2, 0.0f);
}

// Phase 2's end, once thread t holds `acc`, its share of channel t % C over all blocks: Chan's merge
// of the shares in a tree into sh.prm; block 0 writes the saved and running statistics.
template <class T>
__device__ __forceinline__ void res_finish(const FwdArgs<T>& a, const ChannelParams& p, const ResPlan& plan,
                                           ResShared& sh, Welford acc, float gamma, float beta) {
  const int t = static_cast<int>(threadIdx.x), C = plan.C, G = plan.G;
  __syncthreads();  // every thread is done with red's phase-1 values
  sh.red[t] = acc;
  res_tree(sh.red, C, G, t);
  if (t < C) {
    const Welford tot = sh.red[t];
    sh.prm[t] = make_float4(tot.mean, gamma * invstd_of(tot, static_cast<float>(a.s.per_channel()), a.eps), beta, 0.0f);
    if (blockIdx.x == 0) finish_forward_channel(a, p, t, tot);
  }
  __syncthreads();
}

// Phase 2, after the grid barrier: every block merges every block's partials, in the same order
// (so every block gets the same bits): thread t, channel t % C's blocks g, g + G, ... (res_gather),
// then the tree over the groups (res_finish).
__device__ __forceinline__ Welford res_gather(const ResPlan& plan, const float4* partials) {
  const int t = static_cast<int>(threadIdx.x), C = plan.C, G = plan.G, c = t % C, g = t / C;
  Welford acc{0.0f, 0.0f, 0.0f};
  if (g < G) {
    for (int b0 = g; b0 < plan.blocks; b0 += kResMaxLoads * G) {
      float4 v[kResMaxLoads];
#pragma unroll
      for (int j = 0; j < kResMaxLoads; ++j) {
        const int b = b0 + j * G;
        v[j] = b < plan.blocks ? __ldcg(partials + static_cast<std::int64_t>(b) * C + c) : make_float4(0, 0, 0, 0);
      }
#pragma unroll
      for (int j = 0; j < kResMaxLoads; ++j) acc = merge_fast(acc, Welford{v[j].x, v[j].y, v[j].z});
    }
  }
  return acc;
}

template <class T>
__device__ void res_phase2(const FwdArgs<T>& a, const ChannelParams& p, const ResPlan& plan, const float4* partials,
                           ResShared& sh, float gamma, float beta) {
  res_finish(a, p, plan, sh, res_gather(plan, partials), gamma, beta);
}

// Phase 3: pack i of the chunk, i = t, t + 1024, ..., from shared memory; a warp's 32 packs are
// whole mask words, and the 32 / V lanes of a word OR their V bits together by shuffles. The
// channels of a thread's packs move by (1024 V) % C from one pack to the next: not at all when C
// divides 1024 V (C = 32, 64, ...); a thread of 4 channels (float, or half in 8-byte packs, V = 4)
// keeps their parameters in registers, one of 8 (half in 16-byte packs) reads them from shared memory.
template <class T, bool kAdd, int V = kPack<T>, class Shared = ResShared>
__device__ void res_phase3(const FwdArgs<T>& a, const ResPlan& plan, const ResChunk& k, const T* xs, const Shared& sh) {
  constexpr int L = 32 / V;
  constexpr bool kHoist = V <= 4;
  const int t = static_cast<int>(threadIdx.x), lane = t % 32, C = plan.C;
  const int packs = (k.len + V - 1) / V;
  const int step = (kResBlock * V) % C;
  int ch[V];
  float4 prm[kHoist ? V : 1];
  {
    const int c0 = (t * V) % C;
#pragma unroll
    for (int j = 0; j < V; ++j) {
      ch[j] = c0 + j;
      while (ch[j] >= C) ch[j] -= C;
      if constexpr (kHoist) prm[j] = sh.prm[ch[j]];
    }
  }
  for (int i = t; i - lane < packs; i += kResBlock) {
    const bool valid = i < packs, whole = valid && (i + 1) * V <= k.len;
    const std::int64_t e0 = k.begin + static_cast<std::int64_t>(i) * V;
    float xv[V], rv[V], yv[V];
    if (whole) {
      if constexpr (V * sizeof(T) == 16) {
        unpack<V, T>(reinterpret_cast<const uint4*>(xs)[i], xv);
        if constexpr (kAdd) unpack<V, T>(load_raw<V, T>(a.r + e0), rv);
      } else {
        load_pack<V, T>(xs + i * V, xv);
        if constexpr (kAdd) load_pack<V, T>(a.r + e0, rv);
      }
    } else {
#pragma unroll
      for (int j = 0; j < V; ++j) {
        const bool in = valid && i * V + j < k.len;
        xv[j] = in ? to_float(xs[i * V + j]) : 0.0f;
        if constexpr (kAdd) rv[j] = in ? to_float(a.r[e0 + j]) : 0.0f;
      }
    }
    Word bits = 0;
#pragma unroll
    for (int j = 0; j < V; ++j) {
      const float4 q = kHoist ? prm[kHoist ? j : 0] : sh.prm[ch[j]];
      float s = fmaf(xv[j] - q.x, q.y, q.z);
      if constexpr (kAdd) s += rv[j];
      s = round_to<T>(s);
      yv[j] = relu(s);
      bits |= static_cast<Word>(kept(s) && i * V + j < k.len) << j;
    }
    if (whole) {
      store_pack<V, T, true>(a.y + e0, yv);
    } else if (valid) {
#pragma unroll
      for (int j = 0; j < V; ++j)
        if (i * V + j < k.len) a.y[e0 + j] = from_float<T>(yv[j]);
    }
    Word word = valid ? bits << (V * (lane % L)) : 0u;
#pragma unroll
    for (int o = 1; o < L; o *= 2) word |= __shfl_xor_sync(kFullWarp, word, o);
    if (lane % L == 0 && valid) a.mask[e0 / 32] = word;
    if (step != 0) {
#pragma unroll
      for (int j = 0; j < V; ++j) {
        ch[j] += step;
        if (ch[j] >= C) ch[j] -= C;
        if constexpr (kHoist) prm[j] = sh.prm[ch[j]];
      }
    }
  }
}

template <class T, bool kAdd>
__global__ void __launch_bounds__(kResBlock, 1)
    fwd_v12_resident_kernel(FwdArgs<T> a, ChannelParams p, float4* partials, ResPlan plan) {
  extern __shared__ __align__(128) unsigned char ch05_resident[];
  T* xs = reinterpret_cast<T*>(ch05_resident);
  __shared__ ResShared sh;
  const int t = static_cast<int>(threadIdx.x);
  const ResChunk k = res_chunk<T>(plan);
  const float gamma = t < plan.C ? a.gamma[t] : 0.0f, beta = t < plan.C ? a.beta[t] : 0.0f;
  res_phase1<T, kAdd>(a, plan, k, xs, sh, partials);
  cg::this_grid().sync();
  res_phase2<T>(a, p, plan, partials, sh, gamma, beta);
  res_phase3<T, kAdd>(a, plan, k, xs, sh);
}

// ---- Launcher -----------------------------------------------------------------------------------------

template <class T, bool kAdd>
const void* fwd_v12_kernel() {
  return reinterpret_cast<const void*>(&fwd_v12_resident_kernel<T, kAdd>);
}

// The dynamic shared memory a block of kernel K() may have on the current device (and the kernel
// set to allow it), or -1 where the kernel cannot run: no sm_90 code in the build, or a GPU before
// sm_90. Worked out once per device.
template <const void* (*K)()>
std::int64_t res_smem_limit() {
  static std::int64_t cache[64];
  static bool known[64] = {};
  int dev = 0;
  TUT_CUDA(cudaGetDevice(&dev));
  if (!known[dev & 63]) {
    int major = 0, optin = 0;
    TUT_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    TUT_CUDA(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
    cudaFuncAttributes attr{};
    TUT_CUDA(cudaFuncGetAttributes(&attr, K()));
    std::int64_t limit = -1;
    if (major >= 9 && attr.binaryVersion >= 90) {
      limit = optin - static_cast<std::int64_t>(attr.sharedSizeBytes);
      TUT_CUDA(cudaFuncSetAttribute(K(), cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(limit)));
      TUT_CUDA(cudaFuncSetAttribute(K(), cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared));
    }
    cache[dev & 63] = limit;
    known[dev & 63] = true;
  }
  return cache[dev & 63];
}

// Where a resident version applies at all, forward or backward: NHWC, C <= 64, and its operands
// 16-byte aligned (`aligned`, the caller's). Sets `plan` there; elsewhere returns false.
inline bool res_applies(const Shape4& s, bool aligned, ResPlan& plan) {
  if (s.layout != Layout::nhwc || s.C > kResMaxC || !aligned) return false;
  plan = res_plan(s, device_limits().sm_count);
  return true;
}

// Whether x can be held: res_applies, and a chunk within `limit` (res_smem_limit).
template <class T, bool kAdd>
bool resident_fits(const FwdArgs<T>& a, ResPlan& plan, std::int64_t limit) {
  const bool aligned = aligned16(a.x) && aligned16(a.y) && (!kAdd || aligned16(a.r));
  return res_applies(a.s, aligned, plan) && limit >= 0 && plan.chunk * static_cast<std::int64_t>(sizeof(T)) <= limit;
}

// Throws where a block with `dyn` bytes of dynamic shared memory cannot be resident.
inline void res_check_fits(const void* kernel, std::size_t dyn, const char* who) {
  int per_sm = 0;
  TUT_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kResBlock, dyn));
  if (per_sm < 1) throw std::runtime_error(std::string(who) + ": a block of " + std::to_string(dyn) + " bytes does not fit on an SM");
}

inline std::size_t res_partial_bytes(const Shape4& s) {
  return static_cast<std::size_t>(device_limits().sm_count) * static_cast<std::size_t>(s.C) * sizeof(float4);
}

template <class T, bool kAdd>
void fwd_v12_resident(cudaStream_t st, const FwdArgs<T>& a, void* ws) {
  check_shape(a.s, "fwd_v12_resident");
  ResPlan plan;
  if (!resident_fits<T, kAdd>(a, plan, res_smem_limit<fwd_v12_kernel<T, kAdd>>())) return fwd_v5_onchip_cache<T, kAdd>(st, a, ws);
  const Scratch sc(a.s.C, res_partial_bytes(a.s), 0);
  const void* kernel = fwd_v12_kernel<T, kAdd>();
  const std::size_t dyn = static_cast<std::size_t>(plan.chunk) * sizeof(T);
  res_check_fits(kernel, dyn, "fwd_v12_resident");
  FwdArgs<T> args = a;
  ChannelParams p = sc.params_at(ws);
  float4* partials = sc.partials_at<float4>(ws);
  void* kargs[] = {&args, &p, &partials, &plan};
  TUT_CUDA(cudaLaunchCooperativeKernel(kernel, plan.blocks, kResBlock, kargs, dyn, st));
}

template <class T>
std::size_t fwd_v12_scratch_bytes(const Shape4& s) {
  return std::max(fwd_v5_scratch_bytes<T>(s), Scratch(s.C, res_partial_bytes(s), 0).total);
}

template <class T, bool kAdd>
std::vector<const void*> fwd_v12_kernels() {
  auto k = fwd_v5_kernels<T, kAdd>();
  k.push_back(fwd_v12_kernel<T, kAdd>());
  return k;
}

}  // namespace ch05
