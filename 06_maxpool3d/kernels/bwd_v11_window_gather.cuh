// bwd v11_window_gather: v1's gather with the number of candidate outputs known at compile time,
// for overlapping undilated windows with at most 3 covering outputs per axis (kernel 3 stride 2:
// 2 x 2 x 2; kernel 3 stride 1: 3 x 3 x 3), in either layout.
//
// v1 ran at 0.167 of copy where it had one candidate per input: its loops have runtime bounds, so
// a thread issued one candidate's load, waited for it, compared, and went on (about 380
// instructions per input on the stem case, DRAM 8 % busy). Here the loops run KC times per axis,
// KC a template parameter (2 or 3), and every candidate's load is issued before any compare: a
// candidate past the axis's range reads its axis's last covering output instead (always a valid
// address) and is masked out of the sum. The sum is v1's: dy of the outputs whose index names
// this element, added in (od, oh, ow) ascending order from +0, so the bits are v1's on every run.
//
// Layouts. In NDHWC consecutive threads take consecutive channels of one position: each of the
// KC^3 candidates' index and dy reads is 32 consecutive elements of the output, a coalesced load.
// In NCDHW they take consecutive w: with stride 2 a warp's candidates along W are 16 or 17
// consecutive outputs.
//
// Prediction (the stem case, 8x64x16x56x56 kernel 3 stride 2 padding 1, NDHWC, int64 index): a
// warp issues 8 loads of 256 bytes (2 L1 wavefronts each) for the index and fewer for dy; 25.7 M
// elements make 0.8 M warps, 12.8 M wavefronts over 132 SMs, about 56 us of L1 time at 1.75 GHz,
// against 47 us for the floor's 141 MB at 3 TB/s: bound by memory, at about 0.6 of copy where
// PyTorch's scatter ran at 0.39 and v9 (shared-memory tile, rank by rank) at 0.37 in NDHWC. On
// kernel 3 stride 1 (4x32x32x64x64) 27 candidates: 27 loads of 256 bytes per warp (int64) are
// about 150 us of L1 time against the floor's 268 MB (about 90 us); with the compact index 27
// one-wavefront loads and about 175 warp instructions per warp, about 100 us against 151 MB (52
// us). Both should beat the scatter (0.37 and 0.21 of copy), not reach copy. A tile staged in
// shared memory (the other plan) would read the same 27 candidates per cell from shared memory:
// for the compact index the same wavefront count, for int64 fewer (the staged index narrowed to a
// byte) at the price of the staging and barriers; this version measures the plain one first.
// Kernel 8 stride 1 (512 candidates, 4.2 M cells) is refused: 512 compares per cell are about 200
// M warp instructions, over 200 us at the full issue rate, where PyTorch's scatter took about 55 us.
//
// Measured (H100, results/forms/third.*): the prediction was wrong by the instructions. On the
// NDHWC stem case 0.095 of copy (0.491 ms; v0's scatter 0.411, v9 0.367): Nsight Compute counts 390 M
// warp instructions, 485 per warp of 32 cells, DRAM 7.5 % busy, 54 registers. On kernel 3 stride 1
// 0.076 of copy (int64) and 0.036 (compact), 640 M and 795 M warp instructions, 104 registers (23 %
// of the warps resident). Each candidate costs its 64-bit output number, its clamped address, the
// load, the compare and the masked add, about 20 instructions, and a cell pays for all 8 or 27 of
// them while at most a few chose it: at the H100's 1.98 GHz and 4 issues per SM per cycle, 390 M
// warp instructions take 0.37 ms whatever the bytes. The L1 wavefronts estimated above were never
// the limit. The gather's cost is per candidate, the scatter's per output (v12).
#pragma once

#include "kernels/bwd.cuh"

#include <type_traits>

namespace ch06 {

inline constexpr int kWindowGatherMaxCandidates = 3;  // per axis

struct WindowGatherDivs {
  bool narrow = true;  // element numbers fit 32 bits
  bool cl = false;     // NDHWC with C > 1
  FastDiv by_w, by_h, by_d, by_c;
  FastDiv by_s[3];
};

// Along one axis: the first covering output and the last, for cell x (undilated).
TUT_HD inline void covering_range(int x, int k, int p, int out, const FastDiv& by_s, int s, int& lo, int& hi) {
  const int top = x + p, bottom = x + p - (k - 1);
  hi = static_cast<int>(by_s.div(static_cast<std::uint32_t>(top)));
  hi = hi < out - 1 ? hi : out - 1;
  lo = bottom <= 0 ? 0 : static_cast<int>(by_s.div(static_cast<std::uint32_t>(bottom + s - 1)));
}

// dx of element e. Host and device (a CPU test runs it on every element of small cases).
template <int KC, class T>
TUT_HD inline T window_gather_one(const BackwardArgs<T>& a, const WindowGatherDivs& dv, std::int64_t e) {
  const Window& w = a.w;
  std::int64_t lead;  // NCDHW: n * C + c; NDHWC: n
  std::int64_t c = 0;
  int d, h, x;
  if (dv.narrow) {
    std::uint32_t r = static_cast<std::uint32_t>(e), q;
    if (dv.cl) {
      q = dv.by_c.div(r);
      c = r - q * static_cast<std::uint32_t>(w.C);
      r = q;
    }
    q = dv.by_w.div(r);
    x = static_cast<int>(r - q * static_cast<std::uint32_t>(w.W));
    r = q;
    q = dv.by_h.div(r);
    h = static_cast<int>(r - q * static_cast<std::uint32_t>(w.H));
    r = q;
    q = dv.by_d.div(r);
    d = static_cast<int>(r - q * static_cast<std::uint32_t>(w.D));
    lead = q;
  } else {
    std::int64_t r = e;
    if (dv.cl) {
      c = r % w.C;
      r /= w.C;
    }
    x = static_cast<int>(r % w.W);
    r /= w.W;
    h = static_cast<int>(r % w.H);
    r /= w.H;
    d = static_cast<int>(r % w.D);
    lead = r / w.D;
  }
  int lo[3], hi[3];
  covering_range(d, w.k[0], w.p[0], w.oD, dv.by_s[0], w.s[0], lo[0], hi[0]);
  covering_range(h, w.k[1], w.p[1], w.oH, dv.by_s[1], w.s[1], lo[1], hi[1]);
  covering_range(x, w.k[2], w.p[2], w.oW, dv.by_s[2], w.s[2], lo[2], hi[2]);
  const bool int64 = w.indices == IndexFormat::int64;
  const std::int64_t flat = (static_cast<std::int64_t>(d) * w.H + h) * w.W + x;
  const std::int64_t step = dv.cl ? w.C : 1;  // between neighbouring ow
  const std::int64_t base = dv.cl ? lead * w.out_plane() * w.C + c : lead * w.out_plane();
  // Every candidate's saved index first (clamped to the last covering output: a valid address).
  std::int64_t saved[KC][KC][KC];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int i = 0; i < KC; ++i) {
    const int od = lo[0] + i < hi[0] ? lo[0] + i : hi[0];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int j = 0; j < KC; ++j) {
      const int oh = lo[1] + j < hi[1] ? lo[1] + j : hi[1];
      const std::int64_t row = base + (static_cast<std::int64_t>(od) * w.oH + oh) * w.oW * step;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
      for (int l = 0; l < KC; ++l) {
        const int ow = lo[2] + l < hi[2] ? lo[2] + l : hi[2];
        const std::int64_t o = row + ow * step;
        saved[i][j][l] = int64 ? a.index[o] : saved_window_cell(a, o);
      }
    }
  }
  // Then the compares and the adds, in (od, oh, ow) ascending order.
  T acc = T(0);
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int i = 0; i < KC; ++i) {
    const int od = lo[0] + i;
    const int jd = d + w.p[0] - od * w.s[0];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int j = 0; j < KC; ++j) {
      const int oh = lo[1] + j;
      const int jdh = jd * w.k[1] + (h + w.p[1] - oh * w.s[1]);
      const std::int64_t row = base + (static_cast<std::int64_t>(od) * w.oH + oh) * w.oW * step;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
      for (int l = 0; l < KC; ++l) {
        const int ow = lo[2] + l;
        const bool valid = od <= hi[0] && oh <= hi[1] && ow <= hi[2];
        const std::int64_t want = int64 ? flat : jdh * w.k[2] + (x + w.p[2] - ow * w.s[2]);
        if (valid && saved[i][j][l] == want) acc += a.dy[row + ow * step];
      }
    }
  }
  return acc;
}

template <int KC, class T>
__global__ void __launch_bounds__(256) bwd_v11_window_gather_kernel(BackwardArgs<T> a, WindowGatherDivs dv) {
  const std::int64_t total = a.w.in_numel();
  for (std::int64_t e = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    a.dx[e] = window_gather_one<KC>(a, dv, e);
}

// The most outputs covering a cell along any axis: ceil(k / s) (undilated).
inline int window_gather_candidates(const Window& w) {
  int kc = 1;
  for (int i = 0; i < 3; ++i) kc = std::max(kc, (w.k[i] + w.s[i] - 1) / w.s[i]);
  return kc;
}

template <class T>
std::string bwd_v11_refuses(const Window& w) {
  if (w.dilated()) return "bwd_v11_window_gather takes dilation 1 only (v1 takes any)";
  if (window_gather_candidates(w) > kWindowGatherMaxCandidates)
    return "bwd_v11_window_gather takes at most 3 covering outputs per axis (ceil(kernel / stride) <= 3)";
  if (!plane_fits_32_bits(w)) return "bwd_v11_window_gather indexes a plane in 32 bits; this one is larger";
  return {};
}

inline WindowGatherDivs window_gather_divs(const Window& w) {
  WindowGatherDivs dv;
  dv.narrow = w.in_numel() <= kMaxInt32;
  dv.cl = w.layout == Layout::ndhwc && w.C > 1;
  if (dv.narrow) {
    dv.by_w = FastDiv(w.W);
    dv.by_h = FastDiv(w.H);
    dv.by_d = FastDiv(w.D);
    dv.by_c = FastDiv(w.C);
  }
  for (int i = 0; i < 3; ++i) dv.by_s[i] = FastDiv(w.s[i]);
  return dv;
}

template <class T>
void bwd_v11_window_gather(cudaStream_t s, const BackwardArgs<T>& a) {
  check_backward(a, "bwd_v11_window_gather");
  if (const std::string why = bwd_v11_refuses<T>(a.w); !why.empty()) throw tut::Unsupported(why);
  const WindowGatherDivs dv = window_gather_divs(a.w);
  constexpr int kBlock = 256;
  const unsigned grid = grid_for(a.w.in_numel(), kBlock, "bwd_v11_window_gather");
  if (window_gather_candidates(a.w) <= 2) bwd_v11_window_gather_kernel<2, T><<<grid, kBlock, 0, s>>>(a, dv);
  else bwd_v11_window_gather_kernel<3, T><<<grid, kBlock, 0, s>>>(a, dv);
  TUT_CHECK_LAUNCH("bwd_v11_window_gather_kernel");
}

template <class T>
std::vector<const void*> bwd_v11_kernels() {
  return {TUT_KERNEL(bwd_v11_window_gather_kernel<2, T>), TUT_KERNEL(bwd_v11_window_gather_kernel<3, T>)};
}

}  // namespace ch06
