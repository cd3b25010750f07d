// bwd v21_resident: the forward's v14 for the backward. Where dy, x and the mask fit in the GPU's
// shared memory, one block of 1024 threads per SM copies its contiguous chunk of dy and of x there
// with the copy engine (cp.async.bulk, sm_90), takes its two sums per channel from there, publishes
// them as tagged words (v13's arrivals, no grid barrier), adds every block's words in one order (so
// every block holds the same totals, bit for bit), and writes dx (and dr) from shared memory. NHWC,
// C <= 64.
//
// Why. Of the 13 cases where cuDNN's fused path was faster than every version of ours in the H200's
// whole suite on the tree of 45f32e6 (results/suite_45f32e6/NVIDIA_H200.cudnn_suite.txt), two are
// the backward at 8x3x224x224 NHWC: cuDNN 0.0184 ms in half against v3's 0.0215, 0.0182 in float
// against v19's 0.0186. There Nsight Compute (results/NVIDIA_H200.ncu_cudnn_wins.csv, half) gives
// v19's sums kernel 15.1 us and its dx pass 6.4 us, with DRAM 5.5 % busy under v3: the time is the
// sums' latency and the second launch, not bytes. The forward at the same shape already runs below
// cuDNN's with x held on chip: fwd v14 0.0147 ms in half against cuDNN's 0.0182.
//
// How. As fwd v12 to v14, with two operands and the mask:
//   The chunk. Block b owns the elements [b chunk, (b + 1) chunk), chunk a whole number of units of
//   lcm(C, 32) elements (res_plan): whole rows, and whole mask words. Thread 0 asks the copy engine
//   for the chunk of x and the chunk of dy in kResPieces pieces each, each piece on its own
//   barrier, before any other load; the threads then load the chunk's mask words and the last few
//   elements past its last whole 16-byte line into shared memory.
//   The sums. Thread t is channel c = t % C of row group g = t / C, as in v12, and adds over its
//   rows, in float, g = kept ? dy : 0 and g (x - mean); no shift is needed (the sums are not a
//   variance). The block adds the threads' sums per channel in double (v14's dsum_block), publishes
//   them as two tagged floats (v13's arr_put; the Welford slots `mean` and `m2` carry the two sums)
//   and, with arr_collect, adds every block's words in block order, then per channel over the
//   groups in one order: dgamma = sum g (x - mean) invstd, dbeta = sum g, and dx = A g + B (x -
//   mean) + K with dx_coefficients' A, B and K.
//   The pass. Packs of 4 (8-byte halves, 16-byte floats) from shared memory; thread t takes packs
//   t, t + 1024, ...; a pack's channels move by (4096 mod C) from one pack to the next, and the 4
//   channels' coefficients stay in registers.
// Bytes: dy, x and the mask read from DRAM once, dx (and dr) written once: the backward's floor,
// 12.125 bytes per float element (the Add form 16.125).
// Prediction (before any run): one launch, one round trip of copies, two block merges and the
// gather of one L2 round trip: at 8x3x224x224 about the forward v14's time plus the 4.8 MB more it
// reads (half), under cuDNN's 0.0184 ms; at 4x33x17x19 behind v15 (the fixed cost of 132 blocks).
// Measured on the H200 (results/NVIDIA_H200.bwd_v21_*, ncu_bwd_v21*.csv; README "The backward held
// on chip"): at 8x3x224x224 NHWC 0.0143 ms in half against cuDNN's fused 0.0168 and v19's 0.0213, and
// 0.0159 in float against 0.0166 and 0.0180, in one run; under Nsight Compute 12.1 us (half) and 14.1
// (float) against cuDNN's 13.8 and 13.7, dy and x read from DRAM once, warps at a block barrier 37 to
// 40 % of their cycles. At 4x33x17x19 v15 (0.0099) and cuDNN (0.0092) lead v21 (0.0115, half). At
// 16x32x112x112 in half v21 (0.0257) trails v20 (0.0243) by events, though the profiler times its
// one kernel at 23.4 us against v20's 14.9 + 11.1.
//
// Where it does not apply (NCHW, C > 64, dy, x and the mask larger than the shared memory, dy, x,
// dx or dr off their 16-byte alignment, no sm_90), v21 runs v20.
#pragma once

#include "kernels/bwd_v20_async_pass.cuh"
#include "kernels/fwd_v14_shifted_sums.cuh"

namespace ch05 {

inline constexpr int kResPack = 4;  // the pass's elements a thread takes at once

// The kernel's static shared memory: the copies' barriers (x's, then dy's); each thread's two sums,
// channel c's G groups at c P + g (dsum_block); the block's sums to publish, as (rows, sum g,
// sum g (x - mean)) in a Welford's (n, mean, m2) (arr_publish); the pass's coefficients (mean, A,
// B, K) per channel; the launch's tag.
struct BwdResShared {
  std::uint64_t bars[2 * kResPieces];
  double s1[kResBlock + kResMaxC], s2[kResBlock + kResMaxC];
  Welford tot[kResMaxC];
  float4 prm[kResMaxC];
  unsigned tag;
};

// Where a block's chunk sits in the dynamic shared memory: x, then dy, then the mask's words.
template <class T>
struct BwdResTiles {
  T* xs;
  T* dys;
  Word* ms;
  __device__ BwdResTiles(unsigned char* base, const ResPlan& plan)
      : xs(reinterpret_cast<T*>(base)),
        dys(reinterpret_cast<T*>(base + plan.chunk * sizeof(T))),
        ms(reinterpret_cast<Word*>(base + 2 * plan.chunk * sizeof(T))) {}
};

// The dynamic shared memory a block takes: its chunk of x and of dy, and the chunk's mask words
// (chunk is a multiple of 32, so the mask's part starts 16-byte aligned).
template <class T>
std::int64_t bwd_res_bytes(const ResPlan& plan) {
  return plan.chunk * (2 * static_cast<std::int64_t>(sizeof(T))) + plan.chunk / 32 * static_cast<std::int64_t>(sizeof(Word));
}

// Phase 1: the copies asked for, the mask's words and the tails loaded, and thread t's two sums, as
// the pieces land. Returns the thread's (sum g, sum g (x - mean)) in double (zero where it has no rows).
template <class T>
__device__ __forceinline__ DSum bwd_res_sums(const BwdArgs<T>& a, const ResPlan& plan, const ResChunk& k,
                                             const BwdResTiles<T>& tl, BwdResShared& sh) {
  const int t = static_cast<int>(threadIdx.x), C = plan.C, G = plan.G, c = t % C, g = t / C;
  if (t == 0) {
    for (int q = 0; q < 2 * kResPieces; ++q) tut::bulk::init(&sh.bars[q]);
    for (int q = 0; q < kResPieces; ++q) {
      const int e0 = res_piece_start(plan, k.units, q, k.bulk), e1 = res_piece_start(plan, k.units, q + 1, k.bulk);
      if (e1 > e0) {
        const unsigned bytes = static_cast<unsigned>((e1 - e0) * sizeof(T));
        tut::bulk::load(tl.xs + e0, a.x + k.begin + e0, bytes, &sh.bars[q]);
        tut::bulk::load(tl.dys + e0, a.dy + k.begin + e0, bytes, &sh.bars[kResPieces + q]);
      }
    }
  }
  const float mean = a.saved_mean[c];
  for (int i = t; i < k.len - k.bulk; i += kResBlock) {
    tl.xs[k.bulk + i] = a.x[k.begin + k.bulk + i];
    tl.dys[k.bulk + i] = a.dy[k.begin + k.bulk + i];
  }
  const int words = (k.len + 31) / 32;
  for (int i = t; i < words; i += kResBlock) tl.ms[i] = a.mask[k.begin / 32 + i];
  __syncthreads();
  float s1 = 0.0f, s2 = 0.0f;
  int i = g * C + c;  // the thread's next element of the chunk
  for (int q = 0; q < kResPieces; ++q) {
    if (res_piece_start(plan, k.units, q + 1, k.bulk) > res_piece_start(plan, k.units, q, k.bulk)) {
      tut::bulk::wait(&sh.bars[q]);
      tut::bulk::wait(&sh.bars[kResPieces + q]);
    }
    const int end = res_piece_start(plan, k.units, q + 1, k.len);  // the last piece's: len
    if (g < G) {
#pragma unroll 4
      for (; i < end; i += G * C) {
        const float gv = (tl.ms[i >> 5] >> (i & 31)) & 1u ? to_float(tl.dys[i]) : 0.0f;
        s1 += gv;
        s2 = fmaf(gv, to_float(tl.xs[i]) - mean, s2);
      }
    }
  }
  return g < G ? DSum{s1, s2} : DSum{0.0, 0.0};
}

// The end of channel c's sums, in every block (dsum_block's `done`): dx's coefficients into
// sh.prm[c]; block 0 writes dgamma and dbeta.
template <class T>
struct BwdResDone {
  const BwdArgs<T>& a;
  BwdResShared& sh;
  float M;
  __device__ __forceinline__ void operator()(int c, double s1, double s2) const {
    const float invstd = a.saved_invstd[c], dgamma = static_cast<float>(s2) * invstd, dbeta = static_cast<float>(s1);
    const DxCoefficients k = dx_coefficients(a.gamma[c] * invstd, invstd, dgamma, dbeta, M);
    sh.prm[c] = make_float4(a.saved_mean[c], k.A, k.B, k.K);
    if (blockIdx.x == 0) {
      a.dgamma[c] = dgamma;
      a.dbeta[c] = dbeta;
    }
  }
};

// Phase 3: pack i of the chunk, i = t, t + 1024, ..., from shared memory: dx (and dr = g).
template <class T, bool kAdd>
__device__ void bwd_res_pass(const BwdArgs<T>& a, const ResPlan& plan, const ResChunk& k, const BwdResTiles<T>& tl,
                             const BwdResShared& sh) {
  constexpr int V = kResPack;
  const int t = static_cast<int>(threadIdx.x), C = plan.C;
  const int packs = (k.len + V - 1) / V;
  const int step = (kResBlock * V) % C;
  int ch[V];
  float4 prm[V];
  {
    const int c0 = (t * V) % C;
#pragma unroll
    for (int j = 0; j < V; ++j) {
      ch[j] = c0 + j;
      while (ch[j] >= C) ch[j] -= C;
      prm[j] = sh.prm[ch[j]];
    }
  }
  for (int i = t; i < packs; i += kResBlock) {
    const bool whole = (i + 1) * V <= k.len;
    const std::int64_t e0 = k.begin + static_cast<std::int64_t>(i) * V;
    float xv[V], dv[V], dx[V], gv[V];
    if (whole) {
      load_pack<V, T>(tl.xs + i * V, xv);
      load_pack<V, T>(tl.dys + i * V, dv);
    } else {
#pragma unroll
      for (int j = 0; j < V; ++j) {
        const bool in = i * V + j < k.len;
        xv[j] = in ? to_float(tl.xs[i * V + j]) : 0.0f;
        dv[j] = in ? to_float(tl.dys[i * V + j]) : 0.0f;
      }
    }
    const Word bits = tl.ms[(i * V) >> 5] >> ((i * V) & 31);
#pragma unroll
    for (int j = 0; j < V; ++j) {
      const float4 q = prm[j];
      gv[j] = (bits >> j) & 1u ? dv[j] : 0.0f;
      dx[j] = fmaf(q.y, gv[j], fmaf(q.z, xv[j] - q.x, q.w));
    }
    if (whole) {
      store_pack<V, T>(a.dx + e0, dx);
      if constexpr (kAdd) store_pack<V, T>(a.dr + e0, gv);
    } else {
#pragma unroll
      for (int j = 0; j < V; ++j)
        if (i * V + j < k.len) {
          a.dx[e0 + j] = from_float<T>(dx[j]);
          if constexpr (kAdd) a.dr[e0 + j] = from_float<T>(gv[j]);
        }
    }
    if (step != 0) {
#pragma unroll
      for (int j = 0; j < V; ++j) {
        ch[j] += step;
        if (ch[j] >= C) ch[j] -= C;
        prm[j] = sh.prm[ch[j]];
      }
    }
  }
}

template <class T, bool kAdd>
__global__ void __launch_bounds__(kResBlock, 1) bwd_v21_resident_kernel(BwdArgs<T> a, ArrScratch s, ResPlan plan) {
  extern __shared__ __align__(128) unsigned char ch05_resident[];
  __shared__ BwdResShared sh;
  const BwdResTiles<T> tl(ch05_resident, plan);
  const int t = static_cast<int>(threadIdx.x);
  const ResChunk k = res_chunk<T>(plan);
  const unsigned tag = t == 0 ? arr_load(s.launches) + 1 : 0u;
  const DSum mine = bwd_res_sums<T>(a, plan, k, tl, sh);
  if (t == 0) sh.tag = tag;  // read by all after dsum_block's barrier
  const float rows = arr_rows(plan, static_cast<int>(blockIdx.x));
  dsum_block(sh, mine, plan.C, plan.G, [&](int c, double s1, double s2) {
    sh.tot[c] = Welford{rows, static_cast<float>(s1), static_cast<float>(s2)};
  });
  arr_publish(plan, sh, s);
  DSum acc{0.0, 0.0};
  arr_collect(plan, s, sh.tag, [&](int, float s1, float s2) {
    acc.s1 += static_cast<double>(s1);
    acc.s2 += static_cast<double>(s2);
  });
  dsum_block(sh, acc, plan.C, plan.G, BwdResDone<T>{a, sh, static_cast<float>(a.s.per_channel())});
  bwd_res_pass<T, kAdd>(a, plan, k, tl, sh);
  arr_leave(s, plan.blocks, sh.tag);
}

// ---- Launcher -----------------------------------------------------------------------------------------

template <class T, bool kAdd>
const void* bwd_v21_kernel() {
  return reinterpret_cast<const void*>(&bwd_v21_resident_kernel<T, kAdd>);
}

// Where v21's part of the scratch starts: past v20's (which v21 runs where it does not apply), so
// that v20's state never lands on a word v21 reads as tagged.
template <class T>
std::size_t bwd_v21_offset(const Shape4& s) {
  return Scratch::up(bwd_v4_scratch_bytes<T>(s));
}

template <class T>
std::size_t bwd_v21_scratch_bytes(const Shape4& s) {
  return bwd_v21_offset<T>(s) + arr_bytes(s);
}

template <class T, bool kAdd>
void bwd_v21_resident(cudaStream_t st, const BwdArgs<T>& a, void* ws) {
  check_shape(a.s, "bwd_v21_resident");
  const std::int64_t limit = res_smem_limit<bwd_v21_kernel<T, kAdd>>();
  const bool aligned = aligned16(a.dy) && aligned16(a.x) && aligned16(a.dx) && (!kAdd || aligned16(a.dr));
  ResPlan plan;
  const bool applies = res_applies(a.s, aligned, plan);
  const std::int64_t bytes = bwd_res_bytes<T>(plan);
  if (!applies || limit < 0 || bytes > limit) return bwd_v20_async_pass<T, kAdd>(st, a, ws);
  const void* kernel = bwd_v21_kernel<T, kAdd>();
  const std::size_t dyn = static_cast<std::size_t>(bytes);
  res_check_fits(kernel, dyn, "bwd_v21_resident");
  BwdArgs<T> args = a;
  ArrScratch s = arr_scratch(ws, bwd_v21_offset<T>(a.s), a.s);
  void* kargs[] = {&args, &s, &plan};
  TUT_CUDA(cudaLaunchCooperativeKernel(kernel, plan.blocks, kResBlock, kargs, dyn, st));
}

template <class T, bool kAdd>
std::vector<const void*> bwd_v21_kernels() {
  auto k = bwd_v20_kernels<T, kAdd>();
  k.push_back(bwd_v21_kernel<T, kAdd>());
  return k;
}

}  // namespace ch05
