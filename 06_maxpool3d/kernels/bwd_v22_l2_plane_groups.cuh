// bwd v22_l2_plane_groups: v21's counters kept in the L2, a group of planes at a time.
//
// Why. v21 (exact 63-bit integers added to a 64-bit counter per dx cell) zeroes, adds to and reads
// 8 bytes of counters per dx cell. On kernel 8 stride 1, 1 x 16 x 64^3, they are 33.5 MB, and
// Nsight Compute showed them leave the L2 between v21's scatter and its rounding: its rounding
// kernel read 33.6 MB of them back from DRAM, and its first kernel (the zeroing) took 14.6 us of
// its 56 (results/NVIDIA_H200.v21.ncu.txt).
//
// How. The same three kernels, launched on a group of planes at a time, each group's counters at
// the start of the scratch: so the counters take at most an L2 share (a third of the device's L2;
// 16.7 MB on the H100, 20 MB on the H200: 8 planes of 64^3 on either). The zeroing then writes into
// lines the L2 already holds, the scatter's 64-bit reductions find them there, and the rounding
// reads them from there. After reading a line of counters, the rounding drops it from the L2
// (discard.global.L2), so that it is never written back: the next group zeroes it again. Each
// group's first kernel reads the group's dy, which its scatter then finds in the L2 too.
//
// Prediction (made before any measurement), kernel 8 stride 1 on 1 x 16 x 64^3 with int64 indices:
// DRAM down to dy once (11.9 MB), the index once (23.7 MB) and dx once (16.8 MB): about 52 MB
// against v21's 104 MB; the first kernel no longer bound by writing the counters to DRAM, and the
// rounding by reading them. The scatter's instructions are v21's, so it stays about v21's 27.7 us
// unless its reductions were waiting on DRAM.
//
// Measured (H200, results/forms/v22_*): the bytes as predicted, the time not. With the L2 left as
// each kernel before it left it (profile_cases.py --keep-l2), v22's rounding read no counter from
// DRAM, where v21's read 9.7 MB; but v21's own three kernels had moved only 101.8 MB in 56.7 us,
// 1.8 TB/s against a copy ceiling of 4.27: v21 was not waiting on DRAM. (Its 33.6 MB of counters read
// back from DRAM, quoted before, were Nsight Compute's: by default it flushes the caches before each
// kernel.) Each of v22's kernels on half the planes took 0.57 to 0.67 of v21's on all of them, so
// two groups cost 1.27x v21's time: raced in one process on kernel 8 stride 1, 0.618x PyTorch where
// v21 ran 0.771x. Smaller groups lost more: a group of 2 planes (a twelfth of the L2) ran 2.6x v21's
// time. v22 is kept as the measured reason why bytes were not v21's limit; auto does not take it.
//
// Limits: v21's (NCDHW, dilation 1, at most 2048 outputs covering one cell, a plane that fits
// 32-bit offsets). A plane whose counters alone pass the share is a group of one. Scratch: 8
// bytes per cell of a group, and a few per plane.
#pragma once

#include "kernels/bwd_v21_fixed_point_global.cuh"

#include <algorithm>
#include <cstdint>

namespace ch06 {

inline constexpr int kL2Share = 3;  // the counters of a group take at most l2 / kL2Share bytes
// Blocks per plane at most in kernels 1 and 2: a group of few planes still fills the device (v21's
// 64 left a group of 2 planes 128 blocks, and 8 groups of 2 ran 2.8x v21's time,
// results/forms/v22_capped_grid.*).
inline constexpr int kL2MaxParts = 1024;

// Planes per group for a device with `l2_bytes` of L2: as many as fit the share (at least one),
// spread evenly over the fewest groups.
inline std::int64_t l2_group_planes(const Window& w, std::int64_t l2_bytes, int share = kL2Share) {
  const std::int64_t planes = w.N * w.C;
  const std::int64_t plane_bytes = w.in_plane() * static_cast<std::int64_t>(sizeof(unsigned long long));
  const std::int64_t fit = std::max<std::int64_t>(1, l2_bytes / share / plane_bytes);
  const std::int64_t groups = (planes + fit - 1) / fit;
  return (planes + groups - 1) / groups;
}

// The current device's L2, read once per device.
inline std::int64_t device_l2_bytes() {
  static int cache[64] = {};
  int dev = 0;
  TUT_CUDA(cudaGetDevice(&dev));
  int& l2 = cache[dev & 63];
  if (l2 == 0) TUT_CUDA(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
  return l2;
}

template <class T, int Share = kL2Share>
std::size_t bwd_v22_scratch_bytes(const Window& w) {
  return glob_scratch(w, l2_group_planes(w, device_l2_bytes(), Share), kL2MaxParts).bytes;
}

template <class T>
std::string bwd_v22_refuses(const Window& w) {
  return fixed_point_refuses(w, "bwd_v22_l2_plane_groups");
}

template <class T, int Share = kL2Share>
void bwd_v22_l2_plane_groups(cudaStream_t s, const BackwardArgs<T>& a, void* scratch, std::size_t scratch_bytes) {
  glob_run<ZeroedCounters<true>>(s, a, scratch, scratch_bytes, "bwd_v22_l2_plane_groups", l2_group_planes(a.w, device_l2_bytes(), Share),
                 kL2MaxParts);
}

template <class T>
std::vector<const void*> bwd_v22_kernels() {
  return glob_kernels<ZeroedCounters<true>, LaneScatter, T>();
}

}  // namespace ch06
