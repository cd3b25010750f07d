// bwd v5_onchip_cache: bwd v4, with each thread's first packs kept in shared memory from phase 1
// to phase 3, as fwd v5 does (kernels/fwd_v5_onchip_cache.cuh).
//
// What changed since v4: phase 1 stores, for each of the thread's first K packs, g (dy where the
// mask bit is set, else 0) and x: two 16-byte parts per slot, all that the dx pass needs. Phase 3
// reads those from shared memory instead of dy, x and the mask from DRAM.
// Bytes: each cached pack saves 32 bytes of dy and x and 1/2 byte of mask (float): at three blocks
// per SM, 8 slots per thread, ~25 MB of shared memory saves ~25 MB of the second read, 2.4 % of
// the two-pass bytes at 64x64x112x112 (1.04 GB); at 16x32x112x112 a fifth of the second read.
// Prediction: DRAM bytes read fall by the cached bytes (dram__bytes_read.sum, v4 against v5),
// and the time by their share: a few per cent at 64x64x112x112.
// Measured on the H100 (results/NVIDIA_H100_80GB_HBM3.json, 64x64x112x112): NCHW float 0.3469 ms,
// between v4 (0.3428) and v3 (0.3502); NHWC float 0.3488, reading 785 MB against v3's 814
// (ncu_nhwc.csv), with the DRAM busy 84 % of the time against 87 %; half NHWC 0.1903 against 0.1884.
#pragma once

#include "kernels/bwd_v4_own_packs.cuh"
#include "kernels/fwd_v5_onchip_cache.cuh"

namespace ch05 {

template <int V, class T, bool kAdd, int kBlocks>
const void* bwd_v5_kernel() {
  return reinterpret_cast<const void*>(&bwd_v4_own_packs_kernel<V, T, kAdd, SmemCache<T, 2, kBlocks>>);
}

template <class T, bool kAdd, int kBlocks = kOwnBlocksBwd>
void bwd_v5_onchip_cache(cudaStream_t st, const BwdArgs<T>& a, void* ws) {
  check_shape(a.s, "bwd_v5_onchip_cache");
  constexpr int V = kPack<T>;
  if (!bwd_own_packs_ok<T, kAdd>(a)) return bwd_v4_own_packs<T, kAdd, kBlocks>(st, a, ws);
  const OnChip& oc = onchip_cached<&bwd_v5_kernel<V, T, kAdd, kBlocks>, kBlocks>(32);
  const int slots = onchip_slots(oc, a.s, V, kBlocks);
  const Scratch sc(a.s.C, v3_partial_bytes(a.s, V, sizeof(GradSums)), 0);
  bwd_own_launch<V, T, kAdd, SmemCache<T, 2, kBlocks>>(st, a, sc, ws, static_cast<std::size_t>(slots) * 32 * kBlock, slots);
}

template <class T>
std::size_t bwd_v5_scratch_bytes(const Shape4& s) {
  return bwd_v3_scratch_bytes<T>(s);
}

template <class T, bool kAdd, int kBlocks = kOwnBlocksBwd>
std::vector<const void*> bwd_v5_kernels() {
  return {bwd_v5_kernel<kPack<T>, T, kAdd, kBlocks>()};
}

}  // namespace ch05
