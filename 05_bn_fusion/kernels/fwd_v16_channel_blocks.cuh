// fwd v16_channel_blocks: NCHW with few values per channel and many channels, one block per
// channel: the channel's values loaded into registers at once, summed in the block, and the pass
// run from the registers, in one launch with no partial in global memory and no block waiting on
// another.
//
// What changed since v15 (and v3 to v14 in NCHW). In NCHW a channel's M = N H W values are N runs
// of H W, C H W apart. Every version so far cuts NCHW by the whole tensor: v3 to v6 are one
// cooperative grid with two grid barriers, v8 and v10 a cluster per channel holding at most 8
// packs a thread, v12 to v15 fall back to v5 there. At 64x1024x7x7 NCHW (1024 channels of 3,136
// values, 12.8 MB) the suite's run on the H200 (results/NVIDIA_H200.json) has the fastest of them
// at 0.0360 ms and cuDNN's SPATIAL_PERSISTENT forward at 0.0300, both near 0.2 of the copy ceiling
// for a tensor it moves in about 6 us; at 4x33x17x19 NCHW (33 channels of 1,292) 0.0125 against
// cuDNN's 0.0097. Here the grid is C blocks of kChanBlock threads, thread t holding values t,
// t + kChanBlock, ... of its channel (at most kChanItems of them): a warp's lanes load 32
// consecutive values, runs of H W in memory, every load issued before the first add.
//   The sums: v14's, each value's deviation from K* (the channel's first value) summed in double,
//   then a butterfly in each warp and the warps' sums added in order by one thread, which ends the
//   statistics (mean = K* + s1 / M, M2 = s2 - s1^2 / M), writes the saved and running statistics
//   and hands the pass its three numbers through shared memory.
//   The pass: v15's arithmetic, from the registers; the mask by write_mask_bits (v8's): a warp's
//   32 elements are in one or two runs, a word may hold elements of two channels, and a word
//   shared with another block is written by an atomicAnd and an atomicOr of the bits the block owns.
// Precision: v14's (K* is one of the channel's values; the final subtraction in double).
// Prediction: one DRAM round trip for the loads, two block barriers and the stores per block; at
// 64x1024x7x7 (1024 blocks, 13 values a thread) a few microseconds past the launch, below cuDNN's
// 0.0300 ms; at 4x33x17x19 (33 blocks, 6 values a thread) the launch and one round trip, below
// its 0.0097.
//
// Where it does not apply (NHWC, more than kChanBlock x kChanItems values per channel), v16 runs
// v15, which runs v14, then v5.
#pragma once

#include "kernels/fwd_v15_one_cluster.cuh"
#include "kernels/fwd_v8_cluster.cuh"  // write_mask_bits

namespace ch05 {

inline constexpr int kChanBlock = 512;  // threads per block: one channel each
inline constexpr int kChanItems = 8;    // values of each operand a thread holds, at most

// How v16 walks a channel: thread t's value m is value j = t + m kChanBlock of its channel, at
// memory index (n C + c) HW + i with (n, i) = (j / HW, j % HW). From one value to the next, j grows
// by kChanBlock: i by `step_i` and the index by `step` (the runs skipped, and step_i), and where i
// passes HW, by `wrap` more ((C - 1) HW: the next run). `last`: the index of the channel's last
// value, less c HW. Worked out once on the host, so that a value's address costs a few additions.
struct ChanPlan {
  int items = 0;                           // values a thread holds: ceil(M / kChanBlock)
  int HW = 1, M = 1, step_i = 0;           // M = N H W <= kChanBlock x kChanItems
  std::int64_t C = 1, step = 0, wrap = 0, last = 0;
};

// The plan for a shape v16 takes, or items = 0 where v16 does not apply.
inline ChanPlan chan_plan(const Shape4& s) {
  ChanPlan p;
  const std::int64_t M = s.per_channel();
  if (s.layout != Layout::nchw || s.C > 0x7fffffff || M > std::int64_t{kChanBlock} * kChanItems) return p;
  p.items = static_cast<int>((M + kChanBlock - 1) / kChanBlock);
  p.HW = static_cast<int>(s.HW);  // HW <= M
  p.M = static_cast<int>(M);
  p.C = s.C;
  p.step_i = kChanBlock % p.HW;
  p.step = std::int64_t{kChanBlock / p.HW} * s.C * s.HW + p.step_i;
  p.wrap = (s.C - 1) * s.HW;
  p.last = (M - 1) / s.HW * s.C * s.HW + (M - 1) % s.HW;
  return p;
}

// Thread t's place in channel c: value j, at x + at; next() moves to j + kChanBlock. (Host and
// device: the CPU tests walk every thread.)
struct ChanWalk {
  int j, i;
  std::int64_t at;
  CH05_HD ChanWalk(const ChanPlan& p, std::int64_t c, int t) {
    j = t;
    const int n = j / p.HW;
    i = j - n * p.HW;
    at = (n * p.C + c) * p.HW + i;
  }
  CH05_HD void next(const ChanPlan& p) {
    j += kChanBlock;
    i += p.step_i;
    at += p.step;
    if (i >= p.HW) {
      i -= p.HW;
      at += p.wrap;
    }
  }
};

template <class T, bool kAdd>
__global__ void __launch_bounds__(kChanBlock) fwd_v16_channel_blocks_kernel(FwdArgs<T> a, ChanPlan p) {
  __shared__ double s1s[kChanBlock / 32], s2s[kChanBlock / 32];
  __shared__ float prm[3];
  const int t = static_cast<int>(threadIdx.x), lane = t % 32, warp = t / 32;
  const std::int64_t c = blockIdx.x;
  // Every load unconditional (a thread without value m reads the channel's first value instead) and
  // a block barrier after them, where the compiler's schedule starts again: loaded under a predicate
  // each, the compiler fetched x's address again for each, and without the barrier it converted the
  // first values before it issued the rest (and r's after the sums); a block then waited for two
  // round trips to DRAM instead of one.
  float xv[kChanItems], rv[kChanItems];
  bool has[kChanItems];
  const std::int64_t first = c * p.HW;
  ChanWalk w(p, c, t);
#pragma unroll
  for (int m = 0; m < kChanItems; ++m) {
    has[m] = m < p.items && w.j < p.M;
    const std::int64_t at = has[m] ? w.at : first;
    xv[m] = to_float(a.x[at]);
    if constexpr (kAdd) rv[m] = to_float(a.r[at]);
    w.next(p);
  }
  const float kstar = to_float(a.x[first]);
  __syncthreads();
  DSum mine{0.0, 0.0};
#pragma unroll
  for (int m = 0; m < kChanItems; ++m)
    if (has[m]) {
      const double d = static_cast<double>(xv[m]) - static_cast<double>(kstar);
      mine.s1 += d;
      mine.s2 = fma(d, d, mine.s2);
    }
#pragma unroll
  for (int o = 16; o > 0; o /= 2) {
    mine.s1 += __shfl_xor_sync(kFullWarp, mine.s1, o);
    mine.s2 += __shfl_xor_sync(kFullWarp, mine.s2, o);
  }
  if (lane == 0) {
    s1s[warp] = mine.s1;
    s2s[warp] = mine.s2;
  }
  __syncthreads();
  if (t == 0) {
    double s1 = 0.0, s2 = 0.0;
#pragma unroll
    for (int k = 0; k < kChanBlock / 32; ++k) {
      s1 += s1s[k];
      s2 += s2s[k];
    }
    const float M = static_cast<float>(p.M);
    const double d = s1 / static_cast<double>(p.M);
    const Welford st{M, static_cast<float>(static_cast<double>(kstar) + d), static_cast<float>(fmax(0.0, fma(-s1, d, s2)))};
    const float invstd = invstd_of(st, M, a.eps);
    save_channel(a, static_cast<int>(c), st, invstd, M);
    prm[0] = st.mean;
    prm[1] = a.gamma[c] * invstd;
    prm[2] = a.beta[c];
  }
  __syncthreads();
  const float mean = prm[0], scale = prm[1], shift = prm[2];
  const std::int64_t n = a.s.numel(), last = p.last + c * p.HW;
  ChanWalk v(p, c, t);
#pragma unroll
  for (int m = 0; m < kChanItems; ++m) {
    if (m >= p.items) break;  // the same in every thread: the mask's shuffles and ballots have every lane
    const bool has = v.j < p.M;
    float s = fmaf(xv[m] - mean, scale, shift);
    if constexpr (kAdd) s += rv[m];
    s = round_to<T>(s);
    if (has) a.y[v.at] = from_float<T>(relu(s));
    // A lane with no value passes the key of the channel's last value: keys never decrease along the warp.
    write_mask_bits<1>(a.mask, n, has, has ? v.at : last, has && kept(s) ? 1u : 0u);
    v.next(p);
  }
}

template <class T, bool kAdd>
void fwd_v16_channel_blocks(cudaStream_t st, const FwdArgs<T>& a, void* ws) {
  check_shape(a.s, "fwd_v16_channel_blocks");
  const ChanPlan p = chan_plan(a.s);
  if (p.items == 0) return fwd_v15_one_cluster<T, kAdd>(st, a, ws);
  fwd_v16_channel_blocks_kernel<T, kAdd><<<grid_of(a.s.C, "fwd_v16_channel_blocks"), kChanBlock, 0, st>>>(a, p);
  TUT_CHECK_LAUNCH("fwd_v16_channel_blocks_kernel");
}

template <class T, bool kAdd>
std::vector<const void*> fwd_v16_kernels() {
  auto k = fwd_v15_kernels<T, kAdd>();
  k.push_back(TUT_KERNEL(fwd_v16_channel_blocks_kernel<T, kAdd>));
  return k;
}

}  // namespace ch05
