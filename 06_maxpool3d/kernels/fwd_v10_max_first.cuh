// fwd v10_max_first: the window's maximum first, one instruction per cell, and its cell (or its
// exact bits) looked up afterwards among the values still in registers.
//
// What changed since v9 and v2. Every earlier version applies PyTorch's rule cell by cell: "larger
// or NaN" is two compares, then a select of the value and one of the cell, about four
// instructions per cell before any address arithmetic. On the H100 that cost hid under the
// memory's time. The H200 has the same 132 SMs at the same clock and 1.4 times the bandwidth, so
// a byte there has 0.7 of the instructions to spend, and the kernels that were at the copy
// ceiling on the H100 became bound by issuing instructions (Nsight Compute on the H200, in the
// lesson: v9 on 8^3 planes with kernel 8 issues 75 % of the cycles it could and reaches 0.62 of
// copy). PTX's max.NaN.f32 (FMNMX.NAN, sm_80 and later; __hmax_nan on halves) propagates NaN in
// one instruction; a chain of them gives the window's maximum in one instruction per cell.
//
// What the maximum does not give. PyTorch returns an element of the window, bit for bit: of equal
// values the first (+0 and -0 are equal, so the first one's sign), and of NaNs the last (its
// payload). FMNMX.NAN returns a canonical NaN, and either zero. And the index formats need the
// cell. So where an index is wanted, each batch of cells held in registers is searched after its
// maximum m, only when m would replace the best so far: the first cell equal to m, or the last NaN.
// That is PyTorch's rule applied batch by batch, which gives its answer (a batch's maximum replaces
// the best exactly when its first such cell would have). Where no index is wanted, the maximum
// alone stands unless it is a zero or a NaN; then, and only then, the window is scanned again with
// the rule (v9's or v1's scan).
//
// Where: NCDHW windows that are one run of their plane (v9's case; global pooling is the common
// one), the two suite cases the H200 left furthest from the copy ceiling. v9's lanes and
// geometry (run_of), G lanes per run with 4 pieces each (2 of 8 halves), so a run of 512 floats
// takes 32 lanes and one of 64 takes 4.
//
// Prediction: the instructions per cell fall from about 4 to about 1 (no index) or 2 (an index),
// and these two cases rise towards the ceiling. SASS: FMNMX.NAN (tests/test_sass.cpp).
//
// Measured (H200; Nsight Compute, results/NVIDIA_H200.v10.ncu.csv; the suite, results/NVIDIA_H200.json):
// on 256 x 256 planes of 8^3 with kernel 8, 19.5 M warp instructions against v9's 36.1 M, issue
// slots 60 % busy against 75 %, DRAM 83 % busy against 58 %, 34.3 us against 49.2; 0.890 of copy
// against v9's 0.622 in the same run. On 1024 x 512 planes of 4^3 with kernel 4, 18.1 M against
// 31.4 M, 0.860 against 0.699. Not run on an H100.
//
// A first form also took cubic windows of 2 to 4, a thread per output (v2's case), with the
// coordinates clamped into the input instead of tested: a cell outside reads the nearest inside
// cell of the same window, which changes neither the maximum nor, the index being computed from
// the coordinates, the cell (clamping is monotone, so a duplicate sits next to its original in
// scan order). It was correct (the GPU tests) and slower than v2 or v4 on every such suite case
// but two (results/forms/v10_first.*, H200: 0.610 of copy on 33^3 with kernel 2 in ceil mode
// against v2's 0.677); it was not profiled, so why is not known, and it is gone.
#pragma once

#include "kernels/fwd_v9_run_reduce.cuh"  // run_of, store_run, window_is_one_run

namespace ch06 {

// The helpers below also run on the host (the CPU tests), where the host compiler does not know
// `#pragma unroll`; the device gets it, the host nothing.
#ifdef __CUDA_ARCH__
#define CH06_UNROLL _Pragma("unroll")
#else
#define CH06_UNROLL
#endif

// NaN-propagating maximum: one FMNMX.NAN (float) or HMNMX2.NAN (half). On the host (the CPU tests
// run v10's rule there) a stand-in: a canonical NaN, else the larger value, either zero of two.
TUT_HD __forceinline__ float max_nan(float a, float b) {
#ifdef __CUDA_ARCH__
  float d;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(d) : "f"(a), "f"(b));
  return d;
#else
  if ((a != a) | (b != b)) return std::numeric_limits<float>::quiet_NaN();
  return a < b ? b : a;
#endif
}
__device__ __forceinline__ __half max_nan(__half a, __half b) { return __hmax_nan(a, b); }

TUT_HD __forceinline__ bool is_nan(float v) { return v != v; }
__device__ __forceinline__ bool is_nan(__half v) { return __hisnan(v); }
TUT_HD __forceinline__ bool equal(float a, float b) { return a == b; }
__device__ __forceinline__ bool equal(__half a, __half b) { return __heq(a, b); }

// Whether a maximum's bits may differ from the window's winner: a zero (which sign) or a NaN
// (which payload).
template <class T>
TUT_HD __forceinline__ bool bits_unsure(T m) {
  return equal(m, T(0.0f)) | is_nan(m);
}

// The maximum of N values, as a tree (the chain's depth would serialize the FMNMX).
template <int N, class T>
TUT_HD __forceinline__ T max_of(const T (&v)[N]) {
  T m[N];
CH06_UNROLL
  for (int j = 0; j < N; ++j) m[j] = v[j];
CH06_UNROLL
  for (int step = 1; step < N; step *= 2)
CH06_UNROLL
    for (int j = 0; j + step < N; j += 2 * step) m[j] = max_nan(m[j], m[j + step]);
  return m[0];
}

// Where PyTorch's rule, run over v[0, N) in order, ends, given their maximum m: the last NaN if m
// is one, else the first value equal to m. Sets j and the value's own bits (selects over the
// unrolled registers: an index into v would put the array in local memory).
template <int N, class T>
TUT_HD __forceinline__ void locate(const T (&v)[N], T m, int& j, T& value) {
  j = 0;
  value = v[0];
  if (is_nan(m)) {
CH06_UNROLL
    for (int i = 1; i < N; ++i)
      if (is_nan(v[i])) {
        j = i;
        value = v[i];
      }
  } else {
CH06_UNROLL
    for (int i = N - 1; i >= 1; --i)
      if (equal(v[i], m)) {
        j = i;
        value = v[i];
      }
    if (equal(v[0], m)) {
      j = 0;
      value = v[0];
    }
  }
}

// ---- runs (NCDHW, a window that is one run of its plane) ----------------------------------------

// Pieces of V a lane loads per batch: 16 values in registers (4 pieces of 4 floats, 2 of 8 halves).
template <class T>
inline constexpr int kV10Pieces = sizeof(T) == 4 ? 4 : 2;

template <int V, class T>
__global__ void __launch_bounds__(256, 4) fwd_v10_runs_kernel(ForwardArgs<T> a, int groups_log2, int pieces,
                                                             FastDiv by_oh, FastDiv by_od) {
  using Pack = tut::ew::Packed<T, V>;
  constexpr int kP = kV10Pieces<T>, kN = kP * V;
  const Window& w = a.w;
  const int G = 32 >> groups_log2, lane = static_cast<int>(threadIdx.x) & 31, r = lane & (G - 1),
            group = lane / G;
  const std::int64_t total = w.out_numel(), per_round = 32 / G;
  const bool narrow = total <= kMaxInt32, want_cell = w.indices != IndexFormat::none;
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * (blockDim.x / 32);
  for (std::int64_t base = (blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x) / 32 * per_round;
       base < total; base += warps * per_round) {
    const std::int64_t o = base + group;
    RunOf<T> run{a.x, 0, 0, 0};  // no run: the lanes past the last output scan nothing
    if (o < total) run = run_of<V>(a, o, narrow, by_oh, by_od);
    T best;
    int cell;
    // The lane's pieces r, r + G, ..., kP at a time: the maximum, and with_cell, PyTorch's rule
    // batch by batch (the lane's loaded pieces are a prefix of each batch, so a located cell is a
    // loaded one).
    const auto scan = [&](bool with_cell) {
      best = lowest<T>();
      cell = -1;
      for (int p0 = 0; p0 < pieces; p0 += kP * G) {
        T v[kN];
#pragma unroll
        for (int b = 0; b < kP; ++b) {
          const int piece = p0 + b * G + r;
          Pack pk;
          if (piece < run.count) {
            pk = *reinterpret_cast<const Pack*>(run.x + static_cast<std::int64_t>(piece) * V);
          } else {
#pragma unroll
            for (int l = 0; l < V; ++l) pk.elem[l] = lowest<T>();
          }
#pragma unroll
          for (int l = 0; l < V; ++l) v[b * V + l] = pk.elem[l];
        }
        const T m = max_of(v);
        if (!with_cell) {
          best = max_nan(best, m);
        } else if ((p0 + r < run.count) & (replaces(best, m) | (cell < 0))) {
          int j;
          locate(v, m, j, best);
          cell = run.first + (p0 + (j / V) * G + r) * V + j % V;
        }
      }
    };
    scan(want_cell);
    if (want_cell) {
      combine_lanes(best, cell, G);
    } else {
      for (int m = 1; m < G; m *= 2) best = max_nan(best, __shfl_xor_sync(0xffffffffu, best, m));
      // A zero or a NaN: which one's bits is the rule's business. The warp scans again with it,
      // together (the butterfly needs all 32 lanes).
      if (__any_sync(0xffffffffu, (o < total) & bits_unsure(best))) {
        scan(true);
        combine_lanes(best, cell, G);
      }
    }
    if (r == 0 && o < total) store_run(a, o, run.lo, run.first, best, cell);
  }
}

// ---- host side -----------------------------------------------------------------------------------

template <class T>
std::string fwd_v10_refuses(const Window& w) {
  if (w.layout != Layout::ncdhw) return "fwd_v10_max_first reads the layout NCDHW only";
  if (w.dilated()) return "fwd_v10_max_first takes dilation 1 only";
  if (!plane_fits_32_bits(w)) return "fwd_v10_max_first indexes a plane in 32 bits; this one is larger";
  if (!window_is_one_run(w))
    return "fwd_v10_max_first takes windows that are one run of the plane (kW = W, and kH = H or kD = 1, no padding "
           "along W or H)";
  return {};
}

template <class T>
void fwd_v10_max_first(cudaStream_t s, const ForwardArgs<T>& a) {
  check_forward(a, "fwd_v10_max_first");
  if (const std::string why = fwd_v10_refuses<T>(a.w); !why.empty()) throw tut::Unsupported(why);
  launch_runs(a, kV10Pieces<T>, "fwd_v10_max_first",
              [&](auto v, unsigned grid, int log2, int pieces, FastDiv oh, FastDiv od) {
                fwd_v10_runs_kernel<decltype(v)::value, T><<<grid, 256, 0, s>>>(a, log2, pieces, oh, od);
              });
  TUT_CHECK_LAUNCH("fwd_v10_max_first");
}

template <class T>
std::vector<const void*> fwd_v10_kernels() {
  constexpr int kV = 16 / sizeof(T);
  return {TUT_KERNEL(fwd_v10_runs_kernel<kV, T>), TUT_KERNEL(fwd_v10_runs_kernel<1, T>)};
}

}  // namespace ch06
