// fwd v16_bulk_rows: NCDHW windows that do not overlap, their input rows brought into shared memory
// by the copy engine (cp.async.bulk, sm_90; tut/bulk_copy.cuh), several stages in flight a block.
//
// What changed since v4 and v15. On the H200 the memory-bound NCDHW cases of kernel 2 stop short of
// the copy ceiling where the H100 reached it: 0.659 of copy in half on 2 x 64 x 32 x 112^2 (v15),
// 0.815 on 1 x 2 x 128 x 256^2 (v4), with the warps waiting on loads most of their cycles. The
// H200 moves 1.4 times the H100's bytes a second with the same 132 SMs, so each SM must keep 1.4
// times the bytes in flight; a load holds its registers until it lands, and the registers these
// kernels need (64 a thread in v15) cap the warps resident. A bulk copy holds no register: one
// instruction asks for a whole row of the window, and the block waits on an mbarrier.
//
// Here a stage is G consecutive output rows (a row: plane, od and oh, its oW outputs); it needs kD
// copies a row, each the kH consecutive input rows of one depth of the window, kH * W elements. A
// block keeps kV16Stages stages in flight: while it reduces stage i from shared memory it has asked
// for stages i + 1 to i + 3. The threads take the stage's outputs in turn, each window's cells in
// scan order by PyTorch's rule (replaces), so every result and index is v0's.
//
// Takes: NCDHW, undilated, no padding, windows that do not overlap and lie wholly inside the input
// (ceil_mode's partial windows are refused), rows of whole 16-byte units (W * sizeof(T) % 16 == 0),
// at most 64 cells, and a window row set (kD * kH * W elements) of at most kV16MaxRowBytes. Where
// x is not on 16 bytes it runs v2 instead (a bulk copy reads whole 16-byte units).
//
// Prediction: the kernel-2 NCDHW cases near a copy of their size, in half as in float.
#pragma once

#include "kernels/fwd_v2_interior_border.cuh"
#include "kernels/pool.cuh"
#include "tut/bulk_copy.cuh"

namespace ch06 {

inline constexpr int kV16Block = 256;
inline constexpr int kV16Stages = 4;
inline constexpr int kV16StageBytes = 16384;      // the target; one row set may take up to the max
inline constexpr int kV16MaxRowBytes = 49152;     // kD * kH * W * sizeof(T) of one output row
inline constexpr int kV16MaxCells = 64;

// The stage plan, host and device: G output rows a stage, Q rows in all, S stages.
struct V16Plan {
  std::int64_t rows = 0, stages = 0;  // Q, S
  int G = 1;                          // output rows a stage
  int row_elems = 0;                  // kD * kH * W: one output row's input in shared memory
  int stage_bytes = 0;                // G * row_elems * sizeof(T)
};

template <class T>
inline V16Plan v16_plan(const Window& w) {
  V16Plan p;
  p.rows = w.N * w.C * w.oD * w.oH;
  p.row_elems = w.k[0] * w.k[1] * w.W;
  const int row_bytes = p.row_elems * static_cast<int>(sizeof(T));
  p.G = std::max(1, std::min(kV16StageBytes / row_bytes, 1024));
  p.G = static_cast<int>(std::min<std::int64_t>(p.G, p.rows));
  p.stage_bytes = p.G * row_bytes;
  p.stages = (p.rows + p.G - 1) / p.G;
  return p;
}

template <class T>
std::string fwd_v16_refuses(const Window& w) {
  if (w.layout != Layout::ncdhw) return "fwd_v16_bulk_rows reads the layout NCDHW only";
  if (w.dilated()) return "fwd_v16_bulk_rows takes dilation 1 only (v0, v6, v7 and auto take any)";
  if (w.p[0] != 0 || w.p[1] != 0 || w.p[2] != 0) return "fwd_v16_bulk_rows takes padding 0 only";
  if (!windows_disjoint(w)) return "fwd_v16_bulk_rows takes windows that do not overlap (span <= stride)";
  if (static_cast<std::int64_t>(w.oD - 1) * w.s[0] + w.k[0] > w.D || static_cast<std::int64_t>(w.oH - 1) * w.s[1] + w.k[1] > w.H ||
      static_cast<std::int64_t>(w.oW - 1) * w.s[2] + w.k[2] > w.W)
    return "fwd_v16_bulk_rows takes windows wholly inside the input (not ceil_mode's partial ones)";
  if (w.W * sizeof(T) % 16 != 0) return "fwd_v16_bulk_rows copies rows of whole 16-byte units: W * sizeof(T) % 16 != 0";
  if (w.cells() > kV16MaxCells) return "fwd_v16_bulk_rows takes windows of at most 64 cells";
  if (static_cast<std::int64_t>(w.k[0]) * w.k[1] * w.W * sizeof(T) > kV16MaxRowBytes)
    return "fwd_v16_bulk_rows: one output row's input (kD * kH * W elements) passes 48 KiB";
  if (!plane_fits_32_bits(w)) return "fwd_v16_bulk_rows indexes a plane in 32 bits; this one is larger";
  return {};
}

// Row q of the outputs: its plane (n * C + c), od and oh. kNarrow: q < 2^31, FastDivs.
template <bool kNarrow>
__device__ __forceinline__ void v16_row(std::int64_t q, const Window& w, FastDiv by_oh, FastDiv by_od, std::int64_t& nc,
                                        int& od, int& oh) {
  std::int64_t z;
  if constexpr (kNarrow) {
    z = by_oh.div(static_cast<std::uint32_t>(q));
    nc = by_od.div(static_cast<std::uint32_t>(z));
  } else {
    z = q / w.oH;
    nc = z / w.oD;
  }
  oh = static_cast<int>(q - z * w.oH);
  od = static_cast<int>(z - nc * w.oD);
}

template <class T, bool kNarrow>
__global__ void __launch_bounds__(kV16Block) fwd_v16_bulk_rows_kernel(ForwardArgs<T> a, V16Plan plan, FastDiv by_oh,
                                                                        FastDiv by_od, FastDiv by_ow) {
  extern __shared__ __align__(16) unsigned char v16_smem[];
  __shared__ std::uint64_t bars[kV16Stages];
  const Window& w = a.w;
  T* bufs = reinterpret_cast<T*>(v16_smem);
  const int stage_elems = plan.G * plan.row_elems, kH = w.k[1], kD = w.k[0], kW = w.k[2];
  const int rowset = kH * w.W;  // one depth of one output row's window: kH consecutive input rows
  if (threadIdx.x == 0)
    for (int b = 0; b < kV16Stages; ++b) tut::bulk::init(&bars[b]);
  __syncthreads();

  // Ask for stage t into buffer b: each row of the stage, each depth of its window, one copy.
  const auto issue = [&](std::int64_t t, int b) {
    const std::int64_t q0 = t * plan.G;
    const int rows = static_cast<int>(plan.rows - q0 < plan.G ? plan.rows - q0 : plan.G);
    if (threadIdx.x == 0)
      tut::bulk::expect_tx(&bars[b], static_cast<unsigned>(rows * kD * rowset * sizeof(T)));
    T* buf = bufs + static_cast<std::int64_t>(b) * stage_elems;
    for (int j = threadIdx.x; j < rows * kD; j += blockDim.x) {
      const int r = j / kD, jd = j - r * kD;
      std::int64_t nc;
      int od, oh;
      v16_row<kNarrow>(q0 + r, w, by_oh, by_od, nc, od, oh);
      const T* src = a.x + nc * w.in_plane() + (static_cast<std::int64_t>(od * w.s[0] + jd) * w.H + oh * w.s[1]) * w.W;
      tut::bulk::copy(buf + (jd * plan.G + r) * rowset, src, static_cast<unsigned>(rowset * sizeof(T)), &bars[b]);
    }
  };

  const std::int64_t first = blockIdx.x, step = gridDim.x;
  for (int k = 0; k < kV16Stages - 1; ++k)
    if (first + k * step < plan.stages) issue(first + k * step, k);
  for (std::int64_t i = 0;; ++i) {
    const std::int64_t t = first + i * step;
    if (t >= plan.stages) break;
    const std::int64_t tn = t + (kV16Stages - 1) * step;  // into the buffer the last round freed
    if (tn < plan.stages) issue(tn, static_cast<int>((i + kV16Stages - 1) % kV16Stages));
    const int b = static_cast<int>(i % kV16Stages);
    tut::bulk::wait_parity(&bars[b], static_cast<unsigned>((i / kV16Stages) & 1));
    const T* buf = bufs + static_cast<std::int64_t>(b) * stage_elems;
    const std::int64_t q0 = t * plan.G;
    const int rows = static_cast<int>(plan.rows - q0 < plan.G ? plan.rows - q0 : plan.G);
    for (int o = threadIdx.x; o < rows * w.oW; o += blockDim.x) {
      const int r = static_cast<int>(by_ow.div(static_cast<std::uint32_t>(o))), ow = o - r * w.oW;
      T best = lowest<T>();
      int cell = 0;  // no padding: the window's first cell is inside
      for (int jd = 0; jd < kD; ++jd)
        for (int jh = 0; jh < kH; ++jh) {
          const T* row = buf + (jd * plan.G + r) * rowset + jh * w.W + ow * w.s[2];
          for (int jw = 0; jw < kW; ++jw) {
            const T v = row[jw];
            if (replaces(best, v)) {
              best = v;
              cell = (jd * kH + jh) * kW + jw;
            }
          }
        }
      std::int64_t nc;
      int od, oh;
      v16_row<kNarrow>(q0 + r, w, by_oh, by_od, nc, od, oh);
      store_result(a, (q0 + r) * w.oW + ow, best, cell, od * w.s[0], oh * w.s[1], ow * w.s[2]);
    }
    __syncthreads();  // every thread is done with buffer b before it is asked for again
  }
}

// Whether `kernel` can run here (sm_90 code in the build, a GPU of sm_90 or later), its shared
// memory opened up to the most a block may have; worked out once per device and kernel.
template <class T, bool kNarrow>
bool v16_ready() {
  static bool known[64] = {}, ok[64] = {};
  int dev = 0;
  TUT_CUDA(cudaGetDevice(&dev));
  if (!known[dev & 63]) {
    const void* k = reinterpret_cast<const void*>(&fwd_v16_bulk_rows_kernel<T, kNarrow>);
    int major = 0;
    TUT_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    cudaFuncAttributes attr{};
    TUT_CUDA(cudaFuncGetAttributes(&attr, k));
    ok[dev & 63] = major >= 9 && attr.binaryVersion >= 90;
    if (ok[dev & 63]) {
      TUT_CUDA(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, kV16Stages * kV16MaxRowBytes));
      TUT_CUDA(cudaFuncSetAttribute(k, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared));
    }
    known[dev & 63] = true;
  }
  return ok[dev & 63];
}

// Where x is not on 16 bytes, or the GPU or the build has no sm_90, v2 runs instead.
template <class T>
void fwd_v16_bulk_rows(cudaStream_t s, const ForwardArgs<T>& a) {
  check_forward(a, "fwd_v16_bulk_rows");
  if (const std::string why = fwd_v16_refuses<T>(a.w); !why.empty()) throw tut::Unsupported(why);
  const Window& w = a.w;
  const V16Plan plan = v16_plan<T>(w);
  const std::size_t smem = static_cast<std::size_t>(kV16Stages) * plan.stage_bytes;
  const bool narrow = plan.rows <= kMaxInt32;
  const bool ready = narrow ? v16_ready<T, true>() : v16_ready<T, false>();
  if (!ready || reinterpret_cast<std::uintptr_t>(a.x) % 16 != 0) return fwd_v2_interior_border(s, a);
  const FastDiv by_oh(w.oH), by_od(w.oD), by_ow(w.oW);
  const auto go = [&](auto kernel) {
    const unsigned grid = one_wave_grid(plan.stages, resident_blocks(reinterpret_cast<const void*>(kernel), kV16Block, smem));
    kernel<<<grid, kV16Block, smem, s>>>(a, plan, by_oh, by_od, by_ow);
  };
  if (narrow) go(&fwd_v16_bulk_rows_kernel<T, true>);
  else go(&fwd_v16_bulk_rows_kernel<T, false>);
  TUT_CHECK_LAUNCH("fwd_v16_bulk_rows");
}

template <class T>
std::vector<const void*> fwd_v16_kernels() {
  return {TUT_KERNEL(fwd_v16_bulk_rows_kernel<T, true>), TUT_KERNEL(fwd_v16_bulk_rows_kernel<T, false>)};
}

}  // namespace ch06
