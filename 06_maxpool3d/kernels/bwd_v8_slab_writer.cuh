// bwd v8_slab_writer: the deterministic backward for windows that do not overlap, in one pass, as
// a memset with a few values dropped in.
//
// What changed since v5 (a thread per 16-byte chunk of dx): v5's every store waited for a load. Each
// thread found the output owning its chunk (divisions), loaded that output's dy and saved index,
// compared, then stored: 8.4 M chunks on 2x64x64^3 with kernel 8 stride 8, each behind a dependent
// load, for 0.498 of copy. Here the zeros do not wait for anything. A warp takes one slab, the cells
// of output row (lead, od, oh) over every ow: along D the slices of od's segment, along H oh's rows,
// whole rows along W (and every channel, in NDHWC), which is a run of contiguous memory per slice.
// It stores zeros over the whole slab with 16-byte stores, as a memset does, then __syncwarp()
// (which orders the warp's memory operations), then one lane per output of the row stores dy at the
// saved cell, if that cell is in the output's segment (v7's check). Each cell is written by one
// warp, the chosen cells twice (zero, then the value, in that order), so the result is the same on
// every run. The warps are one wave, each walking slabs, and a lane loads the next slab's dy and
// index before it stores this slab's zeros, so no store waits for a load.
//
// Prediction: the zero stores issue back to back, so the DRAM sees a memset's stream: about the
// memset's speed, a little ahead of v7 (memset, then a second kernel) and of PyTorch's scatter,
// which are both two passes; dy and the index (1/512 of dx on kernel 8 stride 8) are read once.
// SASS: STG.E.128 stores, no RED or ATOM (tests/test_sass.cpp).
//
// Measured (H100, results/): a first form (a grid of 1.29 waves, each warp loading its outputs after
// its zeros) ran at 0.812 of copy on kernel 8 stride 8, the warps stalled 45 % of the time on the
// LSU queue and 38 % on those loads, DRAM 64 % busy. This form: 0.863 (int64) and 0.841 (compact),
// 50.3 us under Nsight Compute at 68.6 % DRAM, 38 % occupancy (58 registers): behind v7 (0.922),
// whose memset stores faster than these warps do; PyTorch's fill kernel reaches 81 % DRAM. On kernel
// 2 stride 2, 0.766 and 0.677 (compact), beside v3's 0.787 and 0.637.
#pragma once

#include "kernels/bwd_v7_zero_then_store.cuh"

#include <algorithm>
#include <type_traits>

namespace ch06 {

inline constexpr int kSlabBlock = 256;  // threads per block

struct SlabArgs {
  StoreDivs dv;
  std::int64_t slabs = 0;  // leads * oD * oH
  std::int64_t leads = 0;  // N * C in NCDHW, N in NDHWC
  std::int64_t row = 0;    // elements per (d, h): W, or W * C in NDHWC
  std::int64_t outs = 0;   // outputs per slab: oW, or oW * C in NDHWC
  FastDiv by_oH, by_oD;    // slab number -> (lead, od, oh), when slabs < 2^31
  bool narrow = true;
};

// Slab i's place: its lead (n*C + c, or n), od and oh, and its cells' range along D and H.
TUT_HD inline void slab_place(const Window& w, const SlabArgs& sa, std::int64_t i, std::int64_t& lead, int& od, int& oh) {
  if (sa.narrow) {
    const std::uint32_t u = static_cast<std::uint32_t>(i), r = sa.by_oH.div(u), t = sa.by_oD.div(r);
    oh = static_cast<int>(u - r * static_cast<std::uint32_t>(w.oH));
    od = static_cast<int>(r - t * static_cast<std::uint32_t>(w.oD));
    lead = t;
  } else {
    oh = static_cast<int>(i % w.oH);
    od = static_cast<int>((i / w.oH) % w.oD);
    lead = i / (static_cast<std::int64_t>(w.oH) * w.oD);
  }
}

// The segment of output o along an axis: [x0, x1).
TUT_HD inline void segment_range(int o, int s, int p, int out, int in, int& x0, int& x1) {
  x0 = o == 0 ? 0 : o * s - p;
  x1 = o == out - 1 ? in : (o + 1) * s - p;
  if (x1 > in) x1 = in;
}

// Slab i's zeros: lane `lane` of `lanes` stores every lanes-th pack of V elements of each slice's
// run. Host and device (the host runs the lanes one after another).
template <int V, class T>
TUT_HD inline void zero_slab(const BackwardArgs<T>& a, const SlabArgs& sa, std::int64_t i, int lane, int lanes) {
  const Window& w = a.w;
  std::int64_t lead;
  int od, oh, d0, d1, h0, h1;
  slab_place(w, sa, i, lead, od, oh);
  segment_range(od, w.s[0], w.p[0], w.oD, w.D, d0, d1);
  segment_range(oh, w.s[1], w.p[1], w.oH, w.H, h0, h1);
  const std::int64_t packs = (h1 - h0) * sa.row / V;  // a run: rows h0 .. h1 - 1 of one slice
  using Pack = tut::ew::Packed<T, V>;
  Pack z;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int l = 0; l < V; ++l) z.elem[l] = T(0);
  for (int d = d0; d < d1; ++d) {
    Pack* run = reinterpret_cast<Pack*>(a.dx + ((lead * w.D + d) * w.H + h0) * sa.row);
#if defined(__CUDA_ARCH__)
#pragma unroll 4
#endif
    for (std::int64_t j = lane; j < packs; j += lanes) run[j] = z;
  }
}

// Slab i's values: lane `lane` of `lanes` stores dy of every lanes-th output of the row.
template <class T>
TUT_HD inline void fill_slab(const BackwardArgs<T>& a, const SlabArgs& sa, std::int64_t i, int lane, int lanes) {
  for (std::int64_t j = lane; j < sa.outs; j += lanes) store_one_output(a, sa.dv, i * sa.outs + j);
}

// One wave of warps, each walking slabs gridDim.x * 8 apart. The dy and index of the next slab's
// first 32 outputs are loaded before this slab's zeros are stored, so that no store waits for them.
template <int V, class T>
__global__ void __launch_bounds__(kSlabBlock) bwd_v8_slab_writer_kernel(BackwardArgs<T> a, SlabArgs sa) {
  const int lane = threadIdx.x % 32;
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * (blockDim.x / 32);
  std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x / 32) + threadIdx.x / 32;
  std::int64_t saved = -1;
  T g = T(0);
  if (i < sa.slabs && lane < sa.outs) {
    saved = saved_of(a, i * sa.outs + lane);
    g = a.dy[i * sa.outs + lane];
  }
  for (; i < sa.slabs; i += warps) {
    const std::int64_t next = i + warps;
    std::int64_t saved_next = -1;
    T g_next = T(0);
    if (next < sa.slabs && lane < sa.outs) {
      saved_next = saved_of(a, next * sa.outs + lane);
      g_next = a.dy[next * sa.outs + lane];
    }
    zero_slab<V>(a, sa, i, lane, 32);
    __syncwarp();  // the zeros before the values: a chosen cell's last store is its value
    if (lane < sa.outs) store_saved(a, sa.dv, i * sa.outs + lane, saved, g);
    for (std::int64_t j = lane + 32; j < sa.outs; j += 32) store_one_output(a, sa.dv, i * sa.outs + j);
    saved = saved_next;
    g = g_next;
  }
}

template <class T>
std::string bwd_v8_refuses(const Window& w) {
  return disjoint_writer_refuses(w, "bwd_v8_slab_writer");
}

// The pack width: V elements when a row (W, or W * C) is a multiple of V, so that every slice's run
// starts and ends on a pack, and dx is aligned to V elements.
template <class T>
int bwd_v8_pack(const BackwardArgs<T>& a, const SlabArgs& sa) {
  for (int V : {4, 2})
    if (reinterpret_cast<std::uintptr_t>(a.dx) % (V * sizeof(T)) == 0 && sa.row % V == 0) return V;
  return 1;
}

template <class T>
SlabArgs slab_args(const Window& w) {
  SlabArgs sa;
  const bool cl = w.layout == Layout::ndhwc;
  sa.dv = store_divs<T>(w);
  sa.leads = cl ? w.N : w.N * w.C;
  sa.row = cl ? static_cast<std::int64_t>(w.W) * w.C : w.W;
  sa.outs = cl ? static_cast<std::int64_t>(w.oW) * w.C : w.oW;
  sa.slabs = sa.leads * w.oD * w.oH;
  sa.narrow = sa.slabs <= kMaxInt32;
  sa.by_oH = FastDiv(w.oH);
  sa.by_oD = FastDiv(w.oD);
  return sa;
}

template <class T>
void bwd_v8_slab_writer(cudaStream_t s, const BackwardArgs<T>& a) {
  check_backward(a, "bwd_v8_slab_writer");
  if (const std::string why = bwd_v8_refuses<T>(a.w); !why.empty()) throw tut::Unsupported(why);
  const SlabArgs sa = slab_args<T>(a.w);
  const int V = bwd_v8_pack(a, sa);
  constexpr int kWarps = kSlabBlock / 32;
  const auto launch = [&](auto v) {
    constexpr int kV = decltype(v)::value;
    static const std::int64_t resident = resident_blocks(TUT_KERNEL(bwd_v8_slab_writer_kernel<kV, T>), kSlabBlock, 0);
    const std::int64_t needed = (sa.slabs + kWarps - 1) / kWarps;
    const unsigned grid = one_wave_grid(needed, resident);
    bwd_v8_slab_writer_kernel<kV, T><<<grid, kSlabBlock, 0, s>>>(a, sa);
  };
  if (V == 4) launch(std::integral_constant<int, 4>{});
  else if (V == 2) launch(std::integral_constant<int, 2>{});
  else launch(std::integral_constant<int, 1>{});
  TUT_CHECK_LAUNCH("bwd_v8_slab_writer_kernel");
}

template <class T>
std::vector<const void*> bwd_v8_kernels() {
  return {TUT_KERNEL(bwd_v8_slab_writer_kernel<4, T>), TUT_KERNEL(bwd_v8_slab_writer_kernel<1, T>)};
}

}  // namespace ch06
