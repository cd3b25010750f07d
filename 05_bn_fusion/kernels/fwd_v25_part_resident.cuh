// fwd v25_part_resident: v14 for an x larger than the shared memory. Each block still owns one
// contiguous chunk of x, but holds only its front in shared memory; the rest of the chunk is read
// twice, once for the sums and once for the pass, the second time back to front.
//
// What changed since v14 and v19. Where x fits on chip, v14 reads it from DRAM once in one launch;
// where it does not (64x64x112x112 NHWC: 205.5 MB of float, 102.8 MB of half, against the 132 SMs'
// 28 MB of shared memory), v14 runs v5 and the large shapes go to v19/v20, two launches that read
// all of x twice, the second time partly from the L2 (the lesson's "cuDNN's last leads": 181.5 of
// 205.7 MB in the float pass). cuDNN's semi-persistent kernel keeps part of x on chip between its two
// sweeps and reads 175.6 MB where our two kernels read 205.7 (128x64x56x56, float forward, caches
// flushed). Here:
//   Phase 1. v14's chunk, one block of 1024 threads per SM, but the copy engine brings only the
//   chunk's first `held` elements (whole units, as much as the block's shared memory takes) into
//   shared memory. While those copies fly, the threads sum the rest of the chunk (the tail) from
//   global memory, front to back, with v14's thread layout (channel t % C of row group t / C, a
//   warp reading consecutive values), 32 bytes a thread in flight; then the front as it lands.
//   Both parts' sums are moved to K* and added (v14's sum_shift), so the merge is v14's.
//   The merge. v14's: the block's sums published as tagged words, every block adding all blocks'
//   words in the same order; no grid barrier.
//   Phase 3. The tail first, back to front from global memory (its last part is what the L2 still
//   holds from phase 1), in 16-byte packs, 64 bytes a thread loaded before the first is used, with
//   v17's arithmetic and mask bytes; then the front from shared memory (v14's pass).
// The first form's tail pass took packs of 4 (8 bytes of half) and built mask words by shuffles, as
// v14's pass does: at 64x64x112x112 NHWC it issued 37.2 M of the kernel's 57.5 M warp instructions
// in half, and v25 ran 1.36x v20's time (results/NVIDIA_H200.fwd_v25_trial.*; README, the trial).
// The second form gave the tail v17's pass instead (16-byte packs, a byte of mask a lane): 46.5 M
// instructions, yet 1.21x v20's time with the DRAM 41 % busy, the warps waiting at the first use of
// each load in both phases (results/NVIDIA_H200.fwd_v25_form2.*). A thread asked for 32 bytes (the
// sums) or 64 (the pass) and then used them all before asking again. This third form keeps them
// coming: both loops take their loads through a ring of registers, the next asked for as soon as
// one is taken, 64 bytes a thread in flight throughout.
// Bytes per element (float): x read once, plus the tail's second read less what the L2 serves,
// plus y and the mask: between v14's 8.125 and v19's 12.125.
// Prediction: at 64x64x112x112 NHWC the second read shrinks by the 28 MB on chip; in half that is a
// quarter of x. One launch, one merge, no barrier: under v20 and under cuDNN's fused forward in half
// at the large shapes, and under v19 in float.
// Evidence: the benchmark at the suite's large NHWC shapes against v19, v20 and cuDNN in one run;
// Nsight Compute's dram__bytes_read.sum; the race against PyTorch.
//
// Where it does not apply (NCHW, C > 64, operands off their 16-byte alignment, no sm_90), v25 runs
// v19. Where x fits, the tail is empty and v25 is v14 with a front of the whole chunk.
#pragma once

#include "kernels/fwd_v14_shifted_sums.cuh"
#include "kernels/fwd_v17_split_pass.cuh"
#include "kernels/fwd_v19_warp_columns.cuh"

#include <climits>
#include <type_traits>

namespace ch05 {

// The chunk's front held in shared memory: the whole chunk where it fits, else its first `held`
// elements (a whole number of units, so whole rows and whole mask words; all copied by the engine).
template <class T>
__device__ __forceinline__ ResChunk part_front(const ResPlan& plan, const ResChunk& whole, int held) {
  if (whole.len <= held) return whole;
  ResChunk f = whole;
  f.len = held;
  f.units = static_cast<int>(held / plan.unit);
  f.bulk = held;
  return f;
}

// Thread t's sums over the tail's `rows` rows that are its own (channel t % C, rows g, g + G, ...,
// g = t / C), as deviations from its own first value there, as res_raw_sums does for the front.
// The loads go through a ring of U registers (64 bytes a thread): the value of row m + U is asked
// for as soon as row m's is taken, so U loads stay in flight while the thread adds.
template <class T>
__device__ __forceinline__ ResRaw part_tail_sums(const T* x, int rows, int C, int G) {
  constexpr int U = 64 / static_cast<int>(sizeof(T));
  const int t = static_cast<int>(threadIdx.x), c = t % C, g = t / C;
  const bool mine = g < G && g < rows;
  float K = 0.0f, s1 = 0.0f, s2 = 0.0f;
  if (mine) {
    const int M = (rows - g + G - 1) / G;  // the thread's rows
    const std::int64_t stride = static_cast<std::int64_t>(G) * C;
    const T* p = x + static_cast<std::int64_t>(g) * C + c;
    K = to_float(p[0]);
    T ring[U];
#pragma unroll
    for (int j = 0; j < U; ++j)
      if (j < M) ring[j] = p[j * stride];
    const T* next = p + U * stride;  // row m + U's value, for the load after row m's is taken
    int m0 = 0;
    for (; m0 + 2 * U <= M; m0 += U) {  // every load in range: no checks
#pragma unroll
      for (int j = 0; j < U; ++j) {
        const float d = to_float(ring[j]) - K;
        ring[j] = *next;
        next += stride;
        s1 += d;
        s2 = fmaf(d, d, s2);
      }
    }
    for (; m0 < M; m0 += U) {
#pragma unroll
      for (int j = 0; j < U; ++j) {
        const int m = m0 + j;
        if (m < M) {
          const float d = to_float(ring[j]) - K;
          if (m + U < M) {
            ring[j] = *next;
            next += stride;
          }
          s1 += d;
          s2 = fmaf(d, d, s2);
        }
      }
    }
  }
  return ResRaw{mine, rows, g, G, K, s1, s2};
}

// The pass over the tail, elements [begin, begin + len) of x (begin a multiple of the unit: whole
// rows, whole mask words). Whole warps of 16-byte packs (32 V elements a warp) go from the last
// 1024 packs to the first: thread t takes packs i_m = (Q - 1 - m) 1024 + t, m = 0, 1, ..., through a
// ring of kB registers (64 bytes of x a thread; 32 of x and 32 of r in the Add form): pack m + kB
// is asked for as soon as pack m is taken, so kB loads stay in flight while the thread computes.
// Each pack gets v17's arithmetic and mask bytes (fwd_finish_pack: a lane's V bits are a byte or
// half of one). kFixed (C divides 1024 V): a thread's V channels are the same in every pack and
// their parameters stay in registers; otherwise each pack reads its channels' from shared memory.
// The last elements, fewer than a warp's 32 V, go 32 at a time to warp 0 (ballots).
template <class T, bool kAdd, bool kFixed>
__device__ void part_tail_rounds(const FwdArgs<T>& a, std::int64_t begin, int len, int C, const SumShared& sh) {
  constexpr int V = kPack<T>;
  constexpr int kB = kAdd ? 2 : 4;
  const int t = static_cast<int>(threadIdx.x), lane = t % 32;
  const int packs = len / (32 * V) * 32;  // whole warps' packs
  const int Q = (packs + kResBlock - 1) / kResBlock;
  float mean[V], scale[V], shift[V];
  const auto params = [&](int c0) {
#pragma unroll
    for (int e = 0; e < V; ++e) {
      int c = c0 + e;
      while (c >= C) c -= C;
      const float4 q = sh.prm[c];
      mean[e] = q.x, scale[e] = q.y, shift[e] = q.z;
    }
  };
  if constexpr (kFixed) params((t * V) % C);
  const auto elem = [&](int m) { return begin + static_cast<std::int64_t>((Q - 1 - m) * kResBlock + t) * V; };
  uint4 xq[kB], rq[kAdd ? kB : 1];
#pragma unroll
  for (int j = 0; j < kB; ++j) {
    if (j < Q && (Q - 1 - j) * kResBlock + t < packs) {  // only the first m (the last 1024 packs) may be cut
      xq[j] = load_raw<V, T>(a.x + elem(j));
      if constexpr (kAdd) rq[j] = load_raw<V, T>(a.r + elem(j));
    }
  }
  for (int m0 = 0; m0 < Q; m0 += kB) {
#pragma unroll
    for (int j = 0; j < kB; ++j) {
      const int m = m0 + j;
      if (m >= Q) break;
      const int i = (Q - 1 - m) * kResBlock + t;
      float xv[V], rv[V];
      unpack<V, T>(xq[j], xv);
      if constexpr (kAdd) unpack<V, T>(rq[j], rv);
      if (m + kB < Q) {  // a whole 1024 packs: no check
        xq[j] = load_raw<V, T>(a.x + elem(m + kB));
        if constexpr (kAdd) rq[j] = load_raw<V, T>(a.r + elem(m + kB));
      }
      if (i - lane >= packs) continue;  // the warp's first pack: the same for the whole warp
      if constexpr (!kFixed) params((i * V) % C);
      fwd_finish_pack<V, T, kAdd, true>(a, 0, elem(m), lane, xv, rv, mean, scale, shift);
    }
  }
  if (t < 32) {
    for (int e = packs * V + lane; e - lane < len; e += 32) {
      bool keep = false;
      if (e < len) {
        const float4 p = sh.prm[e % C];
        float s = fmaf(to_float(a.x[begin + e]) - p.x, p.y, p.z);
        if constexpr (kAdd) s += to_float(a.r[begin + e]);
        s = round_to<T>(s);
        a.y[begin + e] = from_float<T>(relu(s));
        keep = kept(s);
      }
      const Word word = __ballot_sync(kFullWarp, keep);
      if (lane == 0) a.mask[(begin + e - lane) / 32] = word;
    }
  }
}

template <class T, bool kAdd>
__device__ __forceinline__ void part_tail_pass(const FwdArgs<T>& a, std::int64_t begin, int len, int C, const SumShared& sh) {
  if ((kResBlock * kPack<T>) % C == 0) part_tail_rounds<T, kAdd, true>(a, begin, len, C, sh);
  else part_tail_rounds<T, kAdd, false>(a, begin, len, C, sh);
}

template <class T, bool kAdd>
__global__ void __launch_bounds__(kResBlock, 1)
    fwd_v25_part_resident_kernel(FwdArgs<T> a, ChannelParams p, ArrScratch s, ResPlan plan, int held) {
  extern __shared__ __align__(128) unsigned char ch05_resident[];
  T* xs = reinterpret_cast<T*>(ch05_resident);
  __shared__ SumShared sh;
  const int t = static_cast<int>(threadIdx.x), C = plan.C;
  const ResChunk whole = res_chunk<T>(plan);
  const ResChunk front = part_front<T>(plan, whole, held);
  const std::int64_t tail = whole.begin + front.len;
  const int tail_len = whole.len - front.len;
  const float gamma = t < C ? a.gamma[t] : 0.0f, beta = t < C ? a.beta[t] : 0.0f;
  // Phase 1: v14's sum_phase1, with the tail summed while the front's copies fly (no prefetch of r:
  // the L2 keeps the tail's end for the pass).
  const float kstar = to_float(a.x[t % C]);
  const unsigned tag = t == 0 ? arr_load(s.launches) + 1 : 0u;
  ResRaw rest{};
  const ResRaw held_sums = res_raw_sums<T, false>(a, plan, front, xs, sh.bars,
                                                  [&] { rest = part_tail_sums(a.x + tail, tail_len / C, C, plan.G); });
  DSum mine = sum_shift(held_sums, kstar);
  const DSum more = sum_shift(rest, kstar);
  mine.s1 += more.s1;
  mine.s2 += more.s2;
  if (t < C) sh.kstar[t] = kstar;
  if (t == 0) sh.tag = tag;
  // The merge: v14's.
  dsum_block(sh, mine, C, plan.G, BlockStats{sh, arr_rows(plan, static_cast<int>(blockIdx.x))});
  arr_publish(plan, sh, s);
  sum_totals(a, plan, sh, sum_gather(plan, s, sh.tag));
  arr_finish(a, p, plan, sh, gamma, beta);
  // Phase 3: the tail back to front, then the front from shared memory.
  part_tail_pass<T, kAdd>(a, tail, tail_len, C, sh);
  res_phase3<T, kAdd, 4, SumShared>(a, plan, front, xs, sh);
  arr_leave(s, plan.blocks, sh.tag);
}

// ---- Launcher -----------------------------------------------------------------------------------------

template <class T, bool kAdd>
const void* fwd_v25_kernel() {
  return reinterpret_cast<const void*>(&fwd_v25_part_resident_kernel<T, kAdd>);
}

// The front's length: as many whole units as the shared memory takes, at most the chunk.
inline std::int64_t part_held(const ResPlan& plan, std::int64_t limit_bytes, std::size_t elem) {
  const std::int64_t units = limit_bytes / static_cast<std::int64_t>(elem) / plan.unit;
  return std::min(plan.chunk, units * plan.unit);
}

template <class T, bool kAdd>
void fwd_v25_part_resident(cudaStream_t st, const FwdArgs<T>& a, void* ws) {
  const char* who = "fwd_v25_part_resident";
  check_shape(a.s, who);
  const std::int64_t limit = res_smem_limit<fwd_v25_kernel<T, kAdd>>();
  const bool aligned = aligned16(a.x) && aligned16(a.y) && (!kAdd || aligned16(a.r));
  ResPlan plan;
  if (limit < 0 || !res_applies(a.s, aligned, plan) || plan.chunk > INT_MAX) return fwd_v19_warp_columns<T, kAdd>(st, a, ws);
  const int held = static_cast<int>(part_held(plan, limit, sizeof(T)));
  const void* kernel = fwd_v25_kernel<T, kAdd>();
  const std::size_t dyn = static_cast<std::size_t>(held) * sizeof(T);
  res_check_fits(kernel, dyn, who);
  FwdArgs<T> args = a;
  ChannelParams p = Scratch(a.s.C, 0, 0).params_at(ws);
  ArrScratch s = arr_scratch(ws, arr_offset<T>(a.s), a.s);
  int h = held;
  void* kargs[] = {&args, &p, &s, &plan, &h};
  TUT_CUDA(cudaLaunchCooperativeKernel(kernel, plan.blocks, kResBlock, kargs, dyn, st));
}

template <class T>
std::size_t fwd_v25_scratch_bytes(const Shape4& s) {
  return std::max(fwd_v13_scratch_bytes<T>(s), fwd_v4_scratch_bytes<T>(s));
}

template <class T, bool kAdd>
std::vector<const void*> fwd_v25_kernels() {
  auto k = fwd_v19_kernels<T, kAdd>();
  k.push_back(fwd_v25_kernel<T, kAdd>());
  return k;
}

}  // namespace ch05
