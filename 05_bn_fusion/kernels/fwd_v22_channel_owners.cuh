// fwd v22_channel_owners: v14's resident forward for NHWC tensors of many channels (64 < C <= 1024).
// Each block still holds its chunk of x in shared memory and publishes its statistics per channel
// as tagged words, but no block gathers all of them: channel c belongs to block c mod B, which adds
// the B blocks' words of its own channels and publishes the channel's totals, tagged again; every
// block then reads the C totals, one per thread, and runs the pass from shared memory.
//
// Why. In the H200's whole suite (results/NVIDIA_H200.cudnn_suite.txt) the half forward at
// 64x1024x7x7 NHWC is the case cuDNN's fused path wins by most: v11 0.0190 ms against 0.0158. Under
// Nsight Compute (results/NVIDIA_H200.ncu_cudnn_wins.csv) v11 is two kernels, its statistics 9.7 us
// and its pass 9.1 us, where cuDNN's one kernel takes 10.9 us; the x of 6.4 MB would take the copy
// ceiling about 3 us to read and write. v12 to v14 hold x on chip in one launch but stop at C = 64:
// every block gathers every block's words, 132 x C of them, which at C = 1024 is 135,168 loads a
// block.
//
// How:
//   The chunk and the sums: v12's and v14's. One block of 1024 threads per SM owns a chunk of whole
//   rows, copied by the copy engine in four pieces; thread t is channel c = t mod C of row group
//   g = t / C (G = 1024 / C groups, one at C = 1024); each thread sums its values as deviations
//   from its own first value, then moves the sums to K* = x[c] in double (v14's sum_shift).
//   The block's statistics: thread (c, 0) adds its channel's G groups in order and publishes the
//   mean's deviation from K* and M2, tagged (v13's words; one 16-byte store per channel).
//   The owners. Block b owns the channels c = b, b + B, ... (at most ceil(C / B), 8 at C = 1024 on
//   131 blocks). For each, 1024 / 8 = 128 threads load the B blocks' words (block l, l + 128, ...),
//   each waiting on the block's flag where its words are not in yet, add them as v14's gather does,
//   then sum the 128 shares in one order (shuffles, then the warps in order): mean = K* + s1 / M,
//   M2 = s2 - s1^2 / M. The owner writes the saved and running statistics and publishes the mean and
//   M2, tagged, with a flag of its own.
//   The pass. Thread t < C waits for channel t's tagged totals, sets the pass's parameters (mean,
//   gamma invstd, beta), and v13's pass (res_phase3, packs of 4) runs from shared memory.
// Bytes: x read once, y and the mask written once (the floor, 8.125 bytes per float element), and
// the 2 x B x C tagged words through the L2 (4.3 MB at C = 1024, B = 131).
// Prediction (before any run): the copy of 48 KB a block (half), two L2 round trips of waiting
// (the blocks' words, the owners' totals) and a pass from shared memory: under cuDNN's 0.0158 ms at
// 64x1024x7x7 in half by events, and under v11's 0.0190.
//
// Where it does not apply (NCHW, C <= 64 or C > 1024, x larger than the shared memory, x, y or r off
// their 16-byte alignment, no sm_90), v22 runs v11.
#pragma once

#include "kernels/fwd_v11_early_loads.cuh"
#include "kernels/fwd_v14_shifted_sums.cuh"

namespace ch05 {

inline constexpr int kOwnMaxC = kResBlock;  // channels a block's threads cover one each

// The scratch v22 keeps past v11's: each block's words per channel, each channel's totals, the
// blocks' flags and the owners' flags (one 128-byte line each), the launch count and the count out.
struct OwnScratch {
  ArrScratch arr;       // stats: [block][channel]; flags: the blocks'; launches; out
  ulonglong2* totals;   // [channel]: the channel's mean and M2, tagged
  unsigned* own_flags;  // [block]: its owned channels' totals are out
};

// The kernel's static shared memory: the copies' barriers; each thread's sums; the pass's
// parameters; each channel's K*; the owners' per-warp shares; the launch's tag.
struct OwnShared {
  std::uint64_t bars[kResPieces];
  double s1[kResBlock], s2[kResBlock];
  float4 prm[kOwnMaxC];
  float kstar[kOwnMaxC];
  double w1[kResBlock / 32], w2[kResBlock / 32];
  unsigned tag;
};

// Block b's word of channel c, once it carries `tag` (its warp sleeps on the block's flag until
// then): the block's mean's deviation from K* and its M2.
__device__ __forceinline__ ulonglong2 own_word(const OwnScratch& s, int C, int b, int c, unsigned tag) {
  const ulonglong2* p = s.arr.stats + static_cast<std::int64_t>(b) * C + c;
  ulonglong2 w = arr_get(p);
  while (arr_tag(w.x) != tag || arr_tag(w.y) != tag) {
    const unsigned* flag = s.arr.flags + static_cast<std::int64_t>(b) * kArrStride;
    while (arr_load(flag) != tag) __nanosleep(kArrPollNs);
    w = arr_get(p);
  }
  return w;
}

// The owner's step: for each channel this block owns, its totals over every block, published.
// Threads go to owned channels L at a time (L a power of two from 32 to 1024, as many channels at
// once as fit); with fewer blocks than C / 32, in rounds.
template <class T>
__device__ __forceinline__ void own_totals(const FwdArgs<T>& a, const ChannelParams& p, const ResPlan& plan,
                                           OwnShared& sh, const OwnScratch& s) {
  const int t = static_cast<int>(threadIdx.x), lane = t % 32, warp = t / 32, C = plan.C, B = plan.blocks;
  const int b = static_cast<int>(blockIdx.x);
  const int most = (C - b + B - 1) / B;  // channels this block owns
  int L = kResBlock;
  while (L > 32 && L * most > kResBlock) L /= 2;
  const int per = kResBlock / L;  // owned channels a round
  for (int j0 = 0; j0 < most; j0 += per) {
    const int j = j0 + t / L, l = t % L, c = b + j * B;
    DSum acc{0.0, 0.0};
    if (j < most) {
      for (int bb = l; bb < B; bb += L) {
        const ulonglong2 w = own_word(s, C, bb, c, sh.tag);
        const double n = arr_rows(plan, bb), d = arr_value(w.x);
        acc.s1 = fma(n, d, acc.s1);
        acc.s2 = fma(n * d, d, acc.s2 + static_cast<double>(arr_value(w.y)));
      }
    }
#pragma unroll
    for (int o = 16; o > 0; o /= 2) {
      acc.s1 += __shfl_xor_sync(kFullWarp, acc.s1, o);
      acc.s2 += __shfl_xor_sync(kFullWarp, acc.s2, o);
    }
    if (lane == 0) {
      sh.w1[warp] = acc.s1;
      sh.w2[warp] = acc.s2;
    }
    __syncthreads();
    if (l == 0 && j < most) {
      double s1 = 0.0, s2 = 0.0;
      for (int q = 0; q < L / 32; ++q) {
        s1 += sh.w1[warp + q];
        s2 += sh.w2[warp + q];
      }
      const double M = static_cast<double>(a.s.per_channel()), d = s1 / M;
      const Welford tot{static_cast<float>(M), static_cast<float>(static_cast<double>(sh.kstar[c]) + d),
                        static_cast<float>(fmax(0.0, fma(-s1, d, s2)))};
      finish_forward_channel(a, p, c, tot);
      arr_put(s.totals + c, tot.mean, tot.m2, sh.tag);
    }
    __syncthreads();
  }
  // The totals issued before the flag: a hint, the tags are what a reader trusts.
  if (t == 0) arr_store(s.own_flags + static_cast<std::int64_t>(b) * kArrStride, sh.tag);
}

template <class T, bool kAdd>
__global__ void __launch_bounds__(kResBlock, 1)
    fwd_v22_channel_owners_kernel(FwdArgs<T> a, ChannelParams p, OwnScratch s, ResPlan plan) {
  extern __shared__ __align__(128) unsigned char ch05_resident[];
  T* xs = reinterpret_cast<T*>(ch05_resident);
  __shared__ OwnShared sh;
  const int t = static_cast<int>(threadIdx.x), C = plan.C, G = plan.G, B = plan.blocks;
  const ResChunk k = res_chunk<T>(plan);
  const bool chan = t < C;
  const float kstar = to_float(a.x[t % C]);
  const float gamma = chan ? a.gamma[t] : 0.0f, beta = chan ? a.beta[t] : 0.0f;
  const unsigned tag = t == 0 ? arr_load(s.arr.launches) + 1 : 0u;
  // 1. The chunk and each thread's sums, moved to K* of its channel (x's first row).
  const DSum mine = sum_shift(res_raw_sums<T, kAdd>(a, plan, k, xs, sh.bars), kstar);
  if (t == 0) sh.tag = tag;
  if (chan) sh.kstar[t] = kstar;
  if (t / C < G) {
    sh.s1[t] = mine.s1;
    sh.s2[t] = mine.s2;
  }
  __syncthreads();
  // 2. The block's statistics per channel (its G groups in order), published with the block's flag.
  if (chan) {
    double s1 = 0.0, s2 = 0.0;
    for (int g = 0; g < G; ++g) {
      s1 += sh.s1[g * C + t];
      s2 += sh.s2[g * C + t];
    }
    const double n = arr_rows(plan, static_cast<int>(blockIdx.x)), d = s1 / n;
    arr_put(s.arr.stats + static_cast<std::int64_t>(blockIdx.x) * C + t, static_cast<float>(d),
            static_cast<float>(fmax(0.0, fma(-s1, d, s2))), sh.tag);
  }
  __syncthreads();
  if (t == 0) arr_store(s.arr.flags + static_cast<std::int64_t>(blockIdx.x) * kArrStride, sh.tag);
  // 3. The owned channels' totals.
  own_totals(a, p, plan, sh, s);
  // 4. Every channel's totals, then the pass.
  if (chan) {
    const int owner = t % B;
    ulonglong2 w = arr_get(s.totals + t);
    while (arr_tag(w.x) != sh.tag || arr_tag(w.y) != sh.tag) {
      const unsigned* flag = s.own_flags + static_cast<std::int64_t>(owner) * kArrStride;
      while (arr_load(flag) != sh.tag) __nanosleep(kArrPollNs);
      w = arr_get(s.totals + t);
    }
    const Welford tot{static_cast<float>(a.s.per_channel()), arr_value(w.x), arr_value(w.y)};
    sh.prm[t] = make_float4(tot.mean, gamma * invstd_of(tot, tot.n, a.eps), beta, 0.0f);
  }
  __syncthreads();
  res_phase3<T, kAdd, 4, OwnShared>(a, plan, k, xs, sh);
  arr_leave(s.arr, B, sh.tag);
}

// ---- Launcher -----------------------------------------------------------------------------------------

template <class T, bool kAdd>
const void* fwd_v22_kernel() {
  return reinterpret_cast<const void*>(&fwd_v22_channel_owners_kernel<T, kAdd>);
}

// Where v22's part of the scratch starts (past v11's, which v22 runs where it does not apply, so
// that v11's state never lands on a word v22 reads as tagged), and its parts: the blocks' words (one
// block per SM at most), the totals, the blocks' flags, the owners' flags, the launch count, the
// count out.
template <class T>
std::size_t own_offset(const Shape4& s) {
  return Scratch::up(fwd_v11_scratch_bytes<T>(s));
}
inline std::size_t own_bytes(const Shape4& s) {
  const std::size_t C = static_cast<std::size_t>(s.C), sms = static_cast<std::size_t>(device_limits().sm_count);
  return Scratch::up(sms * C * sizeof(ulonglong2)) + Scratch::up(C * sizeof(ulonglong2)) +
         (2 * sms + 2) * kArrStride * sizeof(unsigned);
}
inline OwnScratch own_scratch(void* ws, std::size_t offset, const Shape4& s) {
  const std::size_t C = static_cast<std::size_t>(s.C), sms = static_cast<std::size_t>(device_limits().sm_count);
  unsigned char* base = static_cast<unsigned char*>(ws) + offset;
  OwnScratch r;
  r.arr.stats = reinterpret_cast<ulonglong2*>(base);
  base += Scratch::up(sms * C * sizeof(ulonglong2));
  r.totals = reinterpret_cast<ulonglong2*>(base);
  base += Scratch::up(C * sizeof(ulonglong2));
  r.arr.flags = reinterpret_cast<unsigned*>(base);
  r.own_flags = r.arr.flags + sms * kArrStride;
  r.arr.launches = r.own_flags + sms * kArrStride;
  r.arr.out = r.arr.launches + kArrStride;
  return r;
}

template <class T, bool kAdd>
void fwd_v22_channel_owners(cudaStream_t st, const FwdArgs<T>& a, void* ws) {
  check_shape(a.s, "fwd_v22_channel_owners");
  const std::int64_t limit = res_smem_limit<fwd_v22_kernel<T, kAdd>>();
  const bool aligned = aligned16(a.x) && aligned16(a.y) && (!kAdd || aligned16(a.r));
  ResPlan plan;
  if (a.s.layout == Layout::nhwc && a.s.C > kResMaxC && a.s.C <= kOwnMaxC && aligned)
    plan = res_plan(a.s, device_limits().sm_count);
  if (plan.n == 0 || limit < 0 || plan.chunk * static_cast<std::int64_t>(sizeof(T)) > limit)
    return fwd_v11_early_loads<T, kAdd>(st, a, ws);
  const void* kernel = fwd_v22_kernel<T, kAdd>();
  const std::size_t dyn = static_cast<std::size_t>(plan.chunk) * sizeof(T);
  res_check_fits(kernel, dyn, "fwd_v22_channel_owners");
  FwdArgs<T> args = a;
  ChannelParams p = Scratch(a.s.C, 0, 0).params_at(ws);
  OwnScratch s = own_scratch(ws, own_offset<T>(a.s), a.s);
  void* kargs[] = {&args, &p, &s, &plan};
  TUT_CUDA(cudaLaunchCooperativeKernel(kernel, plan.blocks, kResBlock, kargs, dyn, st));
}

template <class T>
std::size_t fwd_v22_scratch_bytes(const Shape4& s) {
  return own_offset<T>(s) + own_bytes(s);
}

template <class T, bool kAdd>
std::vector<const void*> fwd_v22_kernels() {
  auto k = fwd_v11_kernels<T, kAdd>();
  k.push_back(fwd_v22_kernel<T, kAdd>());
  return k;
}

}  // namespace ch05
