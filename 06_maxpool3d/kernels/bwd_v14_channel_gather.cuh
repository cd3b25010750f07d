// bwd v14_channel_gather: the deterministic gather in NDHWC, a thread per V channels (16 bytes) of
// one input position, for windows with at most 2 covering outputs per axis (kernel <= 2 x stride:
// the stem's kernel 3 stride 2).
//
// What the earlier gathers paid for. v1 and v11 gave a thread one element: every candidate output
// cost its 64-bit output number, its address, its load, a compare and a masked add, about 20
// instructions, for one element; v11 measured 390 M warp instructions on the NDHWC stem case
// (8x64x16x56x56, kernel 3 stride 2 padding 1), 0.095 of copy, bound by issue. In NDHWC the V
// channels of a position share everything but the values: the same covering outputs, the same
// flat index to compare with, the same window cell. Here a thread carries V = 4 channels: per
// candidate one 16-byte load of dy, one or two of the index (int64: 32 bytes; compact: V bytes or
// V shorts) and V compares and adds, so the per-candidate arithmetic is paid once for 4 elements,
// and consecutive threads take consecutive channel groups, so every load and the store are
// contiguous along C.
//
// The candidates: along each axis the covering outputs are lo, lo + 1 (at most 2 when k <= 2s),
// so 8 slots, fixed at compile time, taken in two halves of 4 (the first output along D, then the
// second where there is one). A half's loads are all issued before its first compare; a slot past
// its axis's range loads nothing.
// The sum is v1's: dy of the outputs whose index names the element, added from +0 in (od, oh, ow)
// ascending order, so the bits are v1's on every run.
//
// First form's prediction (the NDHWC stem case, int64): 6.4 M threads, about 80 instructions each,
// about 16 M warp instructions against v11's 390 M; bound by memory, about 0.6 of copy where
// PyTorch's scatter ran at 0.387 and auto (v9's ordered tile) at 0.367. Measured (H100,
// results/forms/fourth.*): 0.277 of copy, 167.7 us, 83.1 M warp instructions, 122 registers (21.8 %
// of the warps resident), DRAM 21 % busy, and 87.2 M L1 sectors for 4.8 M load requests. The first
// form loaded all 8 slots, live or not, to keep every load ahead of the compares: a cell has 3.4
// live slots on average, so 58 % of the loads (and their sectors) were for nothing, and the 8
// slots' 96 loaded registers held the occupancy down. Second form (this code): a slot past its
// axes' ranges loads nothing, and the slots go in two halves of 4 (88 registers; still 2 blocks
// per SM). Prediction: about 0.42 of the L1 sectors and a third fewer instructions: about twice
// as fast, so above PyTorch's 0.387.
//
// Measured, this form (H100 suite run, results/): 0.300 of copy against v9's 0.366 and v0's 0.408;
// Nsight Compute 154.3 us, L1 sectors down to 33.6 M (0.39 of the first form's, as predicted) but
// warp instructions only to 79.7 M (0.96 of them, predicted 0.67), 22 % of the warps resident,
// DRAM 23 % busy. The loads were not the cost: each thread's decode, its 8 slots' output numbers in
// 64 bits, the windows' cells and the 4-way compares are, about 400 instructions per warp of
// 4 x 32 cells. Not taken by the dispatcher.
#pragma once

#include "kernels/bwd.cuh"

namespace ch06 {

struct ChannelGatherArgs {
  bool narrow = true;  // thread numbers fit 32 bits
  std::int64_t threads = 0;
  FastDiv by_groups, by_w, by_h, by_d;
  FastDiv by_s[3];
};

// Along one axis, the first covering output of cell x and how many there are (0, 1 or 2).
__device__ __forceinline__ int first_cover(int x, int k, int s, int p, int out, const FastDiv& by_s, int& count) {
  const int top = x + p, bottom = x + p - (k - 1);
  const int hi = min(out - 1, static_cast<int>(by_s.div(static_cast<std::uint32_t>(top))));
  const int lo = bottom <= 0 ? 0 : static_cast<int>(by_s.div(static_cast<std::uint32_t>(bottom + s - 1)));
  count = hi >= lo ? hi - lo + 1 : 0;
  return count > 0 ? lo : 0;
}

template <int V, int kFormat, class T>  // kFormat: 0 int64, 1 compact 8-bit, 2 compact 16-bit
__global__ void __launch_bounds__(256) bwd_v14_channel_gather_kernel(BackwardArgs<T> a, ChannelGatherArgs ga) {
  using Pack = tut::ew::Packed<T, V>;
  const Window& w = a.w;
  const std::int64_t groups = w.C / V;
  for (std::int64_t t = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; t < ga.threads;
       t += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    std::int64_t g, n;
    int x, y, z;  // w, h, d
    if (ga.narrow) {
      std::uint32_t r = static_cast<std::uint32_t>(t), q = ga.by_groups.div(r);
      g = r - q * static_cast<std::uint32_t>(groups);
      r = q;
      q = ga.by_w.div(r);
      x = static_cast<int>(r - q * w.W);
      r = q;
      q = ga.by_h.div(r);
      y = static_cast<int>(r - q * w.H);
      r = q;
      q = ga.by_d.div(r);
      z = static_cast<int>(r - q * w.D);
      n = q;
    } else {
      g = t % groups;
      std::int64_t r = t / groups;
      x = static_cast<int>(r % w.W);
      r /= w.W;
      y = static_cast<int>(r % w.H);
      r /= w.H;
      z = static_cast<int>(r % w.D);
      n = r / w.D;
    }
    int cd, ch, cw;
    const int od0 = first_cover(z, w.k[0], w.s[0], w.p[0], w.oD, ga.by_s[0], cd);
    const int oh0 = first_cover(y, w.k[1], w.s[1], w.p[1], w.oH, ga.by_s[1], ch);
    const int ow0 = first_cover(x, w.k[2], w.s[2], w.p[2], w.oW, ga.by_s[2], cw);
    const std::int64_t flat = (static_cast<std::int64_t>(z) * w.H + y) * w.W + x;
    Pack acc;
#pragma unroll
    for (int l = 0; l < V; ++l) acc.elem[l] = T(0);
    // Two halves of 4 slots (od0, then od0 + 1), each's loads issued before its compares; the
    // second half only where the cell has a second output along D.
#pragma unroll 1
    for (int jd = 0; jd < cd; ++jd) {
      const int od = od0 + jd;
      Pack grad[4];
      std::int64_t saved[4][V];
      int want[4];  // what a matching index holds: the flat index (int64) or the window cell
      bool live[4];
#pragma unroll
      for (int slot = 0; slot < 4; ++slot) {
        const int jh = slot >> 1, jw = slot & 1;
        live[slot] = jh < ch && jw < cw;
        if (!live[slot]) continue;  // no load for a slot past its axes' ranges
        const int oh = oh0 + jh, ow = ow0 + jw;
        const std::int64_t o = (((n * w.oD + od) * w.oH + oh) * w.oW + ow) * w.C + g * V;
        want[slot] = ((z + w.p[0] - od * w.s[0]) * w.k[1] + (y + w.p[1] - oh * w.s[1])) * w.k[2] + (x + w.p[2] - ow * w.s[2]);
        grad[slot] = *reinterpret_cast<const Pack*>(a.dy + o);
        if constexpr (kFormat == 0) {
          const auto p = *reinterpret_cast<const tut::ew::Packed<std::int64_t, V>*>(a.index + o);
#pragma unroll
          for (int l = 0; l < V; ++l) saved[slot][l] = p.elem[l];
        } else if constexpr (kFormat == 1) {
          const auto p = *reinterpret_cast<const tut::ew::Packed<std::uint8_t, V>*>(a.offset8 + o);
#pragma unroll
          for (int l = 0; l < V; ++l) saved[slot][l] = p.elem[l];
        } else {
          const auto p = *reinterpret_cast<const tut::ew::Packed<std::int16_t, V>*>(a.offset16 + o);
#pragma unroll
          for (int l = 0; l < V; ++l) saved[slot][l] = p.elem[l];
        }
      }
#pragma unroll
      for (int slot = 0; slot < 4; ++slot)
        if (live[slot]) {
          const std::int64_t match = kFormat == 0 ? flat : static_cast<std::int64_t>(want[slot]);
#pragma unroll
          for (int l = 0; l < V; ++l)
            if (saved[slot][l] == match) acc.elem[l] += grad[slot].elem[l];
        }
    }
    *reinterpret_cast<Pack*>(a.dx + ((((n * w.D + z) * w.H + y) * w.W + x) * w.C + g * V)) = acc;
  }
}

template <class T>
std::string bwd_v14_refuses(const Window& w) {
  if (w.layout != Layout::ndhwc) return "bwd_v14_channel_gather reads the layout NDHWC only";
  if (w.dilated()) return "bwd_v14_channel_gather takes dilation 1 only";
  for (int i = 0; i < 3; ++i)
    if (w.k[i] > 2 * w.s[i]) return "bwd_v14_channel_gather takes at most 2 covering outputs per axis (kernel <= 2 x stride)";
  if (!plane_fits_32_bits(w)) return "bwd_v14_channel_gather indexes a plane in 32 bits; this one is larger";
  return {};
}

// The pack: V channels where C is a multiple of V and dy, dx and the index array are aligned for
// packs of V of their types; 4, 2 or 1.
template <class T>
int bwd_v14_pack(const BackwardArgs<T>& a) {
  for (int V : {4, 2}) {
    if (a.w.C % V != 0) continue;
    const bool idx = a.w.indices == IndexFormat::int64
                         ? reinterpret_cast<std::uintptr_t>(a.index) % (V * 8) == 0
                         : a.w.compact8() ? reinterpret_cast<std::uintptr_t>(a.offset8) % V == 0
                                          : reinterpret_cast<std::uintptr_t>(a.offset16) % (V * 2) == 0;
    if (idx && reinterpret_cast<std::uintptr_t>(a.dy) % (V * sizeof(T)) == 0 &&
        reinterpret_cast<std::uintptr_t>(a.dx) % (V * sizeof(T)) == 0)
      return V;
  }
  return 1;
}

template <class T>
void bwd_v14_channel_gather(cudaStream_t s, const BackwardArgs<T>& a) {
  check_backward(a, "bwd_v14_channel_gather");
  if (const std::string why = bwd_v14_refuses<T>(a.w); !why.empty()) throw tut::Unsupported(why);
  const Window& w = a.w;
  const int V = bwd_v14_pack(a);
  ChannelGatherArgs ga;
  ga.threads = w.N * w.in_plane() * (w.C / V);
  ga.narrow = ga.threads <= kMaxInt32;
  if (ga.narrow) {
    ga.by_groups = FastDiv(w.C / V);
    ga.by_w = FastDiv(w.W);
    ga.by_h = FastDiv(w.H);
    ga.by_d = FastDiv(w.D);
  }
  for (int i = 0; i < 3; ++i) ga.by_s[i] = FastDiv(w.s[i]);
  const unsigned grid = grid_for(ga.threads, 256, "bwd_v14_channel_gather");
  const int format = w.indices == IndexFormat::int64 ? 0 : w.compact8() ? 1 : 2;
  const auto go = [&](auto kernel) { kernel<<<grid, 256, 0, s>>>(a, ga); };
  if (V == 4) format == 0 ? go(bwd_v14_channel_gather_kernel<4, 0, T>) : format == 1 ? go(bwd_v14_channel_gather_kernel<4, 1, T>) : go(bwd_v14_channel_gather_kernel<4, 2, T>);
  else if (V == 2) format == 0 ? go(bwd_v14_channel_gather_kernel<2, 0, T>) : format == 1 ? go(bwd_v14_channel_gather_kernel<2, 1, T>) : go(bwd_v14_channel_gather_kernel<2, 2, T>);
  else format == 0 ? go(bwd_v14_channel_gather_kernel<1, 0, T>) : format == 1 ? go(bwd_v14_channel_gather_kernel<1, 1, T>) : go(bwd_v14_channel_gather_kernel<1, 2, T>);
  TUT_CHECK_LAUNCH("bwd_v14_channel_gather_kernel");
}

template <class T>
std::vector<const void*> bwd_v14_kernels() {
  return {TUT_KERNEL(bwd_v14_channel_gather_kernel<4, 0, T>), TUT_KERNEL(bwd_v14_channel_gather_kernel<4, 1, T>),
          TUT_KERNEL(bwd_v14_channel_gather_kernel<1, 0, T>)};
}

}  // namespace ch06
