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
//   register while it arrives. The threads take each piece's statistics as it lands: thread t is
//   channel t % C of row group t / C, and reads every (1024 / C)-th row, one float per row, so a
//   warp reads 32 consecutive floats (no bank conflict). Welford per thread, then Chan's merge in
//   a tree over the groups. In the Add form the chunk of r is meanwhile prefetched into the L2.
//   Phase 2. No second barrier: every block merges all blocks' partials itself (132 x C float4,
//   67 KB at C = 32, from the L2), in the same order, so every block gets the same bits; block 0
//   writes the saved and running statistics.
//   Phase 3. Every pack comes from shared memory; each thread has the same number of packs (to one).
// Bytes: x read from DRAM once, y and the mask written once: the floor, 8.125 bytes per float.
// Prediction: phase 1 near the copy rate for 25.7 MB (8 us), the merge about one L2 round trip,
// phase 3 a store stream from shared memory; against v5, the 4.6 us merge and a barrier gone, and
// phase 3's spread gone: about 25 us on the H100 for v5's 41 (event times).
// Evidence: the benchmark at 16x32x112x112 NHWC against v5 and cuDNN; Nsight Compute's
// dram__bytes_read.sum (x once: 4 bytes per element).
//
// Where it does not apply (NCHW, C > 64, x larger than the shared memory, operands off their
// 16-byte alignment, a GPU or a build without sm_90), v12 runs v5.
#pragma once

#include "kernels/fwd_v5_onchip_cache.cuh"
#include "kernels/fwd_v9_two_launches.cuh"

#include <numeric>

namespace ch05 {

inline constexpr int kResBlock = 1024;  // one block per SM
inline constexpr int kResPieces = 4;    // bulk copies per block, each with its own barrier
inline constexpr int kResMaxC = 64;     // 132 x 64 partials of 16 bytes: 135 KB read by every block
inline constexpr int kResMaxLoads = 4;  // partials a thread loads before it merges them

// ---- The copy engine (sm_90): bulk copies into shared memory, completed on an mbarrier -------------

__device__ __forceinline__ unsigned smem_addr(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void mbar_init(std::uint64_t* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_addr(bar)) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
}
// One thread: expect `bytes` on `bar`, and ask for them.
__device__ __forceinline__ void bulk_load(void* dst, const void* src, unsigned bytes, std::uint64_t* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)), "r"(bytes) : "memory");
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                   smem_addr(dst)),
               "l"(src), "r"(bytes), "r"(smem_addr(bar))
               : "memory");
#endif
}
__device__ __forceinline__ void bulk_prefetch_l2(const void* src, unsigned bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(src), "r"(bytes) : "memory");
#endif
}
// Every thread: wait until the barrier's first phase has completed (its bytes have landed).
__device__ __forceinline__ void mbar_wait(std::uint64_t* bar) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  unsigned done = 0;
  do {
    asm volatile(
        "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0; selp.u32 %0, 1, 0, p; }"
        : "=r"(done)
        : "r"(smem_addr(bar))
        : "memory");
  } while (!done);
#endif
}

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
CH05_HD inline std::int64_t res_piece_start(const ResPlan& p, std::int64_t units, int q, std::int64_t cap) {
  const std::int64_t e = units * q / kResPieces * p.unit;
  return e < cap ? e : cap;
}

// ---- The kernel ---------------------------------------------------------------------------------------

// Thread t's Welford over rows g, g + G, ... of the chunk's rows [r0, r1), its channel c.
template <class T>
__device__ __forceinline__ void res_rows(const T* xs, int C, int G, int c, std::int64_t& r, std::int64_t r1,
                                         Welford& w) {
  for (; r < r1; r += G) {
    const float v = to_float(xs[r * C + c]);
    w.n += 1.0f;
    const float d = v - w.mean;
    w.mean = fmaf(d, __frcp_rn(w.n), w.mean);
    w.m2 = fmaf(d, v - w.mean, w.m2);
  }
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

template <class T, bool kAdd>
__global__ void __launch_bounds__(kResBlock, 1)
    fwd_v12_resident_kernel(FwdArgs<T> a, ChannelParams p, float4* partials, ResPlan plan) {
  constexpr int V = kPack<T>;
  extern __shared__ __align__(128) unsigned char ch05_resident[];
  T* xs = reinterpret_cast<T*>(ch05_resident);
  __shared__ __align__(8) std::uint64_t bars[kResPieces];
  __shared__ Welford red[kResBlock];
  __shared__ float s_mean[kResMaxC], s_scale[kResMaxC], s_shift[kResMaxC];
  cg::grid_group grid = cg::this_grid();

  const int t = static_cast<int>(threadIdx.x), C = plan.C, G = plan.G, c = t % C, g = t / C;
  const std::int64_t begin = static_cast<std::int64_t>(blockIdx.x) * plan.chunk;
  const std::int64_t len = begin < plan.n ? (plan.n - begin < plan.chunk ? plan.n - begin : plan.chunk) : 0;
  const std::int64_t units = (len + plan.unit - 1) / plan.unit;
  // The copy engine takes whole 16-byte lines; the last block's last few elements (n * sizeof(T)
  // not a multiple of 16) are loaded by threads.
  const std::int64_t bulk = len * static_cast<std::int64_t>(sizeof(T)) / 16 * 16 / static_cast<std::int64_t>(sizeof(T));

  if (t == 0)
    for (int q = 0; q < kResPieces; ++q) mbar_init(&bars[q]);
  if (t < len - bulk) xs[bulk + t] = a.x[begin + bulk + t];
  __syncthreads();
  if (t == 0) {
    for (int q = 0; q < kResPieces; ++q) {
      const std::int64_t e0 = res_piece_start(plan, units, q, bulk), e1 = res_piece_start(plan, units, q + 1, bulk);
      if (e1 > e0) bulk_load(xs + e0, a.x + begin + e0, static_cast<unsigned>((e1 - e0) * sizeof(T)), &bars[q]);
    }
    if constexpr (kAdd)
      if (bulk > 0) bulk_prefetch_l2(a.r + begin, static_cast<unsigned>(bulk * sizeof(T)));
  }
  float gamma = 0.0f, beta = 0.0f;
  if (t < C) gamma = a.gamma[t], beta = a.beta[t];

  // 1. Each piece's rows as it lands.
  Welford w{0.0f, 0.0f, 0.0f};
  std::int64_t r = g;
  for (int q = 0; q < kResPieces; ++q) {
    if (res_piece_start(plan, units, q + 1, bulk) > res_piece_start(plan, units, q, bulk)) mbar_wait(&bars[q]);
    const std::int64_t r1 = res_piece_start(plan, units, q + 1, len) / C;  // the last piece's: len / C
    if (g < G) res_rows(xs, C, G, c, r, r1, w);
  }
  red[t] = g < G ? w : Welford{0.0f, 0.0f, 0.0f};
  res_tree(red, C, G, t);
  if (t < C) partials[static_cast<std::int64_t>(blockIdx.x) * C + t] = make_float4(red[t].n, red[t].mean, red[t].m2, 0.0f);
  grid.sync();

  // 2. Every block merges every block's partials, in the same order.
  Welford acc{0.0f, 0.0f, 0.0f};
  if (g < G) {
    for (int b0 = g; b0 < plan.blocks; b0 += kResMaxLoads * G) {
      float4 v[kResMaxLoads];
#pragma unroll
      for (int k = 0; k < kResMaxLoads; ++k) {
        const int b = b0 + k * G;
        v[k] = b < plan.blocks ? __ldcg(partials + static_cast<std::int64_t>(b) * C + c) : make_float4(0, 0, 0, 0);
      }
#pragma unroll
      for (int k = 0; k < kResMaxLoads; ++k) acc = merge_fast(acc, Welford{v[k].x, v[k].y, v[k].z});
    }
  }
  __syncthreads();  // every thread is done with red's phase-1 values
  red[t] = acc;
  res_tree(red, C, G, t);
  if (t < C) {
    const Welford tot = red[t];
    const float invstd = invstd_of(tot, static_cast<float>(a.s.per_channel()), a.eps);
    s_mean[t] = tot.mean;
    s_scale[t] = gamma * invstd;
    s_shift[t] = beta;
    if (blockIdx.x == 0) finish_forward_channel(a, p, t, tot);
  }
  __syncthreads();

  // 3. The pass: pack i of the chunk, i = t, t + 1024, ...; a warp's 32 packs are whole mask words.
  const int lane = t % 32;
  const std::int64_t packs = (len + V - 1) / V;
  const int step = static_cast<int>((static_cast<std::int64_t>(kResBlock) * V) % C);
  int c0 = static_cast<int>((static_cast<std::int64_t>(t) * V) % C);  // the channel of the pack's first element
  for (std::int64_t i = t; i - lane < packs; i += kResBlock) {
    const bool valid = i < packs;
    float xv[V], rv[V], yv[V];
    const std::int64_t e0 = begin + i * V;
    const bool whole = valid && (i + 1) * V <= len;
    if (whole) {
      unpack<V, T>(reinterpret_cast<const uint4*>(xs)[i], xv);
      if constexpr (kAdd) unpack<V, T>(load_raw<V, T>(a.r + e0), rv);
    } else {
#pragma unroll
      for (int k = 0; k < V; ++k) {
        const bool in = valid && i * V + k < len;
        xv[k] = in ? to_float(xs[i * V + k]) : 0.0f;
        if constexpr (kAdd) rv[k] = in ? to_float(a.r[e0 + k]) : 0.0f;
      }
    }
    Word ballots[V];
#pragma unroll
    for (int k = 0; k < V; ++k) {
      int ch = c0 + k;
      while (ch >= C) ch -= C;
      float s = fmaf(xv[k] - s_mean[ch], s_scale[ch], s_shift[ch]);
      if constexpr (kAdd) s += rv[k];
      s = round_to<T>(s);
      yv[k] = relu(s);
      ballots[k] = __ballot_sync(kFullWarp, valid && i * V + k < len && kept(s));
    }
    if (whole) {
      store_pack<V, T, true>(a.y + e0, yv);
    } else if (valid) {
#pragma unroll
      for (int k = 0; k < V; ++k)
        if (i * V + k < len) a.y[e0 + k] = from_float<T>(yv[k]);
    }
    // Word w of the warp's V words starts at pack (i - lane) + w * 32 / V; lane w writes it.
    const std::int64_t first = i - lane + static_cast<std::int64_t>(lane) * (32 / V);
    if (lane < V && first < packs) a.mask[(begin + first * V) / 32] = tut::bitmask::word_from_ballots<V>(ballots, lane);
    c0 += step;
    if (c0 >= C) c0 -= C;
  }
}

// ---- Launcher -----------------------------------------------------------------------------------------

template <class T, bool kAdd>
const void* fwd_v12_kernel() {
  return reinterpret_cast<const void*>(&fwd_v12_resident_kernel<T, kAdd>);
}

// The dynamic shared memory a block of the kernel may have on the current device (and the kernel
// set to allow it), or -1 where the kernel cannot run as v12: no sm_90 code in the build, or a GPU
// before sm_90. Worked out once per device.
template <class T, bool kAdd>
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
    TUT_CUDA(cudaFuncGetAttributes(&attr, fwd_v12_kernel<T, kAdd>()));
    std::int64_t limit = -1;
    if (major >= 9 && attr.binaryVersion >= 90) {
      limit = optin - static_cast<std::int64_t>(attr.sharedSizeBytes);
      TUT_CUDA(cudaFuncSetAttribute(fwd_v12_kernel<T, kAdd>(), cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(limit)));
      TUT_CUDA(cudaFuncSetAttribute(fwd_v12_kernel<T, kAdd>(), cudaFuncAttributePreferredSharedMemoryCarveout,
                                    cudaSharedmemCarveoutMaxShared));
    }
    cache[dev & 63] = limit;
    known[dev & 63] = true;
  }
  return cache[dev & 63];
}

template <class T, bool kAdd>
bool resident_fits(const FwdArgs<T>& a, ResPlan& plan) {
  if (a.s.layout != Layout::nhwc || a.s.C > kResMaxC) return false;
  if (!aligned16(a.x) || !aligned16(a.y) || (kAdd && !aligned16(a.r))) return false;
  const std::int64_t limit = res_smem_limit<T, kAdd>();
  plan = res_plan(a.s, device_limits().sm_count);
  return limit >= 0 && plan.chunk * static_cast<std::int64_t>(sizeof(T)) <= limit;
}

inline std::size_t res_partial_bytes(const Shape4& s) {
  return static_cast<std::size_t>(device_limits().sm_count) * static_cast<std::size_t>(s.C) * sizeof(float4);
}

template <class T, bool kAdd>
void fwd_v12_resident(cudaStream_t st, const FwdArgs<T>& a, void* ws) {
  check_shape(a.s, "fwd_v12_resident");
  ResPlan plan;
  if (!resident_fits<T, kAdd>(a, plan)) return fwd_v5_onchip_cache<T, kAdd>(st, a, ws);
  const Scratch sc(a.s.C, res_partial_bytes(a.s), 0);
  const void* kernel = fwd_v12_kernel<T, kAdd>();
  const std::size_t dyn = static_cast<std::size_t>(plan.chunk) * sizeof(T);
  int per_sm = 0;
  TUT_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kResBlock, dyn));
  if (per_sm < 1) throw std::runtime_error("fwd_v12_resident: a block of " + std::to_string(dyn) + " bytes does not fit on an SM");
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
