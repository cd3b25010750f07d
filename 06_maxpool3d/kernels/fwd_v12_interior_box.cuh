// fwd v12_interior_box: v2's two paths, with the outputs sorted by path before they reach a warp.
//
// What changed since v2. v2's warp takes the test-free path only when all 32 of its outputs have
// windows wholly inside the input; its outputs are consecutive in memory order, so a warp that
// holds one border output tests every cell of all 32 windows. Where a row of outputs is short
// every warp holds one: 8 x 64 x 33^3 with kernel 2 in ceil mode has rows of 17 outputs whose last
// window reaches past the input, and there v2 takes the tested path everywhere (Nsight Compute on
// the H200, results/NVIDIA_H200.gaps.ncu.*: issue slots 78 % busy, DRAM 62 %; 0.675 of copy).
//
// Here the outputs whose windows lie inside form a box per plane, [lo, hi) along each axis
// (lo = ceil(p / s), hi = the last o with o s - p + k <= the input's size, plus one), and the
// launch numbers them first: item t < planes x |box| is output (plane, box cell t), decoded with
// FastDivs, and takes the test-free path with no vote; the items after it are the border, the
// outputs outside the box, in three runs (the slices outside the box's D range, then in it the
// rows outside its H range, then in those the columns outside its W range), and take v2's tested
// path. Only the warp that straddles the two ranges runs both. Both paths are v2's window bodies
// (kernels/window_body.cuh), so the values and cells are v2's.
//
// Prediction: on 33^3 in ceil mode, 16^3 of every 17^3 outputs (83 %) on the test-free path, the
// issue slots freed, and nearer the copy ceiling; where v2's warps already vote inside (long
// rows), v2's time. SASS: unpredicated LDGs for the interior (tests/test_sass.cpp).
#pragma once

#include "kernels/fwd_v1_unrolled.cuh"  // with_cubic_kernel
#include "kernels/window_body.cuh"

namespace ch06 {

// The box of outputs whose windows lie inside, and the border's three runs, per plane.
struct V12Box {
  int lo[3] = {0, 0, 0}, n[3] = {0, 0, 0};  // the box: outputs lo .. lo + n - 1 along D, H, W
  std::int64_t inner = 0;                   // planes x |box|: the items that take the inside path
  FastDiv by_box, by_bw, by_bh;             // |box|, n[2], n[1] (1 where the box is empty)
  bool narrow = true;                       // every item index below 2^31
};

// Along one axis: the outputs o with o s - p >= 0 and o s - p + k <= size, as [lo, lo + n).
inline void inside_range(std::int64_t size, int k, int s, int p, int outs, int& lo, int& n) {
  lo = std::min(outs, (p + s - 1) / s);
  const std::int64_t room = size + p - k;  // o s <= room
  const int hi = room < 0 ? 0 : static_cast<int>(std::min<std::int64_t>(outs, room / s + 1));
  n = std::max(0, hi - lo);
}

inline V12Box v12_box(const Window& w) {
  V12Box b;
  inside_range(w.D, w.k[0], w.s[0], w.p[0], w.oD, b.lo[0], b.n[0]);
  inside_range(w.H, w.k[1], w.s[1], w.p[1], w.oH, b.lo[1], b.n[1]);
  inside_range(w.W, w.k[2], w.s[2], w.p[2], w.oW, b.lo[2], b.n[2]);
  const std::int64_t box = static_cast<std::int64_t>(b.n[0]) * b.n[1] * b.n[2];
  b.inner = w.N * w.C * box;
  b.narrow = w.out_numel() <= kMaxInt32;
  b.by_box = FastDiv(std::max<std::int64_t>(1, b.narrow ? box : 1));
  b.by_bw = FastDiv(std::max(1, b.n[2]));
  b.by_bh = FastDiv(std::max(1, b.n[1]));
  return b;
}

// Border item r of its plane (r < out_plane - |box|) -> (od, oh, ow). The border is the slices
// outside the box's D range, then (inside it) the rows outside its H range, then (inside both) the
// columns outside its W range; k-th position outside [lo, lo + n) is k below lo, else k + n.
TUT_HD inline void v12_border(const Window& w, const V12Box& b, int r, int& od, int& oh, int& ow) {
  const auto outside = [](int k, int lo, int n) { return k < lo ? k : k + n; };
  const int slice = w.oH * w.oW, rows_out = w.oH - b.n[1], cols_out = w.oW - b.n[2];
  const int run_a = (w.oD - b.n[0]) * slice, run_b = b.n[0] * rows_out * w.oW;
  if (r < run_a) {
    od = outside(r / slice, b.lo[0], b.n[0]);
    oh = r % slice / w.oW;
    ow = r % w.oW;
  } else if (r - run_a < run_b) {
    r -= run_a;
    od = b.lo[0] + r / (rows_out * w.oW);
    oh = outside(r / w.oW % rows_out, b.lo[1], b.n[1]);
    ow = r % w.oW;
  } else {
    r -= run_a + run_b;
    const int t = r / cols_out;
    od = b.lo[0] + t / b.n[1];
    oh = b.lo[1] + t % b.n[1];
    ow = outside(r % cols_out, b.lo[2], b.n[2]);
  }
}

// Item o of the launch -> its plane and output position; true where its window lies inside (the
// box's items, numbered first).
TUT_HD inline bool v12_item(const Window& w, const V12Box& b, std::int64_t o, std::int64_t& pl, int& od, int& oh,
                            int& ow) {
  const std::int64_t box = static_cast<std::int64_t>(b.n[0]) * b.n[1] * b.n[2];
  if (o < b.inner) {
    std::uint32_t r;
    if (b.narrow) {
      const std::uint32_t q = b.by_box.div(static_cast<std::uint32_t>(o));
      pl = q;
      r = static_cast<std::uint32_t>(o) - q * static_cast<std::uint32_t>(box);
    } else {
      pl = o / box;
      r = static_cast<std::uint32_t>(o - pl * box);
    }
    const std::uint32_t t = b.by_bw.div(r), u = b.by_bh.div(t);
    ow = b.lo[2] + static_cast<int>(r - t * static_cast<std::uint32_t>(b.n[2]));
    oh = b.lo[1] + static_cast<int>(t - u * static_cast<std::uint32_t>(b.n[1]));
    od = b.lo[0] + static_cast<int>(u);
    return true;
  }
  const std::int64_t border = w.out_plane() - box, e = o - b.inner;
  pl = e / border;
  v12_border(w, b, static_cast<int>(e - pl * border), od, oh, ow);
  return false;
}

template <int K, class T>
__global__ void __launch_bounds__(256) fwd_v12_interior_box_kernel(ForwardArgs<T> a, V12Box b) {
  const Window& w = a.w;
  const std::int64_t total = w.out_numel(), in_plane = w.in_plane(), out_plane = w.out_plane();
  for (std::int64_t o = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; o < total;
       o += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    std::int64_t pl;
    int od, oh, ow;
    const bool inside = v12_item(w, b, o, pl, od, oh, ow);
    const int d0 = od * w.s[0] - w.p[0], h0 = oh * w.s[1] - w.p[1], w0 = ow * w.s[2] - w.p[2];
    const T* plane = a.x + pl * in_plane;
    T best;
    int cell;
    if (inside) window_inside<K>(plane + (d0 * w.H + h0) * w.W + w0, w, best, cell);
    else window_checked<K>(plane, w, d0, h0, w0, best, cell);
    store_result<K, K, K>(a, pl * out_plane + (static_cast<std::int64_t>(od) * w.oH + oh) * w.oW + ow, best, cell, d0,
                          h0, w0);
  }
}

template <class T>
std::string fwd_v12_refuses(const Window& w) {
  if (w.layout != Layout::ncdhw) return "fwd_v12_interior_box reads the layout NCDHW only";
  if (w.dilated()) return "fwd_v12_interior_box takes dilation 1 only";
  if (!plane_fits_32_bits(w) || w.out_plane() > kMaxInt32)
    return "fwd_v12_interior_box indexes a plane in 32 bits; this one is larger";
  return {};
}

template <class T>
void fwd_v12_interior_box(cudaStream_t s, const ForwardArgs<T>& a) {
  check_forward(a, "fwd_v12_interior_box");
  if (const std::string why = fwd_v12_refuses<T>(a.w); !why.empty()) throw tut::Unsupported(why);
  constexpr int kBlock = 256;
  const unsigned grid = grid_for(a.w.out_numel(), kBlock, "fwd_v12_interior_box");
  const V12Box b = v12_box(a.w);
  with_cubic_kernel(a.w, [&](auto k) {
    fwd_v12_interior_box_kernel<decltype(k)::value, T><<<grid, kBlock, 0, s>>>(a, b);
  });
  TUT_CHECK_LAUNCH("fwd_v12_interior_box_kernel");
}

template <class T>
std::vector<const void*> fwd_v12_kernels() {
  return {TUT_KERNEL(fwd_v12_interior_box_kernel<0, T>), TUT_KERNEL(fwd_v12_interior_box_kernel<2, T>),
          TUT_KERNEL(fwd_v12_interior_box_kernel<3, T>), TUT_KERNEL(fwd_v12_interior_box_kernel<4, T>),
          TUT_KERNEL(fwd_v12_interior_box_kernel<8, T>)};
}

}  // namespace ch06
