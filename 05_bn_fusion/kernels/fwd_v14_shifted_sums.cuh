// fwd v14_shifted_sums: v13 with its two block merges and its gather as plain sums. Every value of
// channel c is counted as its deviation from one value K*, the same in every block (x's first row:
// x[c]), so that what the threads and the blocks hold are sums, (s1, s2) = (sum of x - K*, sum of
// (x - K*)^2), and merging them is an addition, not Chan's merge; they are kept in double, so that
// the shift costs no precision.
//
// What changed since v13. The phase timeline (tools/phase_timeline.cu `parts`, the H200, float,
// NHWC; results/NVIDIA_H200.v14_phases.txt) splits v13's merges: at 8x3x224x224 the block's merge
// takes 2.0 us after the sums and the merge after the gather 2.4 to 2.7 us, at 4x33x17x19 2.6 and
// 2.7 to 3.2 us, at 16x32x112x112 1.2 to 1.3 and 1.4 to 1.9 us; an empty launch of the same grid
// costs about 4 us by events. Each level of v13's warp tree is three shuffles and Chan's merge (a
// reciprocal and about ten dependent operations) on one warp while the block waits at the barrier
// after it; at C = 3 a second round of 11 chunks follows, at C = 33 one warp walks two channels.
//   The sums. A thread sums its values as deviations from its own first value K (res_raw_sums, as
//   in v12: bounded cancellation) in float; it then moves them to K*, in double: with d = K - K*,
//   s1' = s1 + n d and s2' = s2 + 2 d s1 + n d^2.
//   The block's sum. Each channel's groups go to shared memory (doubles, channel c's at c P + g, P
//   odd: no bank conflict), and the lanes of one warp (16 where C > 32, two channels a warp) add
//   every 32nd (16th) group, then a butterfly of shuffles (5 or 4 levels of two additions) gives the
//   channel's total. Every channel is summed in the same round, in the same order in every block.
//   Published: the block's (s1 / n, s2 - s1^2 / n), the mean's deviation from K* and M2, tagged as
//   in v13 (the mean relative to K* keeps its low bits where x is far from 0).
//   The gather. As v13's (arr_collect), but each block's words are added to the thread's (s1, s2):
//   s1 += n d, s2 += M2 + n d^2 with d the block's mean deviation; then the block's sum again, and
//   mean = K* + s1 / M, M2 = s2 - s1^2 / M, in double. Every block adds the same words in the
//   same order: the statistics have the same bits in every block.
//   The launch's tag is read into a register and stored to shared memory after the sums: in v13
//   thread 0 stores it before the barrier that precedes the copies, so the copies wait for that
//   load. (v14's sums end 0.2 to 0.3 us earlier than v13's at 4x33x17x19 and 8x3x224x224; that
//   this is why is not shown.)
// Precision: K* is one of the channel's M values, so (K* - mean)^2 <= M2 and s2 <= (M + 1) M2: the
// final subtraction loses at most log2(M + 1) of double's 53 bits (23 at M = 2^23), leaving more
// than float's 24.
// Prediction: the two merges from about 2 us each to a few hundred ns (a chain of additions
// instead of merges, no second round, no warp with two channels): about 3 us off v13 at 8x3x224x224
// and 16x32x112x112, more at 4x33x17x19.
// Measured on the H200 (results/NVIDIA_H200.v14_*; README "Every merge a sum"): where v13's trees
// were longest the merges halved or better (C = 3: 2.0 to 1.0-1.1 us and 2.4-2.7 to 1.1-1.2; C =
// 33: 2.6 to 1.0 and 2.7-3.2 to 1.0-1.2; C = 64: 1.8-2.0 to 1.2); at C = 32 they did not move
// (the prediction was wrong there), and about 1 us a merge is left: the timeline's `merge` set puts
// 0.7 to 1.1 us in the channels' sums and butterflies (the double division 0.2 us at most), not
// explained. 8x3x224x224
// float 0.0152 ms against v13's 0.0188 and cuDNN's 0.0177 in one run (4.67 M warp instructions
// against 6.20 M); 16x32x112x112 level with v13 (2.047x PyTorch against 2.040x in one race);
// 4x33x17x19 0.0128 ms, still behind cuDNN's 0.0093 and v11's 0.0099.
// Evidence: the timeline (`parts`: v13 and v14 in one run); the benchmark; the race; Nsight
// Compute's instruction counts; the SASS test (DADD and butterflies, no Chan tree's SHFL.DOWN).
//
// Where it does not apply (as v12: NCHW, C > 64, x larger than the shared memory, operands off
// their alignment, no sm_90), v14 runs v5.
#pragma once

#include "kernels/fwd_v13_arrivals.cuh"

namespace ch05 {

// A channel's shifted sums: s1 = sum of (x - K*), s2 = sum of (x - K*)^2.
struct DSum {
  double s1, s2;
};

// The kernel's static shared memory: the copies' barriers; each thread's sums, channel c's G groups
// at c P + g (P = G | 1); the block's statistics to publish, then the totals (as Welford: n, mean,
// M2); the pass's parameters; each channel's K*; the launch's tag.
struct SumShared {
  std::uint64_t bars[kResPieces];
  double s1[kResBlock + kResMaxC], s2[kResBlock + kResMaxC];
  Welford tot[kResMaxC];
  float4 prm[kResMaxC];
  float kstar[kResMaxC];
  unsigned tag;
};

// A thread's sums, moved from its own K to K* (zero where it has no values).
__device__ __forceinline__ DSum sum_shift(const ResRaw& r, float kstar) {
  DSum v{0.0, 0.0};
  if (r.mine) {
    const double n = static_cast<double>((r.rows - r.g + r.G - 1) / r.G);
    const double d = static_cast<double>(r.K) - static_cast<double>(kstar);
    const double s1 = r.s1;
    v.s1 = fma(n, d, s1);
    v.s2 = fma(n * d, d, fma(2.0 * d, s1, static_cast<double>(r.s2)));
  }
  return v;
}

// Channel c's total over the G groups: W lanes of a warp per channel (32 / W channels a warp),
// lane l adding groups l, l + W, ..., then a butterfly. `done(c, s1, s2)` runs on the channel's
// first lane. Sh: a block of kResBlock threads' shared memory with arrays s1 and s2 (SumShared,
// or v15's OneShared).
template <int W, class Sh, class Done>
__device__ __forceinline__ void dsum_channels(const Sh& sh, int C, int G, int P, Done done) {
  const int t = static_cast<int>(threadIdx.x), lane = t % 32, warp = t / 32;
  for (int c0 = warp * (32 / W); c0 < C; c0 += kResBlock / W) {
    const int c = c0 + lane / W, l = lane % W;
    double a = 0.0, b = 0.0;
    if (c < C)
      for (int g = l; g < G; g += W) {
        a += sh.s1[c * P + g];
        b += sh.s2[c * P + g];
      }
#pragma unroll
    for (int o = W / 2; o > 0; o /= 2) {
      a += __shfl_xor_sync(kFullWarp, a, o);
      b += __shfl_xor_sync(kFullWarp, b, o);
    }
    if (l == 0 && c < C) done(c, a, b);
  }
}

// Thread t's sums (group t / C of channel t % C) added per channel over the block's G groups; every
// thread calls it, and `done` has run for every channel on return.
template <class Sh, class Done>
__device__ __forceinline__ void dsum_block(Sh& sh, DSum v, int C, int G, Done done) {
  const int t = static_cast<int>(threadIdx.x), P = G | 1;
  if (t / C < G) {
    const int i = t % C * P + t / C;
    sh.s1[i] = v.s1;
    sh.s2[i] = v.s2;
  }
  __syncthreads();
  if (C <= 32) dsum_channels<32>(sh, C, G, P, done);
  else dsum_channels<16>(sh, C, G, P, done);
  __syncthreads();
}

// ---- The kernel's steps (tools/phase_timeline.cu stamps between them) ----------------------------------

// Phase 1: the chunk into shared memory and thread t's sums, moved to K* (x[t % C], the channel's
// value in the first row); each channel's K* and the launch's tag to shared memory, stored after the
// sums so that the copies do not wait for their loads.
template <class T, bool kAdd>
__device__ __forceinline__ DSum sum_phase1(const FwdArgs<T>& a, const ResPlan& plan, const ResChunk& k, T* xs,
                                           SumShared& sh, const ArrScratch& s) {
  const int t = static_cast<int>(threadIdx.x), C = plan.C;
  const float kstar = to_float(a.x[t % C]);
  const unsigned tag = t == 0 ? arr_load(s.launches) + 1 : 0u;
  const DSum mine = sum_shift(res_raw_sums<T, kAdd>(a, plan, k, xs, sh.bars), kstar);
  if (t < C) sh.kstar[t] = kstar;
  if (t == 0) sh.tag = tag;
  return mine;
}

// What a block publishes of channel c from its sums over `rows` values: the mean's deviation from
// K* and M2, into sh.tot[c] (dsum_block's `done`).
struct BlockStats {
  SumShared& sh;
  float rows;
  __device__ __forceinline__ void operator()(int c, double s1, double s2) const {
    const double n = rows, d = s1 / n;
    sh.tot[c] = Welford{rows, static_cast<float>(d), static_cast<float>(fmax(0.0, fma(-s1, d, s2)))};
  }
};

// Thread t's share of the blocks' published statistics, as sums from K*, in arr_collect's order.
__device__ __forceinline__ DSum sum_gather(const ResPlan& plan, const ArrScratch& s, unsigned tag) {
  DSum acc{0.0, 0.0};
  arr_collect(plan, s, tag, [&](int b, float d, float m2) {
    const double n = arr_rows(plan, b), dd = d;
    acc.s1 = fma(n, dd, acc.s1);
    acc.s2 = fma(n * dd, dd, acc.s2 + static_cast<double>(m2));
  });
  return acc;
}

// The block's sum of the threads' shares: each channel's mean and M2 over its M values into sh.tot.
template <class T>
__device__ __forceinline__ void sum_totals(const FwdArgs<T>& a, const ResPlan& plan, SumShared& sh, DSum acc) {
  const double M = static_cast<double>(a.s.per_channel());
  dsum_block(sh, acc, plan.C, plan.G, [&](int c, double s1, double s2) {
    const double d = s1 / M;
    sh.tot[c] = Welford{static_cast<float>(M), static_cast<float>(static_cast<double>(sh.kstar[c]) + d),
                        static_cast<float>(fmax(0.0, fma(-s1, d, s2)))};
  });
}

template <class T, bool kAdd>
__global__ void __launch_bounds__(kResBlock, 1)
    fwd_v14_shifted_sums_kernel(FwdArgs<T> a, ChannelParams p, ArrScratch s, ResPlan plan) {
  extern __shared__ __align__(128) unsigned char ch05_resident[];
  T* xs = reinterpret_cast<T*>(ch05_resident);
  __shared__ SumShared sh;
  const int t = static_cast<int>(threadIdx.x);
  const ResChunk k = res_chunk<T>(plan);
  const float gamma = t < plan.C ? a.gamma[t] : 0.0f, beta = t < plan.C ? a.beta[t] : 0.0f;
  const DSum mine = sum_phase1<T, kAdd>(a, plan, k, xs, sh, s);
  dsum_block(sh, mine, plan.C, plan.G, BlockStats{sh, arr_rows(plan, static_cast<int>(blockIdx.x))});
  arr_publish(plan, sh, s);
  sum_totals(a, plan, sh, sum_gather(plan, s, sh.tag));
  arr_finish(a, p, plan, sh, gamma, beta);
  res_phase3<T, kAdd, 4, SumShared>(a, plan, k, xs, sh);
  arr_leave(s, plan.blocks, sh.tag);
}

// ---- Launcher -----------------------------------------------------------------------------------------

template <class T, bool kAdd>
const void* fwd_v14_kernel() {
  return reinterpret_cast<const void*>(&fwd_v14_shifted_sums_kernel<T, kAdd>);
}

template <class T, bool kAdd>
void fwd_v14_shifted_sums(cudaStream_t st, const FwdArgs<T>& a, void* ws) {
  arr_launch<T, kAdd, fwd_v14_kernel<T, kAdd>>(st, a, ws, "fwd_v14_shifted_sums");
}

template <class T, bool kAdd>
std::vector<const void*> fwd_v14_kernels() {
  auto k = fwd_v5_kernels<T, kAdd>();
  k.push_back(fwd_v14_kernel<T, kAdd>());
  return k;
}

}  // namespace ch05
