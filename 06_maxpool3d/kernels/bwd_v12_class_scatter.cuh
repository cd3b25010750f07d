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
// at 0.095 of copy. A scatter pays per output: one decode, two loads, one read-modify-write.
//
// Against PyTorch's scatter, which has the same per-output work: PyTorch's kernel gives each thread
// one output, and Nsight Compute found its warps waiting on memory (long scoreboard) 83 % of the
// time on the stem case, 54 warps resident per SM: a chain of index load, then atomic, with one
// chain per thread in flight. Here the chain is longer (index load, then the cell's load, then its
// store: no fire-and-forget atomic), so each thread takes kClassBatch = 4 outputs of its pass and
// issues the four chains' loads together: at 80 registers, 24 warps per SM with 4 chains each,
// about 1.8 times PyTorch's chains in flight.
// Prediction (H100): the memset (about 34 us for the stem's 103 MB of dx, cudaMemsetAsync's 3.05
// TB/s measured on kernel 8 stride 8) and 8 passes of 0.4 M outputs taking together a little over
// half of PyTorch's 71-77 us scatter kernel, plus 8 launches' gaps of about 2 us: about 95 us on
// the NDHWC stem case where PyTorch's fill and scatter took 108-121 us (1.2-1.3x), and v9 127 us.
// In NCDHW the stem case stays with v9 (91 us): this estimate does not clearly beat it. On kernel 3
// stride 1 (4x32x32x64x64), 27 passes of 0.62 M outputs: the scatter's bytes (int64 index 134 MB,
// dy 67 MB, the cells' read and write) and 27 gaps, about 150-200 us where PyTorch took 243 us and
// v6 314 us. Kernel 8 stride 1 would need 512 passes and is refused (more than 27).
//
// Measured (H100, results/): wrong, by the bytes. On the NDHWC stem case 191 us (PyTorch's fill and
// scatter 121 us raced, v9 127 us, v0 115 us); on the NCDHW stem case 261 us (v9 92 us); on kernel
// 3 stride 1, 1065 us with the int64 index and 961 with the compact one (v6 314 and 320, v0 245 and
// 227). Nsight Compute: each of the stem case's 8 passes takes 16-17 us with DRAM 48-50 % busy, each
// of kernel 3 stride 1's 27 passes 29-35 us at 57-61 %, 63.5 MB of DRAM reads and writes per pass
// of 0.62 M outputs (100 bytes per output) and 1715 MB in all, where PyTorch's scatter kernel moved
// 293 MB (on the NDHWC stem case, 219 MB over the 8 passes against 127 MB). A pass's outputs are
// spread over the whole volume (one in m0 * m1 * m2), so the cells it adds to share few sectors:
// each add moves a 32-byte sector in and out of DRAM for its 4 bytes, and the next pass, over the
// neighbouring outputs, moves the same sectors again. PyTorch's atomics add in L2, where the
// sectors of all outputs' adds meet in one pass; splitting the outputs into classes took that away.
// The passes are bound by DRAM, not by the latency the batch of 4 was added for. Kept as a
// measured rung; the rule (bwd_auto_rule.cuh) does not take it.
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

// Output i of a pass: its place, and its number in the output.
struct ClassOut {
  std::int64_t n = 0, c = 0, o = 0;
  int od = 0, oh = 0, ow = 0;
};

TUT_HD inline ClassOut class_output(const Window& w, const ClassPass& cp, std::int64_t i) {
  const bool cl = w.layout == Layout::ndhwc;
  ClassOut q;
  int jd, jh, jw;  // the output's number within the class along each axis
  if (cp.narrow) {
    std::uint32_t r = static_cast<std::uint32_t>(i), t;
    std::uint32_t cc = 0;
    if (cl) {
      t = cp.by_C.div(r);
      cc = r - t * static_cast<std::uint32_t>(w.C);
      r = t;
    }
    t = cp.by_count[2].div(r);
    jw = static_cast<int>(r - t * static_cast<std::uint32_t>(cp.count[2]));
    r = t;
    t = cp.by_count[1].div(r);
    jh = static_cast<int>(r - t * static_cast<std::uint32_t>(cp.count[1]));
    r = t;
    t = cp.by_count[0].div(r);
    jd = static_cast<int>(r - t * static_cast<std::uint32_t>(cp.count[0]));
    if (cl) {
      q.n = t;
      q.c = cc;
    } else {
      const std::uint32_t nn = cp.by_C.div(t);
      q.n = nn;
      q.c = t - nn * static_cast<std::uint32_t>(w.C);
    }
  } else {
    std::int64_t r = i;
    if (cl) {
      q.c = r % w.C;
      r /= w.C;
    }
    jw = static_cast<int>(r % cp.count[2]);
    r /= cp.count[2];
    jh = static_cast<int>(r % cp.count[1]);
    r /= cp.count[1];
    jd = static_cast<int>(r % cp.count[0]);
    r /= cp.count[0];
    if (cl) {
      q.n = r;
    } else {
      q.n = r / w.C;
      q.c = r % w.C;
    }
  }
  q.od = cp.cls[0] + jd * cp.m[0];
  q.oh = cp.cls[1] + jh * cp.m[1];
  q.ow = cp.cls[2] + jw * cp.m[2];
  const std::int64_t pos = (static_cast<std::int64_t>(q.od) * w.oH + q.oh) * w.oW + q.ow;
  q.o = cl ? (q.n * w.out_plane() + pos) * w.C + q.c : (q.n * w.C + q.c) * w.out_plane() + pos;
  return q;
}

// The dx element output q's saved index names, or -1 when it names no cell of q's own window
// inside the input (then the output adds nothing, as in v7 and the gathers).
template <class T>
TUT_HD inline std::int64_t class_target(const BackwardArgs<T>& a, const ClassPass& cp, const ClassOut& q,
                                        std::int64_t saved) {
  const Window& w = a.w;
  int d, h, x;
  if (w.indices == IndexFormat::int64) {
    if (saved < 0 || saved >= w.in_plane()) return -1;
    const std::uint32_t u = static_cast<std::uint32_t>(saved), r1 = cp.by_W.div(u), r2 = cp.by_H.div(r1);
    x = static_cast<int>(u - r1 * static_cast<std::uint32_t>(w.W));
    h = static_cast<int>(r1 - r2 * static_cast<std::uint32_t>(w.H));
    d = static_cast<int>(r2);
  } else {
    if (saved < 0 || saved >= w.cells()) return -1;
    const std::uint32_t u = static_cast<std::uint32_t>(saved), r1 = cp.by_kW.div(u), r2 = cp.by_kH.div(r1);
    x = q.ow * w.s[2] - w.p[2] + static_cast<int>(u - r1 * static_cast<std::uint32_t>(w.k[2])) * w.dil[2];
    h = q.oh * w.s[1] - w.p[1] + static_cast<int>(r1 - r2 * static_cast<std::uint32_t>(w.k[1])) * w.dil[1];
    d = q.od * w.s[0] - w.p[0] + static_cast<int>(r2) * w.dil[0];
  }
  if (!in_own_window(d, q.od, w.k[0], w.s[0], w.p[0], w.dil[0], w.D) ||
      !in_own_window(h, q.oh, w.k[1], w.s[1], w.p[1], w.dil[1], w.H) ||
      !in_own_window(x, q.ow, w.k[2], w.s[2], w.p[2], w.dil[2], w.W))
    return -1;
  return in_element(w, q.n, q.c, (static_cast<std::int64_t>(d) * w.H + h) * w.W + x);
}

template <class T>
TUT_HD inline std::int64_t saved_index_of(const BackwardArgs<T>& a, std::int64_t o) {
  return a.w.indices == IndexFormat::int64 ? a.index[o] : saved_window_cell(a, o);
}

// Output i of a pass, one after another: its saved index, then the add. Host and device (the CPU
// tests run the passes with it; the kernel does the same steps for kClassBatch outputs at a time).
template <class T>
TUT_HD inline void class_add(const BackwardArgs<T>& a, const ClassPass& cp, std::int64_t i) {
  const ClassOut q = class_output(a.w, cp, i);
  const std::int64_t e = class_target(a, cp, q, saved_index_of(a, q.o));
  if (e >= 0) a.dx[e] = a.dx[e] + a.dy[q.o];
}

// Outputs per thread whose loads are in flight together: all their index reads, then all their dy
// and dx reads, then all their stores (no two of a pass write the same cell, so the order of a
// thread's stores does not matter).
inline constexpr int kClassBatch = 4;

template <class T>
__global__ void __launch_bounds__(kClassBlock) bwd_v12_class_pass_kernel(BackwardArgs<T> a, ClassPass cp) {
  const std::int64_t threads = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < cp.outputs;
       i += kClassBatch * threads) {
    ClassOut q[kClassBatch];
    std::int64_t saved[kClassBatch], e[kClassBatch];
    T g[kClassBatch] = {}, v[kClassBatch] = {};
#pragma unroll
    for (int u = 0; u < kClassBatch; ++u) {
      const bool here = i + u * threads < cp.outputs;
      q[u] = class_output(a.w, cp, here ? i + u * threads : i);
      saved[u] = here ? saved_index_of(a, q[u].o) : -1;
    }
#pragma unroll
    for (int u = 0; u < kClassBatch; ++u) {
      e[u] = class_target(a, cp, q[u], saved[u]);
      if (e[u] >= 0) {
        g[u] = a.dy[q[u].o];
        v[u] = a.dx[e[u]];
      }
    }
#pragma unroll
    for (int u = 0; u < kClassBatch; ++u)
      if (e[u] >= 0) a.dx[e[u]] = v[u] + g[u];
  }
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
        const std::int64_t threads = (cp.outputs + kClassBatch - 1) / kClassBatch;
        bwd_v12_class_pass_kernel<T><<<grid_for(threads, kClassBlock, "bwd_v12_class_scatter"), kClassBlock, 0, s>>>(
            a, cp);
        TUT_CHECK_LAUNCH("bwd_v12_class_pass_kernel");
      }
}

}  // namespace ch06
