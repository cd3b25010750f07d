// fwd v24_mask_runs: v16 with a mask writer that knows the warp's values come in runs.
//
// Why. On the H200 at 64x1024x7x7 NCHW, PyTorch's BatchNorm then ReLU ran faster than v16 in half
// (v16 at 0.824x its speed, results/NVIDIA_H200.torch_suite.txt), and v16 took 32.8 us under Nsight
// Compute for 12.8 MB (results/NVIDIA_H200.ncu_v16_why.csv). Its counters: not the memory (1 % of
// the warps' cycles on the long scoreboard) but the issue slots: an instruction issued on 69.7 % of
// cycles, 16.1 M warp instructions against 8.9 M for cuDNN's BatchNorm kernel on the same values, and
// 72 % of them after the block's last barrier, in the pass (results/NVIDIA_H200.v16_sass_regions.csv:
// by opcode, SEL, ISETP, LOP3 and SHFL lead; the double-precision sums are 3 %). The pass stores one
// value a lane and then runs v8's general mask writer (write_mask_bits) for every value: the lanes'
// 64-bit word numbers shuffled up, a ballot, and five rounds of two shuffles each to OR the bits of
// lanes that share a word, then a reduction per shared word.
//
// How. A warp's lanes hold 32 consecutive values of the channel, so they form segments, one per run
// of H W values they touch, each contiguous in memory. A segment starts at lane 0 or where a value
// is the first of its run (the walk's i = 0); three ballots (the bits, the lanes with a value, the
// starts) give each starting lane its segment's length and bits, and that lane writes them: at most
// 32 bits at memory bit e, so one or two words, each stored whole where the segment owns all of it,
// else cleared and set by two reductions (another segment, in this block or another, shares it) as
// v8's writer does. Everything else is v16's, so y and the mask are v16's bits. Where the runs are
// shorter than 32 values (H W < 32) a warp has many short segments and v8's writer, which merges
// the lanes of one word first, stays: v24 runs v16's kernel there.
//
// Prediction (before any run): the pass's instructions per value fall by more than half, the kernel
// by about a third at 64x1024x7x7 NCHW in both types (it is issue bound), and the half forward there
// passes PyTorch's.
#pragma once

#include "kernels/fwd_v16_channel_blocks.cuh"

#include <vector>

namespace ch05 {

// The mask by segments: see above. Every lane of the warp calls it (three ballots); `key` is the
// value's memory index (any index for a lane without a value), `i` its place in its run.
struct RunMaskWriter {
  __device__ __forceinline__ static void write(Word* mask, std::int64_t n, bool in, std::int64_t key, int i,
                                               unsigned bit) {
    const int lane = static_cast<int>(threadIdx.x & 31);
    const unsigned bits = __ballot_sync(kFullWarp, bit != 0u);
    const unsigned have = __ballot_sync(kFullWarp, in);  // a prefix of the warp: values j < M
    const unsigned starts = __ballot_sync(kFullWarp, in && (lane == 0 || i == 0));
    if (!((starts >> lane) & 1u)) return;
    const unsigned later = starts & ~(0xffffffffu >> (31 - lane));  // segments starting after this lane
    const int end = min(later ? __ffs(later) - 1 : 32, 32 - __clz(have));
    const int len = end - lane;  // 1 to 32
    const unsigned ones = len == 32 ? ~0u : ((1u << len) - 1u);
    const unsigned seg = (bits >> lane) & ones;
    const int off = static_cast<int>(key & 31);
    const std::int64_t w = key >> 5;
    const auto put = [&](std::int64_t word, unsigned own, unsigned val) {
      if ((n & 31) != 0 && word == (n >> 5)) own |= ~0u << (n & 31);  // the last word's padding: zero
      if (own == ~0u) {
        mask[word] = val;
      } else {
        atomicAnd(mask + word, ~own | val);
        atomicOr(mask + word, val);
      }
    };
    put(w, ones << off, seg << off);
    if (off + len > 32) put(w + 1, ones >> (32 - off), seg >> (32 - off));
  }
};

template <class T, bool kAdd, int kItems>
__global__ void __launch_bounds__(kChanValues / kItems) fwd_v24_mask_runs_kernel(FwdArgs<T> a, ChanPlan p) {
  v16_channel_block<T, kAdd, kItems, RunMaskWriter>(a, p);
}

template <class T, bool kAdd>
std::vector<const void*> fwd_v24_own_kernels() {
  return {TUT_KERNEL((fwd_v24_mask_runs_kernel<T, kAdd, 8>)), TUT_KERNEL((fwd_v24_mask_runs_kernel<T, kAdd, 16>)),
          TUT_KERNEL((fwd_v24_mask_runs_kernel<T, kAdd, 32>))};
}

inline constexpr std::int64_t kV24MinRun = 32;  // H W at least this: a warp's lanes in at most two runs

template <class T, bool kAdd>
void fwd_v24_mask_runs(cudaStream_t st, const FwdArgs<T>& a, void* ws) {
  check_shape(a.s, "fwd_v24_mask_runs");
  if (a.s.HW < kV24MinRun) return fwd_v16_channel_blocks<T, kAdd>(st, a, ws);
  chan_launch<T, kAdd, &fwd_v24_own_kernels<T, kAdd>>(st, a, ws, "fwd_v24_mask_runs");
}

template <class T, bool kAdd>
std::vector<const void*> fwd_v24_kernels() {
  auto k = fwd_v16_kernels<T, kAdd>();
  for (const void* own : fwd_v24_own_kernels<T, kAdd>()) k.push_back(own);
  return k;
}

}  // namespace ch05
