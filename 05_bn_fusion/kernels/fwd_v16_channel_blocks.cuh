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
// cuDNN's 0.0097. Here the grid is C blocks, thread t holding values t, t + B, ... of its channel
// (B threads a block, at most 4096 / B values a thread, M <= 4096): a warp's lanes load 32
// consecutive values, runs of H W in memory, every load issued before the first add. B is the
// widest of 512, 256 and 128 whose C blocks are all on the GPU at once (by the occupancy
// calculator), else the one of which it holds the most threads.
//   The sums: v14's, each value's deviation from K* (the channel's first value) summed in double,
//   then a butterfly in each warp and the warps' sums added in order by one thread, which ends the
//   statistics (mean = K* + s1 / M, M2 = s2 - s1^2 / M), writes the saved and running statistics
//   (gamma, beta and the running statistics loaded with x) and hands the pass its three numbers
//   through shared memory.
//   The pass: v15's arithmetic, from the registers; the mask by write_mask_bits (v8's): a warp's
//   32 elements are in one or two runs, a word may hold elements of two channels, and a word
//   shared with another block is written by an atomicAnd and an atomicOr of the bits the block owns.
// Precision: v14's (K* is one of the channel's values; the final subtraction in double).
// Prediction: one DRAM round trip for the loads, two block barriers and the stores per block, and
// every block on the GPU at once; at 64x1024x7x7 (1024 blocks of 128 threads, 25 values a thread)
// a few microseconds past the launch, below cuDNN's 0.0300 ms; at 4x33x17x19 (33 blocks of 512, 3
// values a thread) the launch and one round trip, below its 0.0097.
// Measured on the H200 (results/NVIDIA_H200.v16_*, NVIDIA_H200.ncu_v16.csv; README "Few values a
// channel in NCHW"). The first form (commit 53c4e7d) gave every shape blocks of 512 threads and
// loaded gamma, beta and the running statistics in thread 0 after the sums: at 64x1024x7x7 float
// 37.7 us under Nsight Compute against cuDNN's 24.3 + 11.2 (its BN kernel, then its ReLU), 18.3 %
// of the warps' cycles at a barrier, and 0.0325 ms by events against cuDNN's 0.0302: the
// prediction was wrong. This form (commit e9550ce): 31.8 us (256 threads a block; 6.6 % at a
// barrier, 1.4 % on the long scoreboard, 15.65 M warp instructions against cuDNN's 9.11 M) against
// 23.8 + 11.1; by events 0.0270 ms against cuDNN's 0.0299 (Add 0.0335 against 0.0414, half 0.0268
// against 0.0274); at 4x33x17x19 0.0072 against 0.0091 (Add 0.0070 against 0.0112, half 0.0064
// against 0.0088). Why it takes 31.8 us for 26 MB is not measured.
//
// Where it does not apply (NHWC, more than kChanValues values per channel), v16 runs v15, which
// runs v14, then v5.
#pragma once

#include "kernels/fwd_v15_one_cluster.cuh"
#include "kernels/fwd_v8_cluster.cuh"  // write_mask_bits

namespace ch05 {

inline constexpr int kChanValues = 4096;  // values per channel, at most: a block's threads x values each

// How v16 walks a channel: a block of `threads` threads, thread t's value m being value
// j = t + m threads of its channel, at memory index (n C + c) HW + i with (n, i) = (j / HW, j % HW).
// From one value to the next, j grows by `threads`: i by `step_i` and the index by `step` (the runs
// skipped, and step_i), and where i passes HW, by `wrap` more ((C - 1) HW: the next run). `last`:
// the index of the channel's last value, less c HW. Worked out once on the host, so that a value's
// address costs a few additions.
struct ChanPlan {
  int threads = 0, items = 0;              // a block's threads (512, 256 or 128); values a thread holds
  int HW = 1, M = 1, step_i = 0;           // M = N H W <= kChanValues
  std::int64_t C = 1, step = 0, wrap = 0, last = 0;
};

// The plan for a shape v16 takes, or threads = 0 where v16 does not apply. `resident[k]`: how many
// blocks of 512 >> k threads the GPU holds at once (its SMs times the kernel's occupancy). The block:
// the widest whose C blocks are all on the GPU at once (the fewest values a thread); else the one
// of which the GPU holds the most threads.
inline ChanPlan chan_plan(const Shape4& s, const std::int64_t (&resident)[3]) {
  ChanPlan p;
  const std::int64_t M = s.per_channel();
  if (s.layout != Layout::nchw || s.C > 0x7fffffff || M > kChanValues) return p;
  int pick = -1, most = 0;
  for (int k = 0; k < 3; ++k) {
    if (pick < 0 && s.C <= resident[k]) pick = k;
    if (resident[k] * (512 >> k) > resident[most] * (512 >> most)) most = k;
  }
  p.threads = 512 >> (pick < 0 ? most : pick);
  p.items = static_cast<int>((M + p.threads - 1) / p.threads);
  p.HW = static_cast<int>(s.HW);  // HW <= M
  p.M = static_cast<int>(M);
  p.C = s.C;
  p.step_i = p.threads % p.HW;
  p.step = std::int64_t{p.threads / p.HW} * s.C * s.HW + p.step_i;
  p.wrap = (s.C - 1) * s.HW;
  p.last = (M - 1) / s.HW * s.C * s.HW + (M - 1) % s.HW;
  return p;
}

// Thread t's place in channel c: value j, at x + at; next() moves to j + threads. (Host and
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
    j += p.threads;
    i += p.step_i;
    at += p.step;
    if (i >= p.HW) {
      i -= p.HW;
      at += p.wrap;
    }
  }
};

// v16's mask writer: v8's, for any pattern of words over the warp's lanes. `i`, the value's place
// in its run of H W, is not needed here (fwd v24_mask_runs' writer uses it).
struct V16MaskWriter {
  __device__ __forceinline__ static void write(Word* mask, std::int64_t n, bool in, std::int64_t key, int /*i*/,
                                               unsigned bit) {
    write_mask_bits<1>(mask, n, in, key, bit);
  }
};

// The kernel's body; Mask writes the pass's bits (V16MaskWriter here). kItems = kChanValues /
// threads: the values a thread holds, at most.
template <class T, bool kAdd, int kItems, class Mask>
__device__ __forceinline__ void v16_channel_block(const FwdArgs<T>& a, const ChanPlan& p) {
  constexpr int kWarps = kChanValues / kItems / 32;
  __shared__ double s1s[kWarps], s2s[kWarps];
  __shared__ float prm[3];
  const int t = static_cast<int>(threadIdx.x), lane = t % 32, warp = t / 32;
  const std::int64_t c = blockIdx.x;
  // Every load unconditional (a thread without value m reads the channel's first value instead) and
  // a block barrier after them, where the compiler's schedule starts again: loaded under a predicate
  // each, the compiler fetched x's address again for each, and without the barrier it converted the
  // first values before it issued the rest (and r's after the sums); a block then waited for two
  // round trips to DRAM instead of one. Thread 0 loads the channel's gamma, beta and running
  // statistics with them.
  float xv[kItems], rv[kItems];
  bool has[kItems];
  const std::int64_t first = c * p.HW;
  ChanWalk w(p, c, t);
#pragma unroll
  for (int m = 0; m < kItems; ++m) {
    has[m] = m < p.items && w.j < p.M;
    const std::int64_t at = has[m] ? w.at : first;
    xv[m] = to_float(a.x[at]);
    if constexpr (kAdd) rv[m] = to_float(a.r[at]);
    w.next(p);
  }
  const float kstar = to_float(a.x[first]);
  float gamma = 0.0f, beta = 0.0f, rmean = 0.0f, rvar = 0.0f;
  if (t == 0) {
    gamma = a.gamma[c];
    beta = a.beta[c];
    rmean = a.running_mean[c];
    rvar = a.running_var[c];
  }
  __syncthreads();
  DSum mine{0.0, 0.0};
#pragma unroll
  for (int m = 0; m < kItems; ++m)
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
    for (int k = 0; k < kWarps; ++k) {
      s1 += s1s[k];
      s2 += s2s[k];
    }
    const float M = static_cast<float>(p.M);
    const Welford st = shifted_welford(p.M, kstar, s1, s2);
    const float invstd = invstd_of(st, M, a.eps);
    save_channel_loaded(a, c, st, invstd, M, rmean, rvar);
    prm[0] = st.mean;
    prm[1] = gamma * invstd;
    prm[2] = beta;
  }
  __syncthreads();
  const float mean = prm[0], scale = prm[1], shift = prm[2];
  const std::int64_t n = a.s.numel(), last = p.last + c * p.HW;
  // The pass walks the values again from the thread's number, read through a shuffle: the compiler
  // cannot see that it is t, and computes the addresses again instead of keeping the first walk's
  // alive (two registers a value; the register counts are the benchmark's `regs` column).
  ChanWalk v(p, c, __shfl_sync(kFullWarp, t, lane));
#pragma unroll
  for (int m = 0; m < kItems; ++m) {
    if (m >= p.items) break;  // the same in every thread: the mask's shuffles and ballots have every lane
    const bool in = v.j < p.M;
    float s = fmaf(xv[m] - mean, scale, shift);
    if constexpr (kAdd) s += rv[m];
    s = round_to<T>(s);
    if (in) a.y[v.at] = from_float<T>(relu(s));
    // A lane with no value passes the key of the channel's last value: keys never decrease along the warp.
    Mask::write(a.mask, n, in, in ? v.at : last, v.i, in && kept(s) ? 1u : 0u);
    v.next(p);
  }
}

template <class T, bool kAdd, int kItems>
__global__ void __launch_bounds__(kChanValues / kItems) fwd_v16_channel_blocks_kernel(FwdArgs<T> a, ChanPlan p) {
  v16_channel_block<T, kAdd, kItems, V16MaskWriter>(a, p);
}

template <class T, bool kAdd>
std::vector<const void*> fwd_v16_own_kernels() {
  return {TUT_KERNEL((fwd_v16_channel_blocks_kernel<T, kAdd, 8>)), TUT_KERNEL((fwd_v16_channel_blocks_kernel<T, kAdd, 16>)),
          TUT_KERNEL((fwd_v16_channel_blocks_kernel<T, kAdd, 32>))};
}

// The blocks of each of Kernels()'s three kernels the current GPU holds at once, by the occupancy
// calculator; once per device. The kernels have 512, 256 and 128 threads (v16's widths), or with
// kOneWidth 512 each (v26's three forms).
template <class T, bool kAdd, std::vector<const void*> (*Kernels)() = &fwd_v16_own_kernels<T, kAdd>,
          bool kOneWidth = false>
const std::int64_t (&fwd_v16_resident())[3] {
  static std::int64_t cache[64][3] = {};
  int dev = 0;
  TUT_CUDA(cudaGetDevice(&dev));
  std::int64_t(&r)[3] = cache[dev & 63];
  if (r[0] == 0) {
    const auto kernels = Kernels();
    for (int k = 0; k < 3; ++k) {
      int per_sm = 0;
      TUT_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernels[static_cast<std::size_t>(k)],
                                                             kOneWidth ? 512 : 512 >> k, 0));
      r[k] = std::max<std::int64_t>(1, std::int64_t{per_sm} * device_limits().sm_count);
    }
  }
  return r;
}

// The launch of a kernel of v16's shape (v16's, or v24's with its own mask writer): a block per
// channel, of the width chan_plan picks among Kernels()'s three (512, 256 and 128 threads); where no
// width holds the channel's values, v15. `who` names the version in an error.
template <class T, bool kAdd, std::vector<const void*> (*Kernels)()>
void chan_launch(cudaStream_t st, const FwdArgs<T>& a, void* ws, const char* who) {
  check_shape(a.s, who);
  const ChanPlan p = chan_plan(a.s, fwd_v16_resident<T, kAdd, Kernels>());
  if (p.threads == 0) return fwd_v15_one_cluster<T, kAdd>(st, a, ws);
  static const std::vector<const void*> kernels = Kernels();
  const void* kernel = kernels[p.threads == 512 ? 0 : p.threads == 256 ? 1 : 2];
  FwdArgs<T> args = a;
  ChanPlan plan = p;
  void* kargs[] = {&args, &plan};
  ::tut::check_cuda(cudaLaunchKernel(kernel, dim3(grid_of(a.s.C, who)), dim3(static_cast<unsigned>(p.threads)), kargs, 0, st),
                    who, __FILE__, __LINE__);
}

template <class T, bool kAdd>
void fwd_v16_channel_blocks(cudaStream_t st, const FwdArgs<T>& a, void* ws) {
  chan_launch<T, kAdd, &fwd_v16_own_kernels<T, kAdd>>(st, a, ws, "fwd_v16_channel_blocks");
}

template <class T, bool kAdd>
std::vector<const void*> fwd_v16_kernels() {
  auto k = fwd_v15_kernels<T, kAdd>();
  for (const void* own : fwd_v16_own_kernels<T, kAdd>()) k.push_back(own);
  return k;
}

}  // namespace ch05
