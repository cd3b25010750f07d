// What every forward kernel shares: its arguments, PyTorch's replacement rule on the device, how a
// result is stored (y and the index in the case's format), the grid rule, and the launchers'
// argument checks. One idea per version file; these pieces are included, never copied.
#pragma once

#include "tut/check.hpp"
#include "tut/elementwise.cuh"
#include "tut/problem.hpp"  // tut::Unsupported
#include "window.hpp"

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

namespace ch06 {

// The largest count a 32-bit index path takes (std::numeric_limits is host-only in device code).
inline constexpr std::int64_t kMaxInt32 = 0x7fffffff;

template <class T>
struct ForwardArgs {
  Window w;
  const T* x = nullptr;
  T* y = nullptr;
  std::int64_t* index = nullptr;     // w.indices == int64
  std::uint8_t* offset8 = nullptr;   // compact, windows of at most 256 cells
  std::int16_t* offset16 = nullptr;  // compact, larger windows
};

// -inf, what a padding cell counts as.
template <class T>
__device__ __forceinline__ T lowest();
template <>
__device__ __forceinline__ float lowest<float>() {
  return -INFINITY;
}
template <>
__device__ __forceinline__ __half lowest<__half>() {
  return __ushort_as_half(0xFC00u);
}

// PyTorch's rule, applied in scan order: v replaces the best so far if it is larger or NaN.
// Written with `|`, not `||`: both tests are cheap, and the short-circuit form makes the compiler
// materialize a bool per cell (PRMT and ISETP around each compare), about 30 % more instructions
// for a 27-cell window. This form is two FSETPs and the selects.
TUT_HD __forceinline__ bool replaces(float best, float v) { return (best < v) | (v != v); }
__device__ __forceinline__ bool replaces(__half best, __half v) { return __hlt(best, v) | __hisnan(v); }

// The order behind PyTorch's rule, for combining the bests of parts of a window in any grouping
// and any order (v8): whether (v, c) outranks (b, bc). NaN outranks every number, and a later NaN
// an earlier one; among numbers the larger value, and of equal values (+0 and -0 are equal) the
// earlier cell. The maximum in this order is what the sequential rule returns: the last NaN, else
// the first of the largest. A cell of -1 means "no cell" (a part wholly in the padding).
template <class T>
TUT_HD inline bool outranks(T v, int c, T b, int bc) {
  if (c < 0) return false;
  if (bc < 0) return true;
  const bool vn = v != v, bn = b != b;
  if (vn | bn) return vn & (!bn | (c > bc));
  return (b < v) | ((v == b) & (c < bc));
}

// The flat index of window cell `cell`, for a window known at compile time (KD, KH, KW > 0: the
// divisions are by constants) or not (0: read from w).
template <int KD = 0, int KH = 0, int KW = 0>
__device__ __forceinline__ std::int64_t flat_index_of(const Window& w, int d0, int h0, int w0, int cell) {
  const int kh = KH > 0 ? KH : w.k[1], kw = KW > 0 ? KW : w.k[2];
  const int jw = cell % kw, t = cell / kw, jh = t % kh, jd = t / kh;
  const std::int64_t d = d0 + jd * w.dil[0], h = h0 + jh * w.dil[1], x = w0 + jw * w.dil[2];
  return (d * w.H + h) * w.W + x;
}

// Stores output o: its value and, in the case's format, the index of its cell. The format is the
// same for every thread, so the branch is uniform.
template <int KD = 0, int KH = 0, int KW = 0, class T>
__device__ __forceinline__ void store_result(const ForwardArgs<T>& a, std::int64_t o, T v, int cell, int d0, int h0,
                                             int w0) {
  a.y[o] = v;
  if (a.w.indices == IndexFormat::int64) {
    a.index[o] = flat_index_of<KD, KH, KW>(a.w, d0, h0, w0, cell);
  } else if (a.w.indices == IndexFormat::compact) {
    if (a.w.compact8()) a.offset8[o] = static_cast<std::uint8_t>(cell);
    else a.offset16[o] = static_cast<std::int16_t>(cell);
  }
}

// The first cell of a window that lies inside the input: PyTorch's starting index.
__device__ __forceinline__ int first_cell(const Window& w, int d0, int h0, int w0) {
  const int fd = first_inside(d0, w.k[0], w.dil[0], w.D), fh = first_inside(h0, w.k[1], w.dil[1], w.H),
            fw = first_inside(w0, w.k[2], w.dil[2], w.W);
  return (fd * w.k[1] + fh) * w.k[2] + fw;
}

// Division by a divisor fixed for the whole launch, without the ~20-instruction division routine:
// a multiply-high, an add and a shift (Granlund and Montgomery's method, as PyTorch's IntDivider
// does it). Exact for 1 <= divisor < 2^31 and 0 <= n < 2^31.
struct FastDiv {
  std::uint32_t divisor = 1, magic = 1, shift = 0;
  FastDiv() = default;
  explicit FastDiv(std::int64_t d) {
    if (d < 1 || d > std::numeric_limits<std::int32_t>::max())
      throw std::invalid_argument("FastDiv: divisor " + std::to_string(d) + " is not in [1, 2^31)");
    divisor = static_cast<std::uint32_t>(d);
    while (shift < 32 && (std::uint64_t{1} << shift) < divisor) ++shift;
    magic = static_cast<std::uint32_t>(((std::uint64_t{1} << 32) * ((std::uint64_t{1} << shift) - divisor)) / divisor + 1);
  }
  TUT_HD std::uint32_t div(std::uint32_t n) const {
#if defined(__CUDA_ARCH__)
    const std::uint32_t t = __umulhi(n, magic);
#else
    const std::uint32_t t = static_cast<std::uint32_t>((static_cast<std::uint64_t>(n) * magic) >> 32);
#endif
    return (t + n) >> shift;
  }
};

// Items that each take a piece of one row of outputs (v13: a pack of outputs a thread; v14: a tile
// of outputs a warp): item t is piece t % per_row of the row t / per_row = (plane * oD + od) * oH + oh.
struct RowPieces {
  std::int64_t count = 0;  // in the launch
  FastDiv by_row, by_oh, by_od;
  int per_row = 1;
  bool narrow = false;  // count < 2^31: the FastDiv path
};
inline RowPieces row_pieces(const Window& w, int per_row) {
  RowPieces g;
  g.per_row = per_row;
  g.count = w.N * w.C * w.oD * w.oH * per_row;
  g.narrow = g.count < kMaxInt32;
  if (g.narrow) g.by_row = FastDiv(per_row), g.by_oh = FastDiv(w.oH), g.by_od = FastDiv(w.oD);
  return g;
}
struct RowPiece {
  std::int64_t row, plane;
  int piece, oh, od;
};
__device__ __forceinline__ RowPiece row_piece(std::int64_t t, const RowPieces& g, const Window& w) {
  RowPiece it;
  if (g.narrow) {
    const auto u = static_cast<std::uint32_t>(t);
    const std::uint32_t r = g.by_row.div(u), z = g.by_oh.div(r), n = g.by_od.div(z);
    it.piece = static_cast<int>(u - r * static_cast<std::uint32_t>(g.per_row));
    it.oh = static_cast<int>(r - z * static_cast<std::uint32_t>(w.oH));
    it.od = static_cast<int>(z - n * static_cast<std::uint32_t>(w.oD));
    it.row = r, it.plane = n;
  } else {
    it.row = t / g.per_row;
    const std::int64_t z = it.row / w.oH;
    it.plane = z / w.oD;
    it.piece = static_cast<int>(t - it.row * g.per_row), it.oh = static_cast<int>(it.row - z * w.oH),
    it.od = static_cast<int>(z - it.plane * w.oD);
  }
  return it;
}

// An NDHWC thread item o -> (n, od, oh, ow, channel group g), the group fastest (v7, v8): in 32 bits
// with FastDiv when every item fits (`narrow`, the same for every thread), else with 64-bit division.
struct ChannelItem {
  std::int64_t g, n;
  int ow, oh, od;
};
__device__ __forceinline__ ChannelItem channel_item(std::int64_t o, std::int64_t groups, bool narrow, const Window& w,
                                                    const FastDiv& by_groups, const FastDiv& by_ow,
                                                    const FastDiv& by_oh, const FastDiv& by_od) {
  ChannelItem it;
  if (narrow) {
    std::uint32_t r = static_cast<std::uint32_t>(o), q = by_groups.div(r);
    it.g = r - q * static_cast<std::uint32_t>(groups);
    r = q;
    q = by_ow.div(r);
    it.ow = static_cast<int>(r - q * w.oW);
    r = q;
    q = by_oh.div(r);
    it.oh = static_cast<int>(r - q * w.oH);
    r = q;
    q = by_od.div(r);
    it.od = static_cast<int>(r - q * w.oD);
    it.n = q;
  } else {
    it.g = o % groups;
    std::int64_t r = o / groups;
    it.ow = static_cast<int>(r % w.oW);
    r /= w.oW;
    it.oh = static_cast<int>(r % w.oH);
    r /= w.oH;
    it.od = static_cast<int>(r % w.oD);
    it.n = r / w.oD;
  }
  return it;
}

// channel_item's divisors for `groups` channel groups: FastDivs where every item fits 32 bits
// (`narrow`), else defaults that channel_item does not use (it divides in 64 bits there).
struct ChannelDivs {
  FastDiv groups, ow, oh, od;
};
inline ChannelDivs channel_divs(const Window& w, std::int64_t groups, bool narrow) {
  if (!narrow) return {};
  return {FastDiv(groups), FastDiv(w.oW), FastDiv(w.oH), FastDiv(w.oD)};
}

// The V channels of one NDHWC output position from out0 on: y in one pack, then the index the case
// asks for (flat, or the cell in a byte or 16 bits).
template <int V, class T>
__device__ __forceinline__ void store_channels(const ForwardArgs<T>& a, std::int64_t out0, const T (&best)[V],
                                               const int (&cell)[V], int d0, int h0, int w0) {
  const Window& w = a.w;
  tut::ew::Packed<T, V> y;
#pragma unroll
  for (int l = 0; l < V; ++l) y.elem[l] = best[l];
  *reinterpret_cast<tut::ew::Packed<T, V>*>(a.y + out0) = y;
  if (w.indices != IndexFormat::none) {
#pragma unroll
    for (int l = 0; l < V; ++l) {
      if (w.indices == IndexFormat::int64) a.index[out0 + l] = flat_index_of(w, d0, h0, w0, cell[l]);
      else if (w.compact8()) a.offset8[out0 + l] = static_cast<std::uint8_t>(cell[l]);
      else a.offset16[out0 + l] = static_cast<std::int16_t>(cell[l]);
    }
  }
}

// Output element o -> its position, in the case's layout. When the output has fewer than 2^31
// elements (every case but the largest), in 32 bits with FastDiv; else with 64-bit division. The
// choice is the same for every thread.
struct OutDecoder {
  Window w;
  bool narrow = true;
  FastDiv by_ow, by_oh, by_od, by_c;
  OutDecoder() = default;
  explicit OutDecoder(const Window& win)
      : w(win), narrow(win.out_numel() <= std::numeric_limits<std::int32_t>::max()) {
    if (narrow) {
      by_ow = FastDiv(w.oW);
      by_oh = FastDiv(w.oH);
      by_od = FastDiv(w.oD);
      by_c = FastDiv(w.C);
    }
  }
  TUT_HD OutPos operator()(std::int64_t o) const {
    if (!narrow) return out_pos(w, o);
    std::uint32_t r = static_cast<std::uint32_t>(o), q;
    OutPos p;
    if (w.layout == Layout::ndhwc) {
      q = by_c.div(r);
      p.c = r - q * static_cast<std::uint32_t>(w.C);
      r = q;
    }
    q = by_ow.div(r);
    p.ow = static_cast<int>(r - q * w.oW);
    r = q;
    q = by_oh.div(r);
    p.oh = static_cast<int>(r - q * w.oH);
    r = q;
    q = by_od.div(r);
    p.od = static_cast<int>(r - q * w.oD);
    if (w.layout == Layout::ndhwc) {
      p.n = q;
    } else {
      const std::uint32_t n = by_c.div(q);
      p.n = n;
      p.c = q - n * static_cast<std::uint32_t>(w.C);
    }
    return p;
  }
};

// ---- host side -----------------------------------------------------------------------------------

// Whether no input cell lies in two windows: the window's span is at most the stride on every axis.
inline bool windows_disjoint(const Window& w) {
  for (int i = 0; i < 3; ++i)
    if (static_cast<std::int64_t>(w.k[i] - 1) * w.dil[i] + 1 > w.s[i]) return false;
  return true;
}

// Whether every window lies wholly inside the input: no padding, and no last window that
// ceil_mode cuts.
inline bool windows_inside(const Window& w) {
  const int in[3] = {w.D, w.H, w.W}, out[3] = {w.oD, w.oH, w.oW};
  for (int i = 0; i < 3; ++i)
    if (w.p[i] != 0 || static_cast<std::int64_t>(out[i] - 1) * w.s[i] + static_cast<std::int64_t>(w.k[i] - 1) * w.dil[i] + 1 > in[i])
      return false;
  return true;
}

// The fast paths index within a plane in 32 bits: the plane and a window's reach past it must fit.
inline bool plane_fits_32_bits(const Window& w) {
  return static_cast<std::int64_t>(w.D + w.k[0]) * (w.H + w.k[1]) * (w.W + w.k[2]) <
         std::numeric_limits<std::int32_t>::max();
}

// The current device's SM count.
inline int device_sms() {
  int dev = 0, sms = 0;
  TUT_CUDA(cudaGetDevice(&dev));
  TUT_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  return sms;
}

// How many blocks of `kernel` (`block` threads, `smem` bytes of dynamic shared memory) the device
// holds at once: its SMs times the blocks that fit on one, at least one per SM.
inline std::int64_t resident_blocks(const void* kernel, int block, std::size_t smem) {
  int per_sm = 0;
  TUT_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, block, smem));
  return static_cast<std::int64_t>(device_sms()) * std::max(1, per_sm);
}

// The grid of a kernel whose blocks loop over their work: the blocks it needs, at most one wave
// of `resident` blocks, and at least one.
inline unsigned one_wave_grid(std::int64_t needed, std::int64_t resident) {
  return static_cast<unsigned>(std::max<std::int64_t>(1, std::min(needed, resident)));
}

// Why a backward writer for disjoint windows refuses a case ("" when it takes it): `who` takes
// windows that do not overlap, and indexes a plane in 32 bits.
inline std::string disjoint_writer_refuses(const Window& w, const char* who) {
  if (!windows_disjoint(w)) return std::string(who) + " takes windows that do not overlap (span <= stride)";
  if (!plane_fits_32_bits(w)) return std::string(who) + " indexes a plane in 32 bits; this one is larger";
  return {};
}

// Blocks for a grid-stride loop over `work` items: enough for the device's waves, no more than the
// work needs (chapter 01's rule).
inline unsigned grid_for(std::int64_t work, int block, const char* who) {
  std::int64_t blocks = 0;
  TUT_CUDA(tut::ew::waves_grid_size(work, block, &blocks));
  if (blocks < 1 || blocks > std::numeric_limits<int>::max())
    throw std::invalid_argument(std::string(who) + ": no valid grid for " + std::to_string(work) + " items");
  return static_cast<unsigned>(blocks);
}

// What every forward launcher checks before it launches: a window window_of would return, and the
// pointers its index format needs.
template <class T>
void check_forward(const ForwardArgs<T>& a, const char* who) {
  const Window& w = a.w;
  const auto fail = [who](const std::string& why) { throw std::invalid_argument(std::string(who) + ": " + why); };
  if (w.N < 1 || w.C < 1 || w.D < 1 || w.H < 1 || w.W < 1) fail("every dimension must be at least 1");
  if (w.oD < 1 || w.oH < 1 || w.oW < 1) fail("every output size must be at least 1");
  for (int i = 0; i < 3; ++i)
    if (w.k[i] < 1 || w.s[i] < 1 || w.dil[i] < 1 || w.p[i] < 0 || 2 * w.p[i] > w.k[i])
      fail("kernel, stride and dilation must be >= 1 and padding in [0, kernel / 2]");
  if (!a.x || !a.y) fail("x and y must be device pointers");
  if (w.indices == IndexFormat::int64 && !a.index) fail("indices=int64 needs the index array");
  if (w.indices == IndexFormat::compact && w.cells() > kMaxCompactCells) fail("window too large for the compact index");
  if (w.indices == IndexFormat::compact && !(w.compact8() ? static_cast<const void*>(a.offset8)
                                                          : static_cast<const void*>(a.offset16)))
    fail("indices=compact needs the offset array of its width");
}

}  // namespace ch06
