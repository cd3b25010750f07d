// fwd v13_arrivals: v12 without its grid barrier, its block merges in warps, and half's pass in
// packs of 4. Each block publishes its statistics as tagged words; each thread merges its share of
// the blocks' statistics as they arrive, in v12's order; each channel's groups are merged by the
// lanes of a warp, in v12's pairs. The statistics have v12's bits.
//
// What changed since v12. The phase timeline (results/NVIDIA_H200.v13_phases.txt, float,
// 16x32x112x112 NHWC, v12 stamped between the gather of the partials and the tree) splits v12's
// 3.4 to 4.2 us after the barrier: the gather ends 1.2 to 1.7 us after the barrier, the tree over
// the 32 row groups and its finish 1.8 to 3.1 us after that (3.3 to 4.8 us at 8x3x224x224: 341
// groups, 9 levels). Phase 1 ends in the same tree. So:
//   The merges of a block. A level of v12's tree is a block barrier, an integer modulo, two 12-byte
//   shared loads and a merge. Here thread t stores its
//   (n, mean, M2) as three floats, a channel's groups in a row of G + 1 (so that neither the stores
//   nor a warp's loads of one channel meet in a bank), and one warp merges a channel's groups by
//   shuffles, lane l holding group 32q + l, in the
//   tree's own pairs (level s: group g takes g + s when g % 2s == 0), so the bits are v12's; where a
//   channel has more than 32 groups (C < 32), the 32-group results go through a second round of the
//   same. Three block barriers instead of one per level.
//   No grid barrier. v12's barrier ends 0.8 to 1.1 us after the last block's phase 1. A first form of v13 replaced it by a flag per block and an acquire fence
//   per thread: the fences cost what the barrier had (results/NVIDIA_H200.v13_phases.txt, the
//   first form's lines). Here the statistics carry their own flag: each is a 64-bit word, the float
//   in its low half and the launch's tag in its high half, written and read whole (a 64-bit access
//   is single-copy atomic), so a reader that sees the tag sees the value, with no fence on either
//   side. A per-block flag (also the tag, one 128-byte line each) is only a hint for the waiting
//   warps: they sleep on it rather than on 132 x C words. The tag is the launch's number: read at
//   the start from a count in the scratch, plus one; each block counts itself out at its end, and
//   the last sets the count to the tag, so the next launch's tag differs and nothing is reset.
//   (The count is 32 bits: a tag repeats after 2^32 launches on one scratch.) The count (n) of a
//   block's statistics is not sent: it is the block's rows, known to every block from the plan.
//   Half's pass. v12's half pass took about 14 us in the timeline against float's 7: its threads
//   each have 8 channels, and read the parameters from shared memory for every element. In packs
//   of 4 (8-byte loads and stores), a thread has 4 channels, their parameters in registers.
// Prediction: the two trees from about 2 us each to a few hundred ns, the barrier's 1 us gone: about
// 4 us off v12's 27 at 16x32x112x112 float; half's pass near float's 7 us.
// Measured on the H200 (results/NVIDIA_H200.v13_*, this form; README "No grid barrier"): float
// 0.0264 ms against v12's 0.0281 and cuDNN's 0.0313 in one run, 2.03x PyTorch (v12 1.97x in the same
// race); phase 2 ends 1.4 us earlier than v12's, not 4 (the merge after the gather still takes 1 to
// 3 us, not explained); half 0.0244 ms against cuDNN's 0.0307, its pass 7.2 to 7.6 us (v12's about
// 14), 1.53x PyTorch. A first form with a fence on each side of a flag gained nothing; a second,
// with three round trips per run of blocks in the gather, little.
// Evidence: tools/phase_timeline.cu v13 (v12 and v13 in one run); the benchmark and the race
// against PyTorch; the GPU test that v13's outputs have v12's bits, launch after launch.
#pragma once

#include "kernels/fwd_v12_resident.cuh"

namespace ch05 {

inline constexpr unsigned kArrPollNs = 128;  // a waiting warp's sleep between two looks at a flag
inline constexpr int kArrStride = 32;        // unsigneds from one flag to the next: a 128-byte line each

// ---- Tagged words: a float and the launch's tag, one 64-bit access -----------------------------------

__device__ __forceinline__ unsigned long long arr_word(float v, unsigned tag) {
  return static_cast<unsigned long long>(tag) << 32 | __float_as_uint(v);
}
__device__ __forceinline__ float arr_value(unsigned long long w) { return __uint_as_float(static_cast<unsigned>(w)); }
__device__ __forceinline__ unsigned arr_tag(unsigned long long w) { return static_cast<unsigned>(w >> 32); }

// A block's statistics of one channel: (mean, M2), each tagged; 16 bytes, two 64-bit words.
__device__ __forceinline__ void arr_put(ulonglong2* p, float mean, float m2, unsigned tag) {
  asm volatile("st.relaxed.gpu.global.v2.u64 [%0], {%1, %2};" ::"l"(p), "l"(arr_word(mean, tag)), "l"(arr_word(m2, tag))
               : "memory");
}
__device__ __forceinline__ ulonglong2 arr_get(const ulonglong2* p) {
  ulonglong2 v;
  asm volatile("ld.relaxed.gpu.global.v2.u64 {%0, %1}, [%2];" : "=l"(v.x), "=l"(v.y) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ unsigned arr_load(const unsigned* p) {
  unsigned v;
  asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void arr_store(unsigned* p, unsigned v) {
  asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

// The scratch v13 keeps past what v5 and v12 use: the statistics (up to one block per SM), the
// flags, the launch count and the count of blocks out. Past v5's part, so that where v13 runs v5,
// v5's state never lands on a word v13 reads as tagged.
struct ArrScratch {
  ulonglong2* stats;
  unsigned *flags, *launches, *out;
};

// ---- The block's merge, in warps ------------------------------------------------------------------------

// The kernel's static shared memory: the copies' barriers; each thread's (n, mean, M2) as three
// floats, channel c's G groups at c (G + 1) + g (a warp storing one group's channels, or loading one
// channel's groups, touches 32 banks); the 32-group results; each channel's total; the pass's
// parameters (mean, gamma * invstd, beta); the launch's tag.
struct ArrShared {
  std::uint64_t bars[kResPieces];
  float n[kResBlock + kResMaxC], mean[kResBlock + kResMaxC], m2[kResBlock + kResMaxC];
  Welford part[2 * kResMaxC];
  Welford tot[kResMaxC];
  float4 prm[kResMaxC];
  unsigned tag;
};

// Lanes l < count hold v; level s: lane l takes lane l + s when l % 2s == 0 and l + s < count.
// res_tree's pairs, so its merges, in its order. Lane 0 ends with the total.
__device__ __forceinline__ Welford arr_warp_tree(Welford v, int lane, int count) {
#pragma unroll
  for (int s = 1; s < 32; s *= 2) {
    const Welford o = {__shfl_down_sync(kFullWarp, v.n, s), __shfl_down_sync(kFullWarp, v.mean, s),
                       __shfl_down_sync(kFullWarp, v.m2, s)};
    if (lane % (2 * s) == 0 && lane + s < count) v = merge_fast(v, o);
  }
  return v;
}

// Thread t's `mine` (group t / C of channel t % C) merged per channel over the G groups, in
// res_tree's pairs: each warp takes (channel, 32-group chunk) pairs, lane l group 32q + l; where
// there is more than one chunk, a warp per channel merges the chunks' results the same way.
// sh.tot[c] holds channel c's total on return. Every thread calls it.
__device__ __forceinline__ void arr_block_merge(ArrShared& sh, Welford mine, int C, int G) {
  const int t = static_cast<int>(threadIdx.x), lane = t % 32, warp = t / 32, P = G + 1;
  const int Q = (G + 31) / 32;
  if (t / C < G) {
    const int i = t % C * P + t / C;
    sh.n[i] = mine.n, sh.mean[i] = mine.mean, sh.m2[i] = mine.m2;
  }
  __syncthreads();
  for (int pair = warp; pair < C * Q; pair += kResBlock / 32) {
    const int c = pair % C, q = pair / C, g = 32 * q + lane;
    Welford v{0.0f, 0.0f, 0.0f};
    if (g < G) v = {sh.n[c * P + g], sh.mean[c * P + g], sh.m2[c * P + g]};
    v = arr_warp_tree(v, lane, G - 32 * q);
    if (lane == 0) (Q == 1 ? sh.tot[c] : sh.part[q * C + c]) = v;
  }
  __syncthreads();
  if (Q > 1) {
    for (int c = warp; c < C; c += kResBlock / 32) {
      Welford v = lane < Q ? sh.part[lane * C + c] : Welford{0.0f, 0.0f, 0.0f};
      v = arr_warp_tree(v, lane, Q);
      if (lane == 0) sh.tot[c] = v;
    }
    __syncthreads();
  }
}

// ---- Phase 2: the blocks' statistics as they arrive ---------------------------------------------------

// Block b's rows (its count per channel), from the plan.
__device__ __forceinline__ float arr_rows(const ResPlan& plan, int b) {
  const std::int64_t begin = static_cast<std::int64_t>(b) * plan.chunk;
  const std::int64_t len = plan.n - begin < plan.chunk ? plan.n - begin : plan.chunk;
  return static_cast<float>(len / plan.C);
}

// Thread t's share of channel c = t % C: blocks g + j G for j < J, merged in that order, each once
// its words carry this launch's tag. The thread loads the words of its next kArrLoads blocks at once
// and merges the prefix whose tags are right; if that stops short, its warp sleeps on the flag of
// the first block missing, then loads again. Where every block has published, that is one round
// of loads where C <= 32 on 132 SMs (J <= 5), two where C is up to 64 (J up to 9). arr_collect
// hands each block's two words to `take(block, first, second)`, in that order; arr_gather merges them.
inline constexpr int kArrLoads = 5;
template <class Take>
__device__ __forceinline__ void arr_collect(const ResPlan& plan, const ArrScratch& s, unsigned tag, Take take) {
  const int t = static_cast<int>(threadIdx.x), C = plan.C, G = plan.G, c = t % C, g = t / C;
  const int J = g < G && g < plan.blocks ? (plan.blocks - g + G - 1) / G : 0;
  for (int j = 0; j < J;) {
    ulonglong2 w[kArrLoads];
#pragma unroll
    for (int i = 0; i < kArrLoads; ++i)
      if (j + i < J) w[i] = arr_get(s.stats + static_cast<std::int64_t>(g + (j + i) * G) * C + c);
    int ok = 0;
#pragma unroll
    for (int i = 0; i < kArrLoads; ++i) {
      if (ok == i && j + i < J && arr_tag(w[i].x) == tag && arr_tag(w[i].y) == tag) {
        take(g + (j + i) * G, arr_value(w[i].x), arr_value(w[i].y));
        ++ok;
      }
    }
    j += ok;
    if (j < J && ok < kArrLoads) {  // block g + j G has not published (or its words are on the way)
      const unsigned* flag = s.flags + static_cast<std::int64_t>(g + j * G) * kArrStride;
      while (arr_load(flag) != tag) __nanosleep(kArrPollNs);
    }
  }
}
__device__ __forceinline__ Welford arr_gather(const ResPlan& plan, const ArrScratch& s, unsigned tag) {
  Welford acc{0.0f, 0.0f, 0.0f};
  arr_collect(plan, s, tag, [&](int b, float mean, float m2) { acc = merge_fast(acc, Welford{arr_rows(plan, b), mean, m2}); });
  return acc;
}

// The pass's parameters from each channel's total; block 0 writes the saved and running statistics.
template <class T, class Shared>
__device__ __forceinline__ void arr_finish(const FwdArgs<T>& a, const ChannelParams& p, const ResPlan& plan,
                                           Shared& sh, float gamma, float beta) {
  const int t = static_cast<int>(threadIdx.x);
  if (t < plan.C) {
    const Welford tot = sh.tot[t];
    sh.prm[t] = make_float4(tot.mean, gamma * invstd_of(tot, static_cast<float>(a.s.per_channel()), a.eps), beta, 0.0f);
    if (blockIdx.x == 0) finish_forward_channel(a, p, t, tot);
  }
  __syncthreads();
}

// At the block's end: it counts itself out; the last block out makes this launch's tag the count,
// and the count of blocks out zero, for the next launch.
__device__ __forceinline__ void arr_leave(const ArrScratch& s, int blocks, unsigned tag) {
  if (threadIdx.x != 0) return;
  if (atomicAdd(s.out, 1u) == static_cast<unsigned>(blocks) - 1) {
    arr_store(s.launches, tag);
    arr_store(s.out, 0u);
  }
}

// The parts of the kernel, in order (tools/phase_timeline.cu stamps between them).
template <class T, bool kAdd>
__device__ __forceinline__ Welford arr_phase1(const FwdArgs<T>& a, const ResPlan& plan, const ResChunk& k, T* xs,
                                              ArrShared& sh, const ArrScratch& s) {
  if (threadIdx.x == 0) sh.tag = arr_load(s.launches) + 1;  // read by all after res_sums' barrier
  return res_sums<T, kAdd>(a, plan, k, xs, sh.bars);
}
// This block's statistics (sh.tot), tagged, and its flag.
template <class Shared>
__device__ __forceinline__ void arr_publish(const ResPlan& plan, Shared& sh, const ArrScratch& s) {
  const int t = static_cast<int>(threadIdx.x);
  if (t < plan.C) arr_put(s.stats + static_cast<std::int64_t>(blockIdx.x) * plan.C + t, sh.tot[t].mean, sh.tot[t].m2, sh.tag);
  __syncthreads();  // the words issued before the flag: a hint, the tags are what a reader trusts
  if (t == 0) arr_store(s.flags + static_cast<std::int64_t>(blockIdx.x) * kArrStride, sh.tag);
}

template <class T, bool kAdd>
__global__ void __launch_bounds__(kResBlock, 1)
    fwd_v13_arrivals_kernel(FwdArgs<T> a, ChannelParams p, ArrScratch s, ResPlan plan) {
  extern __shared__ __align__(128) unsigned char ch05_resident[];
  T* xs = reinterpret_cast<T*>(ch05_resident);
  __shared__ ArrShared sh;
  const int t = static_cast<int>(threadIdx.x);
  const ResChunk k = res_chunk<T>(plan);
  const float gamma = t < plan.C ? a.gamma[t] : 0.0f, beta = t < plan.C ? a.beta[t] : 0.0f;
  arr_block_merge(sh, arr_phase1<T, kAdd>(a, plan, k, xs, sh, s), plan.C, plan.G);
  arr_publish(plan, sh, s);
  arr_block_merge(sh, arr_gather(plan, s, sh.tag), plan.C, plan.G);
  arr_finish(a, p, plan, sh, gamma, beta);
  res_phase3<T, kAdd, 4>(a, plan, k, xs, sh);
  arr_leave(s, plan.blocks, sh.tag);
}

// ---- Launcher -----------------------------------------------------------------------------------------

template <class T, bool kAdd>
const void* fwd_v13_kernel() {
  return reinterpret_cast<const void*>(&fwd_v13_arrivals_kernel<T, kAdd>);
}

// Where v13's part of the scratch starts, and how long it is.
template <class T>
std::size_t arr_offset(const Shape4& s) {
  return Scratch::up(std::max(fwd_v5_scratch_bytes<T>(s), Scratch(s.C, 0, 0).total));
}
// The statistics' bytes (one block per SM at most), then the flags, the launch count and the count out.
inline std::size_t arr_stats_bytes(const Shape4& s) {
  return Scratch::up(static_cast<std::size_t>(device_limits().sm_count) * static_cast<std::size_t>(s.C) * sizeof(ulonglong2));
}
inline std::size_t arr_bytes(const Shape4& s) {
  return arr_stats_bytes(s) + static_cast<std::size_t>(device_limits().sm_count + 2) * kArrStride * sizeof(unsigned);
}
inline ArrScratch arr_scratch(void* ws, std::size_t offset, const Shape4& s) {
  unsigned char* base = static_cast<unsigned char*>(ws) + offset;
  ArrScratch r;
  r.stats = reinterpret_cast<ulonglong2*>(base);
  r.flags = reinterpret_cast<unsigned*>(base + arr_stats_bytes(s));
  r.launches = r.flags + static_cast<std::size_t>(device_limits().sm_count) * kArrStride;
  r.out = r.launches + kArrStride;
  return r;
}

// The launch of kernel K() on v13's plan and scratch (v14 shares both); where x cannot be held, v5.
template <class T, bool kAdd, const void* (*K)()>
void arr_launch(cudaStream_t st, const FwdArgs<T>& a, void* ws, const char* who) {
  check_shape(a.s, who);
  ResPlan plan;
  if (!resident_fits<T, kAdd>(a, plan, res_smem_limit<K>())) return fwd_v5_onchip_cache<T, kAdd>(st, a, ws);
  const void* kernel = K();
  const std::size_t dyn = static_cast<std::size_t>(plan.chunk) * sizeof(T);
  res_check_fits(kernel, dyn, who);
  FwdArgs<T> args = a;
  ChannelParams p = Scratch(a.s.C, 0, 0).params_at(ws);
  ArrScratch s = arr_scratch(ws, arr_offset<T>(a.s), a.s);
  void* kargs[] = {&args, &p, &s, &plan};
  TUT_CUDA(cudaLaunchCooperativeKernel(kernel, plan.blocks, kResBlock, kargs, dyn, st));
}

template <class T, bool kAdd>
void fwd_v13_arrivals(cudaStream_t st, const FwdArgs<T>& a, void* ws) {
  arr_launch<T, kAdd, fwd_v13_kernel<T, kAdd>>(st, a, ws, "fwd_v13_arrivals");
}

template <class T>
std::size_t fwd_v13_scratch_bytes(const Shape4& s) {
  return arr_offset<T>(s) + arr_bytes(s);
}

template <class T, bool kAdd>
std::vector<const void*> fwd_v13_kernels() {
  auto k = fwd_v5_kernels<T, kAdd>();
  k.push_back(fwd_v13_kernel<T, kAdd>());
  return k;
}

}  // namespace ch05
