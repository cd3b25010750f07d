// fwd v7_mask_bytes (half only): v5, with phase 3 writing the mask one byte per pack instead of
// building words from ballots.
//
// What changed since v5. A half pack is 8 consecutive elements, and 8 elements are exactly one byte
// of the mask (tut/bitmask.cuh: byte b holds elements 8b .. 8b + 7, bit j for element 8b + j). v5
// builds each word from eight ballots of its warp and a bit interleave (word_from_ballots<8>), then
// lets eight lanes store the eight words: on sm_90 that is about 100 instructions per pack of the
// warp, more than the arithmetic of its 8 elements. Here each thread packs its own 8 bits into a
// byte and stores it: no vote, no shuffle, no interleave. With no warp-wide step left, a thread walks
// its own packs to their end (v4's loop ran every lane to the warp's longest count for the ballots),
// and the words need not be whole per lane group: in NHWC every C takes this path, where v4 and v5
// ran v3 unless C was a power of two up to 128 or a multiple of 32; in NCHW, H*W a multiple of 8
// (v4: of 32). The elements past the last whole row (NHWC) go to one warp, which writes the bytes of
// its 32 elements (the first of them is a multiple of 8), and of the mask's last word, all of them.
// Bytes: v5's. Instructions: Nsight Compute counted 72.9 M warp instructions for v5 at
// 64x64x112x112 half NHWC against 47.9 M for cuDNN's fused kernel, issued on 51 % of cycles, with
// the DRAM busy 54 % of the time against cuDNN's 68 %.
// Prediction: the vote, shuffle and interleave part of phase 3's loop gone, at least 80 SASS
// instructions per pack (tests/test_sass.cpp checks it: 960 against 1383 for the loop's four packs
// on sm_90); 64x64x112x112 has 6.4 M packs, 32 to a warp instruction: at least 16 M fewer warp
// instructions, a fifth of v5's; phase 3 ends earlier by up to that share.
// Evidence: smsp__inst_executed.sum and the time, v5 against v7 (Nsight Compute), and the benchmark.
// Measured on the H100 at 64x64x112x112 NHWC (results/NVIDIA_H100_80GB_HBM3.ncu_half.csv and
// ..._bn_relu_f16_v7.json): 52.2 M warp instructions against v5's 72.9 M, DRAM busy 59.0 % against
// 53.9 %; 0.1298 ms against v5's 0.1464 and cuDNN's fused 0.1158 in the same run; the Add form
// 0.1589 against cuDNN's 0.1647. In NCHW at 128x256x28x28 (H*W = 784, not a multiple of 32, where
// v5 runs v3) it is slower than v5: 0.0855 against 0.0755.
//
// The trap: a byte store from every thread looks like a read-modify-write of the word around it;
// it is not (the GPU stores bytes), so threads writing bytes of one word need no atomics. The
// mask's last word still has its padding bits zero: the tail warp writes every byte of it.
#pragma once

#include "kernels/fwd_v5_onchip_cache.cuh"

namespace ch05 {

// The elements from `first` (a multiple of 8) to the end, 32 at a time, by one warp: y, and the
// bytes of the mask from first / 8 to the end of its last word (each byte whole: first is a
// multiple of 8; the bits past n zero).
template <class T, bool kAdd>
__device__ void fwd_byte_tail(const FwdArgs<T>& a, const ChannelParams& p, const ChannelMap& map, std::int64_t first,
                              int lane) {
  const std::int64_t n = a.s.numel(), bytes = 4 * tut::bitmask::word_count(n);
  auto* mask = reinterpret_cast<unsigned char*>(a.mask);
  // To the end of the last word, so that its padding bytes are written (zero) too.
  for (std::int64_t base = first; base < 8 * bytes; base += 32) {
    const std::int64_t i = base + lane;
    bool keep = false;
    if (i < n) {
      int c;
      std::int64_t pos;
      map.locate(i, c, pos);
      float s = fmaf(to_float(a.x[i]) - p.mean[c], p.scale[c], p.shift[c]);
      if constexpr (kAdd) s += to_float(a.r[i]);
      s = round_to<T>(s);
      a.y[i] = from_float<T>(relu(s));
      keep = kept(s);
    }
    const Word bits = __ballot_sync(kFullWarp, keep);  // zero past n: the padding rule
    const std::int64_t b = base / 8 + lane;
    if (lane < 4 && b < bytes) mask[b] = static_cast<unsigned char>(bits >> (8 * lane));
  }
}

// Phase 3: the thread's own packs of 8 halves, back to front, four in flight (two of x and two of r
// in the Add form), each written as y and one byte of the mask.
template <class T, bool kAdd, class Cache>
__device__ void fwd_byte_pass(const FwdArgs<T>& a, const ChannelParams& p, const V3Plan& plan, const Cache& cache,
                              std::int64_t main_end) {
  constexpr int V = 8;
  constexpr int kU = kAdd ? kOwnUnroll / 2 : kOwnUnroll;
  auto* mask = reinterpret_cast<unsigned char*>(a.mask);
  const std::int64_t items = v3_items(a.s, plan);
  if (blockIdx.x >= items) return;
  std::int64_t slots = own_slot_count(a.s, plan, V);
  const std::int64_t last_item = blockIdx.x + (items - 1 - blockIdx.x) / gridDim.x * gridDim.x;
  for (std::int64_t item = last_item; item >= static_cast<std::int64_t>(blockIdx.x); item -= gridDim.x) {
    const OwnItem w = own_item(a.s, plan, V, item, static_cast<int>(threadIdx.x));
    slots -= w.count();  // the slot of this item's first unit
    OwnItem m = w;
    m.end = w.end < main_end ? w.end : main_end;
    const std::int64_t n = m.count();
    if (n == 0) continue;
    int ch[V];
    own_channels<V>(a.s, w, ch);
    float mean[V], scale[V], shift[V];
#pragma unroll
    for (int k = 0; k < V; ++k) mean[k] = p.mean[ch[k]], scale[k] = p.scale[ch[k]], shift[k] = p.shift[ch[k]];
    for (std::int64_t i = n - 1; i >= 0; i -= kU) {
      uint4 q[kU], rq[kU];
#pragma unroll
      for (int b = 0; b < kU; ++b) {
        const std::int64_t ii = i - b;
        q[b] = rq[b] = make_uint4(0, 0, 0, 0);
        if (ii >= 0) {
          const std::int64_t e0 = own_pack_at(a.s, plan, V, w, w.first + ii * w.step);
          q[b] = cache.holds(slots + ii) ? cache.fetch(slots + ii, 0) : load_raw<V, T>(a.x + e0);
          if constexpr (kAdd) rq[b] = load_raw<V, T>(a.r + e0);
        }
      }
#pragma unroll
      for (int b = 0; b < kU; ++b) {
        const std::int64_t ii = i - b;
        if (ii < 0) break;
        const std::int64_t e0 = own_pack_at(a.s, plan, V, w, w.first + ii * w.step);
        float xv[V], rv[V], yv[V];
        unpack<V, T>(q[b], xv);
        if constexpr (kAdd) unpack<V, T>(rq[b], rv);
        unsigned byte = 0;
#pragma unroll
        for (int k = 0; k < V; ++k) {
          float s = fmaf(xv[k] - mean[k], scale[k], shift[k]);
          if constexpr (kAdd) s += rv[k];
          s = round_to<T>(s);
          yv[k] = relu(s);
          byte |= kept(s) ? 1u << k : 0u;
        }
        store_pack<V, T, true>(a.y + e0, yv);
        mask[e0 / V] = static_cast<unsigned char>(byte);
      }
    }
  }
}

template <class T, bool kAdd, class Cache>
__global__ void __launch_bounds__(kBlock, Cache::kMinBlocks)
    fwd_v7_mask_bytes_kernel(FwdArgs<T> a, ChannelParams p, Welford* partials, V3Plan plan, ChannelMap map,
                             std::int64_t main_end, std::int64_t tail_first, int cache_slots) {
  static_assert(std::is_same_v<T, __half>, "a pack of 8 halves is one byte of the mask");
  constexpr int V = 8;
  __shared__ Welford smem[kBlock * V];
  extern __shared__ uint4 ch05_onchip[];
  const Cache cache(ch05_onchip, cache_slots);
  cg::grid_group grid = cg::this_grid();

  // 1. and 2.: v5's.
  fwd_own_stats<V>(a, plan, partials, smem, cache);
  grid.sync();
  own_merge(partials, a.s.C, plan.slots, smem,
            [&](std::int64_t c, Welford total) { finish_forward_channel(a, p, static_cast<int>(c), total); });
  grid.sync();

  // 3. The thread's own packs, a byte of the mask each; the elements past the last whole row by one warp.
  if (blockIdx.x == gridDim.x - 1 && threadIdx.x < 32)
    fwd_byte_tail<T, kAdd>(a, p, map, tail_first, static_cast<int>(threadIdx.x));
  fwd_byte_pass<T, kAdd>(a, p, plan, cache, main_end);
}

template <class T, bool kAdd, int kBlocks>
const void* fwd_v7_kernel() {
  return reinterpret_cast<const void*>(&fwd_v7_mask_bytes_kernel<T, kAdd, SmemCache<T, 1, kBlocks>>);
}

template <class T, bool kAdd, int kBlocks = kOwnBlocks<T>>
void fwd_v7_mask_bytes(cudaStream_t st, const FwdArgs<T>& a, void* ws) {
  static_assert(std::is_same_v<T, __half>, "v7 is the half forward");
  check_shape(a.s, "fwd_v7_mask_bytes");
  constexpr int V = kPack<T>;
  // Operands off their 16-byte alignment (or NCHW with H*W not a multiple of 8): v5's path.
  if (!own_packs_ok<T, kAdd>(a)) return fwd_v5_onchip_cache<T, kAdd, kBlocks>(st, a, ws);
  using Cache = SmemCache<T, 1, kBlocks>;
  const OnChip& oc = onchip_cached<&fwd_v7_kernel<T, kAdd, kBlocks>, kBlocks>(16);
  int slots = onchip_slots(oc, a.s, V, kBlocks);
  const std::size_t dyn = static_cast<std::size_t>(slots) * 16 * kBlock;
  const Scratch sc(a.s.C, v3_partial_bytes(a.s, V, sizeof(Welford)), 0);
  const void* kernel = fwd_v7_kernel<T, kAdd, kBlocks>();
  const int grid = own_grid<Cache>(kernel, dyn, "fwd_v7_mask_bytes");
  V3Plan plan = v3_plan(a.s, V, grid);
  ChannelParams p = sc.params_at(ws);
  Welford* partials = sc.partials_at<Welford>(ws);
  ChannelMap map(a.s);
  // NCHW: every pack of every channel; NHWC: every whole row, the rest (under one row) by the tail.
  std::int64_t main_end = a.s.layout == Layout::nchw ? a.s.per_channel() / V : plan.nhwc.q_full / plan.nhwc.P;
  std::int64_t tail_first = a.s.layout == Layout::nchw ? a.s.numel() : main_end * plan.nhwc.L;
  FwdArgs<T> args_copy = a;  // cudaLaunchCooperativeKernel takes pointers to non-const arguments
  void* args[] = {&args_copy, &p, &partials, &plan, &map, &main_end, &tail_first, &slots};
  TUT_CUDA(cudaLaunchCooperativeKernel(kernel, grid, kBlock, args, dyn, st));
}

template <class T>
std::size_t fwd_v7_scratch_bytes(const Shape4& s) {
  return fwd_v3_scratch_bytes<T>(s);
}

template <class T, bool kAdd, int kBlocks = kOwnBlocks<T>>
std::vector<const void*> fwd_v7_kernels() {
  return {fwd_v7_kernel<T, kAdd, kBlocks>()};
}

}  // namespace ch05
