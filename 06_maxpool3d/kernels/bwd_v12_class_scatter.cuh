// bwd v12_class_scatter: a deterministic backward for overlapping windows that is a scatter, not a
// gather: zero dx, then add each output's dy at its saved cell in a fixed number of passes, each
// pass over a class of outputs whose windows do not overlap, so that no two threads of a pass add
// to the same cell and a plain load, add and store replaces atomicAdd.
//
// The classes. Along an axis the window spans (k - 1) * dil + 1 cells and starts every s cells, so
// outputs o and o + m have disjoint windows when m * s >= span: m = ceil(span / s) is 2 for kernel 3
// stride 2 and 3 for kernel 3 stride 1. Output (od, oh, ow) is in class (od mod m0, oh mod m1, ow
// mod m2); within a class no two windows share a cell, and an output's saved cell lies in its own
// window (an int64 index that does not is dropped, as v7 and the gathers drop it), so within a pass
// each cell receives at most one add. The passes run one after another in a fixed order (class
// (0, 0, 0) first, the last axis fastest), so every dx element is the same sum in the same order on
// every run: deterministic. It is not v1's order: a cell covered by outputs 3 and 4 along an axis
// gets output 4's dy first (class 0) and output 3's next (class 1), where v1 adds 3 then 4. With two
// terms the bits agree (a + b = b + a), with three or more they may differ in the last place.
//
// Why it should beat the gathers: the gathers (v1, v11) pay for every candidate output of every
// cell (8 for kernel 3 stride 2, 27 for stride 1), most of which did not choose the cell; v11's
// first form issued 390 M warp instructions on the stem case (485 per warp of 32 cells) and ran
// at 0.095 of copy. A scatter pays per output: one decode, two loads, one read-modify-write. It is
// PyTorch's work with the atomics taken out and the launch split in m0 * m1 * m2 passes.
// Prediction (H100): the memset at a fill's speed (about 35 us for the stem's 103 MB of dx), then
// 8 passes of 0.4 M outputs each, each pass a few microseconds (one wave of threads, each waiting
// for its index, then for the cell it adds to): about 65-75 us in all on the stem case where
// PyTorch's fill and atomic scatter took 108 us (NDHWC) and v9 91 us (NCDHW). On kernel 3 stride 1,
// 27 passes over 0.62 M outputs each: the bytes of the scatter (the int64 index, dy, and the cells'
// read and write) plus 27 launches' gaps, about 150 us where PyTorch took 243 us. Kernel 8 stride 1
// would need 512 passes and is refused (more than 27).
//
// Measured: see the lesson (not measured when written).
#pragma once

#include "kernels/bwd.cuh"

namespace ch06 {

inline constexpr int kClassMaxPasses = 27;
inline constexpr int kClassBlock = 256;

// One pass: its class along each axis, the period m, how many of the class's outputs lie along each
// axis, and the divisors that turn a thread's number into its output.
struct ClassPass {
  int cls[3] = {0, 0, 0}, m[3] = {1, 1, 1}, count[3] = {1, 1, 1};
  std::int64_t outputs = 0;  // N * C * count[0] * count[1] * count[2]
  bool narrow = true;        // outputs < 2^31: FastDiv
  FastDiv by_count[3], by_C;
  FastDiv by_W, by_H;        // an int64 index's place (d, h, w)
  FastDiv by_kW, by_kH;      // a compact index's place in the window
};

// The period of the classes along each axis: ceil(span / s).
inline void class_periods(const Window& w, int m[3]) {
  for (int i = 0; i < 3; ++i) {
    const int span = (w.k[i] - 1) * w.dil[i] + 1;
    m[i] = (span + w.s[i] - 1) / w.s[i];
  }
}

inline int class_passes(const Window& w) {
  int m[3];
  class_periods(w, m);
  return m[0] * m[1] * m[2];
}

inline ClassPass class_pass(const Window& w, int cd, int ch, int cw) {
  ClassPass cp;
  class_periods(w, cp.m);
  cp.cls[0] = cd;
  cp.cls[1] = ch;
  cp.cls[2] = cw;
  const int out[3] = {w.oD, w.oH, w.oW};
  for (int i = 0; i < 3; ++i) cp.count[i] = out[i] > cp.cls[i] ? (out[i] - cp.cls[i] + cp.m[i] - 1) / cp.m[i] : 0;
  cp.outputs = w.N * w.C * cp.count[0] * cp.count[1] * cp.count[2];
  cp.narrow = cp.outputs <= kMaxInt32;
  if (cp.outputs > 0 && cp.narrow) {
    for (int i = 0; i < 3; ++i) cp.by_count[i] = FastDiv(cp.count[i]);
    cp.by_C = FastDiv(w.C);
  }
  cp.by_W = FastDiv(w.W);
  cp.by_H = FastDiv(w.H);
  cp.by_kW = FastDiv(w.k[2]);
  cp.by_kH = FastDiv(w.k[1]);
  return cp;
}

// Along an axis: cell x (in the volume) for window place j of output o, and whether it is one of
// o's cells inside the input.
TUT_HD inline bool in_own_window(int x, int o, int k, int s, int p, int dil, int in) {
  if (x < 0 || x >= in) return false;
  const int r = x + p - o * s;
  if (r < 0 || r > (k - 1) * dil) return false;
  return dil == 1 || r % dil == 0;
}

// Thread i of a pass: its output, its saved cell, and the add. Host and device (a CPU test runs the
// passes on the host).
template <class T>
TUT_HD inline void class_add(const BackwardArgs<T>& a, const ClassPass& cp, std::int64_t i) {
  const Window& w = a.w;
  const bool cl = w.layout == Layout::ndhwc;
  std::int64_t n, c;
  int jd, jh, jw;  // the output's number within the class along each axis
  if (cp.narrow) {
    std::uint32_t r = static_cast<std::uint32_t>(i), q;
    std::uint32_t cc = 0;
    if (cl) {
      q = cp.by_C.div(r);
      cc = r - q * static_cast<std::uint32_t>(w.C);
      r = q;
    }
    q = cp.by_count[2].div(r);
    jw = static_cast<int>(r - q * static_cast<std::uint32_t>(cp.count[2]));
    r = q;
    q = cp.by_count[1].div(r);
    jh = static_cast<int>(r - q * static_cast<std::uint32_t>(cp.count[1]));
    r = q;
    q = cp.by_count[0].div(r);
    jd = static_cast<int>(r - q * static_cast<std::uint32_t>(cp.count[0]));
    if (cl) {
      n = q;
      c = cc;
    } else {
      const std::uint32_t nn = cp.by_C.div(q);
      n = nn;
      c = q - nn * static_cast<std::uint32_t>(w.C);
    }
  } else {
    std::int64_t r = i;
    c = 0;
    if (cl) {
      c = r % w.C;
      r /= w.C;
    }
    jw = static_cast<int>(r % cp.count[2]);
    r /= cp.count[2];
    jh = static_cast<int>(r % cp.count[1]);
    r /= cp.count[1];
    jd = static_cast<int>(r % cp.count[0]);
    r /= cp.count[0];
    if (cl) {
      n = r;
    } else {
      n = r / w.C;
      c = r % w.C;
    }
  }
  const int od = cp.cls[0] + jd * cp.m[0], oh = cp.cls[1] + jh * cp.m[1], ow = cp.cls[2] + jw * cp.m[2];
  const std::int64_t pos = (static_cast<std::int64_t>(od) * w.oH + oh) * w.oW + ow;
  const std::int64_t o = cl ? (n * w.out_plane() + pos) * w.C + c : (n * w.C + c) * w.out_plane() + pos;
  int d, h, x;
  if (w.indices == IndexFormat::int64) {
    const std::int64_t saved = a.index[o];
    if (saved < 0 || saved >= w.in_plane()) return;
    const std::uint32_t u = static_cast<std::uint32_t>(saved), r1 = cp.by_W.div(u), r2 = cp.by_H.div(r1);
    x = static_cast<int>(u - r1 * static_cast<std::uint32_t>(w.W));
    h = static_cast<int>(r1 - r2 * static_cast<std::uint32_t>(w.H));
    d = static_cast<int>(r2);
  } else {
    const int cell = saved_window_cell(a, o);
    if (cell < 0 || cell >= w.cells()) return;
    const std::uint32_t u = static_cast<std::uint32_t>(cell), r1 = cp.by_kW.div(u), r2 = cp.by_kH.div(r1);
    x = ow * w.s[2] - w.p[2] + static_cast<int>(u - r1 * static_cast<std::uint32_t>(w.k[2])) * w.dil[2];
    h = oh * w.s[1] - w.p[1] + static_cast<int>(r1 - r2 * static_cast<std::uint32_t>(w.k[1])) * w.dil[1];
    d = od * w.s[0] - w.p[0] + static_cast<int>(r2) * w.dil[0];
  }
  if (!in_own_window(d, od, w.k[0], w.s[0], w.p[0], w.dil[0], w.D) ||
      !in_own_window(h, oh, w.k[1], w.s[1], w.p[1], w.dil[1], w.H) ||
      !in_own_window(x, ow, w.k[2], w.s[2], w.p[2], w.dil[2], w.W))
    return;
  const std::int64_t flat = (static_cast<std::int64_t>(d) * w.H + h) * w.W + x;
  T* cell = a.dx + in_element(w, n, c, flat);
  *cell = *cell + a.dy[o];
}

template <class T>
__global__ void __launch_bounds__(kClassBlock) bwd_v12_class_pass_kernel(BackwardArgs<T> a, ClassPass cp) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < cp.outputs;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    class_add(a, cp, i);
}

template <class T>
std::string bwd_v12_refuses(const Window& w) {
  if (class_passes(w) > kClassMaxPasses)
    return "bwd_v12_class_scatter: more than 27 classes of outputs (ceil(span / stride) multiplied over the axes)";
  if (!plane_fits_32_bits(w)) return "bwd_v12_class_scatter indexes a plane in 32 bits; this one is larger";
  return {};
}

template <class T>
void bwd_v12_class_scatter(cudaStream_t s, const BackwardArgs<T>& a) {
  check_backward(a, "bwd_v12_class_scatter");
  if (const std::string why = bwd_v12_refuses<T>(a.w); !why.empty()) throw tut::Unsupported(why);
  TUT_CUDA(cudaMemsetAsync(a.dx, 0, static_cast<std::size_t>(a.w.in_numel()) * sizeof(T), s));
  int m[3];
  class_periods(a.w, m);
  for (int cd = 0; cd < m[0]; ++cd)
    for (int ch = 0; ch < m[1]; ++ch)
      for (int cw = 0; cw < m[2]; ++cw) {
        const ClassPass cp = class_pass(a.w, cd, ch, cw);
        if (cp.outputs == 0) continue;
        bwd_v12_class_pass_kernel<T><<<grid_for(cp.outputs, kClassBlock, "bwd_v12_class_scatter"), kClassBlock, 0, s>>>(
            a, cp);
        TUT_CHECK_LAUNCH("bwd_v12_class_pass_kernel");
      }
}

}  // namespace ch06
