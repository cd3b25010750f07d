// bwd v20_plane_fill: where windows do not overlap, each block is a fill of one span of dx (whole
// rows of one (n, c, d) plane), then writes the few cells in that span that an index names.
//
// What the fill does that v10, v13 and v16 do not (Nsight Compute on kernel 8 stride 8, 2x64x64^3,
// results/NVIDIA_H100_80GB_HBM3.backward.ncu.txt): PyTorch's fill of dx runs 41.1 us at 81 % DRAM
// busy with 88 % of the warps resident, each thread storing a little and leaving; v10 holds 60 % of
// the warps, each waiting on its index before its stores (47.0 us); v16 stored its zeros before any
// wait but queued 32 stores per thread in 64 registers and lost (52.4 us).
//
// Here a block of 256 threads owns a span of about 4096 cells (R whole rows of one plane: a whole
// 64 x 64 plane on kernel 8 stride 8). Its threads first issue the loads of the index and dy of the
// outputs whose windows reach the span (64 there), then store the span's zeros, 16 bytes at a time
// (4 stores per thread), then meet at a barrier and store dy into each cell an index names inside
// the span. The barrier orders the zero and the value stored to one cell by different threads of the
// block (the value is the later one); no atomics, each value stored once, the same bits every run. A
// cell counts only where it lies in its own output's window, as in v10, so on any index, a corrupt
// one included, the result is v10's.
//
// Prediction, kernel 8 stride 8: the stores do not wait on loads and the threads are few-register
// and short-lived, as in the fill: near the fill's 41 us plus the loads' first latency, so ahead of
// PyTorch's fill and scatter (45.9 us in Nsight Compute).
//
// Measured (H100, results/NVIDIA_H100_80GB_HBM3.v20.ncu.txt and .v20_race.txt): kernel 8 stride 8,
// 45.2 us (43.4 compact) against the fill's 41.0, 88.4 % of the warps resident, DRAM 74.5 % busy,
// warps waiting on a load 11.0 % of the time (v10 77.0 %); raced 1.052x PyTorch (1.070x compact)
// where v10 ran 0.987x. Kernel 2 stride 3: 1.556x (v10 1.371x). Kernel 2 stride 2, where 1008
// outputs reach a span and most are loaded after the zeros: 1.900x (v10 2.112x).
//
// Limits, refused before launch: windows that do not overlap, NCDHW, dilation 1, a plane that fits
// 32-bit offsets.
#pragma once

#include "kernels/bwd.cuh"

#include <type_traits>

namespace ch06 {

inline constexpr int kFillBlock = 256;
inline constexpr int kFillCells = 4096;  // a span: about this many cells, whole rows
inline constexpr int kFillHeld = 2;      // outputs per thread whose loads go before the zeros

struct FillArgs {
  int R = 1;             // rows per span
  int spans = 1;         // spans per plane
  std::int64_t items = 0;  // N * C * D * spans
  IndexDecode dec;         // the saved index's
};

template <class I, class T>
__global__ void __launch_bounds__(kFillBlock, 8)
    bwd_v20_plane_fill_kernel(const BackwardArgs<T> a, const I* __restrict__ idx, const FillArgs f) {
  const Window& w = a.w;
  const int tid = threadIdx.x;
  const std::uint32_t HW = static_cast<std::uint32_t>(w.H) * w.W;
  for (std::int64_t item = blockIdx.x; item < f.items; item += gridDim.x) {
    const int span = static_cast<int>(item % f.spans);
    const std::int64_t t = item / f.spans;
    const int d = static_cast<int>(t % w.D);
    const std::int64_t nc = t / w.D;
    const int h0 = span * f.R, h1 = min(w.H, h0 + f.R);
    T* const plane = a.dx + nc * w.in_plane();
    // The outputs whose windows reach plane d and rows [h0, h1): windows do not overlap, so at most
    // one output plane; its rows [ohlo, ohhi], every ow.
    const int od = (d + w.p[0]) / w.s[0];
    const bool has_od = od < w.oD && d + w.p[0] - od * w.s[0] < w.k[0];
    int ohlo, ohhi;
    reaching_outputs(h0, h1 - h0, w.k[1], w.s[1], w.p[1], w.oH, ohlo, ohhi);
    const int outs = has_od && ohhi >= ohlo ? (ohhi - ohlo + 1) * w.oW : 0;
    const std::int64_t obase = (nc * w.oD + od) * static_cast<std::int64_t>(w.oH) * w.oW;
    const int sd = od * w.s[0] - w.p[0];

    // Where output number q of the span names a cell in the span, its offset in the plane; else -1.
    const auto named = [&](int q, I ix) -> int {
      const int oh = ohlo + q / w.oW, ow = q % w.oW;
      const int sh = oh * w.s[1] - w.p[1], sw = ow * w.s[2] - w.p[2];
      const NamedCell c = window_cell(w, f.dec, ix, sd, sh, sw);
      if (!c.in_window) return -1;
      if (static_cast<unsigned>(c.x) >= static_cast<unsigned>(w.W)) return -1;  // padding
      if (c.d != d || c.h < h0 || c.h >= h1) return -1;  // another span's cell (or padding)
      return c.h * w.W + c.x;
    };

    // 1. The loads of the first kFillHeld outputs per thread, before any store waits on them.
    I held_ix[kFillHeld];
    T held_dy[kFillHeld];
#pragma unroll
    for (int u = 0; u < kFillHeld; ++u) {
      const int q = tid + u * kFillBlock;
      if (q < outs) {
        const std::int64_t o = obase + static_cast<std::int64_t>(ohlo) * w.oW + q;
        held_ix[u] = idx[o];
        held_dy[u] = a.dy[o];
      }
    }
    // 2. The span's zeros: a scalar head up to 16-byte alignment, 16-byte stores, a scalar tail.
    T* const p = plane + static_cast<std::int64_t>(d) * HW + static_cast<std::int64_t>(h0) * w.W;
    const int len = (h1 - h0) * w.W;
    const int head = min(len, static_cast<int>(((16 - (reinterpret_cast<std::uintptr_t>(p) & 15)) & 15) / sizeof(T)));
    const int body = (len - head) / 4;
    if (tid < head) p[tid] = T(0);
    float4* const p4 = reinterpret_cast<float4*>(p + head);
    for (int i = tid; i < body; i += kFillBlock) p4[i] = make_float4(0.f, 0.f, 0.f, 0.f);
    for (int i = head + body * 4 + tid; i < len; i += kFillBlock) p[i] = T(0);
    __syncthreads();  // every zero of the span before any value
    // 3. The named cells.
#pragma unroll
    for (int u = 0; u < kFillHeld; ++u) {
      const int q = tid + u * kFillBlock;
      if (q < outs) {
        const int c = named(q, held_ix[u]);
        if (c >= 0) plane[static_cast<std::int64_t>(d) * HW + c] = held_dy[u];
      }
    }
    for (int q = tid + kFillHeld * kFillBlock; q < outs; q += kFillBlock) {  // spans with more outputs
      const std::int64_t o = obase + static_cast<std::int64_t>(ohlo) * w.oW + q;
      const int c = named(q, idx[o]);
      if (c >= 0) plane[static_cast<std::int64_t>(d) * HW + c] = a.dy[o];
    }
    __syncthreads();  // the next span's zeros after this span's values (a span is one block's)
  }
}

template <class T>
std::string bwd_v20_refuses(const Window& w) {
  if (const std::string why = disjoint_writer_refuses(w, "bwd_v20_plane_fill"); !why.empty()) return why;
  if (w.layout != Layout::ncdhw) return "bwd_v20_plane_fill reads the layout NCDHW only";
  if (w.dilated()) return "bwd_v20_plane_fill takes dilation 1 only";
  return {};
}

template <class I, class T>
void bwd_v20_launch(cudaStream_t s, const BackwardArgs<T>& a, const I* idx) {
  const Window& w = a.w;
  FillArgs f;
  f.R = std::min(w.H, std::max(1, kFillCells / w.W));
  f.spans = (w.H + f.R - 1) / f.R;
  f.items = w.N * w.C * w.D * f.spans;
  f.dec = index_decode(w);
  const unsigned grid = static_cast<unsigned>(std::min<std::int64_t>(f.items, kMaxInt32));
  bwd_v20_plane_fill_kernel<I, T><<<grid, kFillBlock, 0, s>>>(a, idx, f);
  TUT_CHECK_LAUNCH("bwd_v20_plane_fill_kernel");
}

template <class T>
void bwd_v20_plane_fill(cudaStream_t s, const BackwardArgs<T>& a) {
  check_backward(a, "bwd_v20_plane_fill");
  if (const std::string why = bwd_v20_refuses<T>(a.w); !why.empty()) throw tut::Unsupported(why);
  with_index(a, [&](const auto* idx) { bwd_v20_launch(s, a, idx); });
}

template <class T>
std::vector<const void*> bwd_v20_kernels() {
  return {TUT_KERNEL(bwd_v20_plane_fill_kernel<std::int64_t, T>),
          TUT_KERNEL(bwd_v20_plane_fill_kernel<std::uint8_t, T>),
          TUT_KERNEL(bwd_v20_plane_fill_kernel<std::int16_t, T>)};
}

}  // namespace ch06
