// fwd v17_plane_slabs: NCDHW, windows that do not overlap and no padding, planes small enough that
// the kD planes an output slice reads (a slab) fit in shared memory. A block copies a slab with
// 16-byte loads over its whole run of memory, whatever the row length, then takes the slice's
// outputs from shared memory.
//
// Why. On 8 x 64 x 33^3 with kernel 2 in ceil mode (the suite's odd case), a row of 33 floats is
// 132 bytes: rows do not start on 16 bytes, so v4, v13 and v15 read it cell by cell, and v13,
// auto's choice, ran 0.759 of copy on the H200 in the run of commit 6f065d4, where a copy of the
// same bytes runs 0.860 (results/copy_at_size/). But an output slice's kD planes are one run of
// kD x H x W elements in memory: read as one run, 16 bytes a load, and only the run's first and
// last few elements need smaller loads.
//
// How. One slab per block at a time (a grid-stride loop over the N C oD slices): the run's 16-byte
// aligned middle is loaded with 16-byte loads and stored to shared memory at the same offset
// modulo 16, its head and tail element by element; a barrier; then each thread takes outputs of
// the slice (consecutive threads consecutive ow) and walks its window in shared memory in scan
// order with PyTorch's rule (no padding, so every window's first cell is inside, and in ceil mode
// the cells past the input are skipped); the result and its index are stored as every version
// stores them. A second barrier before the next slab. Kernel 2 x 2 x 2 is unrolled at compile
// time; other windows loop.
//
// Prediction (before any run): the DRAM streams each slab as a copy does; on 33^3 in ceil mode,
// near the copy of its size (0.86), above v13's 0.759; about 40 instructions an output (8
// shared-memory loads, the rule's two compares and two selects per cell) against v13's ~100.
// Shared-memory bank conflicts of two ways on float reads with stride 2 (neighbouring threads'
// windows are 2 floats apart), as v3's.
#pragma once

#include "kernels/pool.cuh"

#include <string>
#include <vector>

namespace ch06 {

inline constexpr int kPlaneSlabBlock = 256;
inline constexpr std::size_t kPlaneSlabBytes = 24 * 1024;  // a slab at most: 6 blocks of 256 on an SM hold 144 KiB

// The elements of output slice od's slab: its kD planes, fewer where ceil_mode's last window
// reaches past D.
TUT_HD inline std::int64_t slab_planes(const Window& w, int od) {
  const int d0 = od * w.s[0];
  return w.k[0] < w.D - d0 ? w.k[0] : w.D - d0;
}

template <class T>
std::string fwd_v17_refuses(const Window& w) {
  if (w.layout != Layout::ncdhw) return "fwd_v17_plane_slabs reads the layout NCDHW only";
  if (w.dilated()) return "fwd_v17_plane_slabs takes dilation 1 only";
  if (w.p[0] != 0 || w.p[1] != 0 || w.p[2] != 0) return "fwd_v17_plane_slabs takes padding 0 only";
  if (!windows_disjoint(w)) return "fwd_v17_plane_slabs takes windows that do not overlap (kernel <= stride)";
  if (!plane_fits_32_bits(w)) return "fwd_v17_plane_slabs indexes a plane in 32 bits; this one is larger";
  if (static_cast<double>(w.k[0]) * w.H * w.W * sizeof(T) + 16 > static_cast<double>(kPlaneSlabBytes))
    return "fwd_v17_plane_slabs: the kD planes of an output slice take more than 24 KiB";
  return {};
}

// KD, KH, KW: the window at compile time (all three > 0) or read from w (0).
template <int KD, int KH, int KW, class T>
__global__ void __launch_bounds__(kPlaneSlabBlock) fwd_v17_plane_slabs_kernel(ForwardArgs<T> a) {
  constexpr int V = 16 / static_cast<int>(sizeof(T));
  extern __shared__ __align__(16) unsigned char smem_raw[];
  T* const slab = reinterpret_cast<T*>(smem_raw);
  const Window& w = a.w;
  const int kd = KD > 0 ? KD : w.k[0], kh = KH > 0 ? KH : w.k[1], kw = KW > 0 ? KW : w.k[2];
  const int HW = w.H * w.W, outs = w.oH * w.oW;
  const std::int64_t slices = w.N * w.C * w.oD;
  const int t = static_cast<int>(threadIdx.x);
  for (std::int64_t z = blockIdx.x; z < slices; z += gridDim.x) {
    const std::int64_t nc = z / w.oD;
    const int od = static_cast<int>(z - nc * w.oD);
    const int planes = static_cast<int>(slab_planes(w, od));
    const T* src = a.x + nc * w.in_plane() + static_cast<std::int64_t>(od) * w.s[0] * HW;
    const int len = planes * HW;
    // The slab's element i goes to slab[pre + i], pre being src's offset in its 16-byte line, so
    // that 16-byte aligned global words land on 16-byte aligned shared words.
    const int pre = static_cast<int>((reinterpret_cast<std::uintptr_t>(src) % 16) / sizeof(T));
    const int head = pre == 0 ? 0 : V - pre;                     // elements before the first aligned word
    const int words = head < len ? (len - head) / V : 0;          // whole 16-byte words
    const int tail0 = head < len ? head + words * V : len;        // elements after them
    for (int i = t; i < words; i += kPlaneSlabBlock)
      reinterpret_cast<uint4*>(slab + pre + head)[i] = reinterpret_cast<const uint4*>(src + head)[i];
    if (t < head && t < len) slab[pre + t] = src[t];
    for (int i = tail0 + t; i < len; i += kPlaneSlabBlock) slab[pre + i] = src[i];
    __syncthreads();
    const std::int64_t out0 = z * outs;
    for (int o = t; o < outs; o += kPlaneSlabBlock) {
      const int oh = o / w.oW, ow = o - oh * w.oW;
      const int h0 = oh * w.s[1], w0 = ow * w.s[2];
      const T* corner = slab + pre + h0 * w.W + w0;
      T best = lowest<T>();
      int cell = 0;  // no padding: the window's first cell is inside
      // The window's cells inside the input: all of them but in ceil_mode's last windows.
      const int nd = planes < kd ? planes : kd, nh = w.H - h0 < kh ? w.H - h0 : kh, nw = w.W - w0 < kw ? w.W - w0 : kw;
      const auto visit = [&](int jd, int jh, int jw) {
        const T v = corner[(jd * w.H + jh) * w.W + jw];
        if (replaces(best, v)) {
          best = v;
          cell = (jd * kh + jh) * kw + jw;
        }
      };
      if constexpr (KD > 0 && KH > 0 && KW > 0) {  // unrolled, each cell under a predicate
#pragma unroll
        for (int jd = 0; jd < KD; ++jd)
#pragma unroll
          for (int jh = 0; jh < KH; ++jh)
#pragma unroll
            for (int jw = 0; jw < KW; ++jw)
              if (jd < nd && jh < nh && jw < nw) visit(jd, jh, jw);
      } else {
        for (int jd = 0; jd < nd; ++jd)
          for (int jh = 0; jh < nh; ++jh)
            for (int jw = 0; jw < nw; ++jw) visit(jd, jh, jw);
      }
      store_result<KD, KH, KW>(a, out0 + o, best, cell, od * w.s[0], h0, w0);
    }
    __syncthreads();  // the next slab overwrites this one
  }
}

template <class T>
void fwd_v17_plane_slabs(cudaStream_t s, const ForwardArgs<T>& a) {
  check_forward(a, "fwd_v17_plane_slabs");
  if (const std::string why = fwd_v17_refuses<T>(a.w); !why.empty()) throw tut::Unsupported(why);
  const Window& w = a.w;
  const std::size_t bytes = static_cast<std::size_t>(w.k[0]) * w.H * w.W * sizeof(T) + 16;
  const bool two = w.k[0] == 2 && w.k[1] == 2 && w.k[2] == 2;
  const auto kernel = two ? &fwd_v17_plane_slabs_kernel<2, 2, 2, T> : &fwd_v17_plane_slabs_kernel<0, 0, 0, T>;
  // More than 48 KiB of dynamic shared memory must be asked for; kPlaneSlabBytes is less.
  const std::int64_t slices = w.N * w.C * w.oD;
  const unsigned grid = one_wave_grid(slices, resident_blocks(reinterpret_cast<const void*>(kernel), kPlaneSlabBlock, bytes));
  kernel<<<grid, kPlaneSlabBlock, bytes, s>>>(a);
  TUT_CHECK_LAUNCH("fwd_v17_plane_slabs_kernel");
}

template <class T>
std::vector<const void*> fwd_v17_kernels() {
  return {TUT_KERNEL((fwd_v17_plane_slabs_kernel<2, 2, 2, T>)), TUT_KERNEL((fwd_v17_plane_slabs_kernel<0, 0, 0, T>))};
}

}  // namespace ch06
