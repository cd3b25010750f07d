// bwd v5_chunk_writer: the deterministic backward where windows do not overlap, written the way a
// memset writes: one thread per 16-byte chunk of dx.
//
// As in v3, when the window's span is at most the stride on every axis each input cell lies in at
// most one window, so dx is dy at each output's saved cell and 0 elsewhere, and the cells split
// into segments: along an axis, output o owns [o*s - p, (o+1)*s - p), the first from 0, the last to
// the end. What changes is who writes. v3 gave a thread one output's segment of a slice: on kernel 8
// stride 8 that is 8 rows of 32 bytes, each thread waiting for its index and dy before its first
// store, and the DRAM was 39 % busy. Here thread i writes chunk i of dx, V consecutive elements
// (16 bytes: 4 floats along W in NCDHW, 4 channels of one position in NDHWC), so a warp's store is
// 512 contiguous bytes, as a memset's. The thread finds the output whose segment holds each of its
// cells (a multiply-high per axis), reads that output's dy and saved index (the same few outputs
// for many neighbouring chunks, so L1 and L2 serve them), and stores dy where the index names the
// cell, 0 elsewhere. Every dx element is written once, by one thread: no zeroing pass, no atomics,
// the same bits on every run.
//
// Prediction: the floor's bytes, dx written once at a memset's speed plus dy and the index read
// once from DRAM. On 2x64x64^3 with kernel 8 stride 8 the floor is nearly all dx, so this is a
// memset's time, where the scatter (PyTorch's way) is a memset and then a kernel: faster than the
// scatter, where v3 was at half its speed. On kernel 2 stride 2 each chunk spans two outputs, so a
// thread reads two indices: more instructions than v3's thread per output, about the same bytes.
// SASS: STG.E.128 stores and no atomics (tests/test_sass.cpp).
//
// Measured (H100, results/): on kernel 8 stride 8, 0.495 of copy, ahead of v3 (0.410) but at half
// the scatter's speed (0.876: a memset and 65536 atomics), 0.56x PyTorch; 0.340 with the compact
// index. On kernel 2 stride 2 it is slower than v3 (0.598 against 0.786), two index reads per chunk.
// Why not a memset's speed (Nsight Compute, results/): it is bound by instructions, not bytes. 55.6 M
// warp instructions on kernel 8 stride 8, 212 per 16-byte chunk (the chunk's place by four
// divisions, the owning output's, the loads and compares), with 80 registers per thread (37 %
// occupancy); the DRAM 38 % busy. The stores that follow a memset's pattern are not the cost; the
// arithmetic in front of each is. bwd_v7 and v8 take the zeros away from the arithmetic.
#pragma once

#include "kernels/bwd.cuh"

#include <type_traits>

namespace ch06 {

// What every thread shares: the divisors that turn a chunk number into its place, computed once.
struct ChunkArgs {
  bool narrow = true;   // chunk numbers fit 32 bits: FastDiv; else 64-bit division
  bool cl = false;      // NDHWC with C > 1 (with one channel, NDHWC is NCDHW in memory)
  std::int64_t chunks = 0;
  std::int64_t per_row = 1;  // NCDHW: chunks per row (W / V); NDHWC: chunks per position (C / V)
  FastDiv by_per_row, by_W, by_H, by_D;
  FastDiv by_s[3];
};

inline constexpr int kChunkBatch = 2;  // chunks per thread whose loads are in flight together

// One chunk between its loads and its store: where it goes, and per element the saved index that
// would name it (-1: none can), the saved index of the output owning it, and that output's dy.
template <int V, class T>
struct ChunkJob {
  T* dst = nullptr;  // nullptr: no chunk
  std::int64_t want[V], saved[V];
  T grad[V];
};

// Chunk i of dx: find the outputs owning its V elements and issue their loads (dy and the saved
// index). Host and device (a CPU test runs it on every chunk of small cases).
template <int V, class T>
TUT_HD inline void load_chunk(const BackwardArgs<T>& a, const ChunkArgs& ca, std::int64_t i, ChunkJob<V, T>& job) {
  const Window& w = a.w;
  const bool int64 = w.indices == IndexFormat::int64;
  std::int64_t lead;  // NCDHW: n*C + c; NDHWC: n
  int d, h, x, g;     // g: the chunk's first element along W (NCDHW) or C (NDHWC), in units of V
  if (ca.narrow) {
    std::uint32_t r = static_cast<std::uint32_t>(i), q = ca.by_per_row.div(r);
    g = static_cast<int>(r - q * static_cast<std::uint32_t>(ca.per_row));
    r = q;
    x = 0;
    if (ca.cl) {
      q = ca.by_W.div(r);
      x = static_cast<int>(r - q * static_cast<std::uint32_t>(w.W));
      r = q;
    }
    q = ca.by_H.div(r);
    h = static_cast<int>(r - q * static_cast<std::uint32_t>(w.H));
    r = q;
    q = ca.by_D.div(r);
    d = static_cast<int>(r - q * static_cast<std::uint32_t>(w.D));
    lead = q;
  } else {
    std::int64_t r = i;
    g = static_cast<int>(r % ca.per_row);
    r /= ca.per_row;
    x = 0;
    if (ca.cl) {
      x = static_cast<int>(r % w.W);
      r /= w.W;
    }
    h = static_cast<int>(r % w.H);
    r /= w.H;
    d = static_cast<int>(r % w.D);
    lead = r / w.D;
  }
  const int od = owning_output(d, w.p[0], w.oD, ca.by_s[0]), oh = owning_output(h, w.p[1], w.oH, ca.by_s[1]);
  // The compact index names a window cell: this row's part of it, or -1 if the row is in no window.
  int row_cell = -1;
  if (!int64) {
    const int jd = place_in_window(d, od, w.k[0], w.s[0], w.p[0], w.dil[0]);
    const int jh = place_in_window(h, oh, w.k[1], w.s[1], w.p[1], w.dil[1]);
    row_cell = jd < 0 || jh < 0 ? -1 : (jd * w.k[1] + jh) * w.k[2];
  }
  const std::int64_t row = (lead * w.D + d) * static_cast<std::int64_t>(w.H) + h;  // (n, c, d, h) or (n, d, h)
  const std::int64_t flat_row = (static_cast<std::int64_t>(d) * w.H + h) * w.W;   // the index of (d, h, 0)
  if (!ca.cl) {
    // V cells of a row, x0 .. x0 + V - 1. Their outputs: ow at x0, the next one from the cell
    // `next` on (segments are s cells long, so one step per cell at most); most chunks have one.
    const int x0 = g * V;
    int ow = owning_output(x0, w.p[2], w.oW, ca.by_s[2]);
    int next = ow == w.oW - 1 ? w.W : (ow + 1) * w.s[2] - w.p[2];
    int r = x0 + w.p[2] - ow * w.s[2];  // x0's place along W from the start of ow's window
    std::int64_t o = ((lead * w.oD + od) * w.oH + oh) * static_cast<std::int64_t>(w.oW) + ow;
    std::int64_t saved = int64 ? a.index[o] : saved_window_cell(a, o);
    T grad = a.dy[o];
#if defined(__CUDA_ARCH__)  // the same code runs on the host in the CPU tests
#pragma unroll
#endif
    for (int l = 0; l < V; ++l) {
      if (l > 0) {
        ++r;
        if (x0 + l >= next) {
          ++ow, ++o;
          next = ow == w.oW - 1 ? w.W : next + w.s[2];
          r = x0 + l + w.p[2] - ow * w.s[2];
          saved = int64 ? a.index[o] : saved_window_cell(a, o);
          grad = a.dy[o];
        }
      }
      job.saved[l] = saved;
      job.grad[l] = grad;
      if (int64) {
        job.want[l] = flat_row + x0 + l;
      } else {
        const int jw = w.dil[2] == 1 ? (r < w.k[2] ? r : -1) : (r % w.dil[2] == 0 && r / w.dil[2] < w.k[2] ? r / w.dil[2] : -1);
        job.want[l] = row_cell < 0 || jw < 0 ? -1 : row_cell + jw;
      }
    }
    job.dst = a.dx + row * w.W + x0;
  } else {
    // V channels of one position: V outputs at the same place, consecutive in memory.
    const int ow = owning_output(x, w.p[2], w.oW, ca.by_s[2]);
    const int jw = int64 ? 0 : place_in_window(x, ow, w.k[2], w.s[2], w.p[2], w.dil[2]);
    const std::int64_t target = int64 ? flat_row + x : (row_cell < 0 || jw < 0 ? -1 : row_cell + jw);
    const std::int64_t o0 = (((lead * w.oD + od) * w.oH + oh) * static_cast<std::int64_t>(w.oW) + ow) * w.C + g * V;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int l = 0; l < V; ++l) {
      job.saved[l] = int64 ? a.index[o0 + l] : saved_window_cell(a, o0 + l);
      job.grad[l] = a.dy[o0 + l];
      job.want[l] = target;
    }
    job.dst = a.dx + (row * w.W + x) * w.C + g * V;
  }
}

// The chunk's V elements, each dy where the saved index names it, else 0, stored at once.
template <int V, class T>
TUT_HD inline void store_chunk(const ChunkJob<V, T>& job) {
  tut::ew::Packed<T, V> p;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int l = 0; l < V; ++l) p.elem[l] = job.want[l] >= 0 && job.saved[l] == job.want[l] ? job.grad[l] : T(0);
  *reinterpret_cast<tut::ew::Packed<T, V>*>(job.dst) = p;
}

// Each thread takes kChunkBatch chunks gridDim.x * blockDim.x apart at a time: all their loads, then
// all their stores.
template <int V, class T>
__global__ void __launch_bounds__(256) bwd_v5_chunk_writer_kernel(BackwardArgs<T> a, ChunkArgs ca) {
  const std::int64_t threads = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < ca.chunks;
       i += kChunkBatch * threads) {
    ChunkJob<V, T> job[kChunkBatch];
#pragma unroll
    for (int u = 0; u < kChunkBatch; ++u)
      if (i + u * threads < ca.chunks) load_chunk<V>(a, ca, i + u * threads, job[u]);
#pragma unroll
    for (int u = 0; u < kChunkBatch; ++u)
      if (job[u].dst) store_chunk(job[u]);
  }
}

template <class T>
std::string bwd_v5_refuses(const Window& w) {
  return disjoint_writer_refuses(w, "bwd_v5_chunk_writer");
}

// The chunk width: 4 elements (16 bytes) when rows (NCDHW) or positions (NDHWC) are whole chunks
// and dx is aligned to 16 bytes, else 2, else 1.
template <class T>
int bwd_v5_pack(const BackwardArgs<T>& a) {
  const Window& w = a.w;
  const bool cl = w.layout == Layout::ndhwc && w.C > 1;
  for (int V : {4, 2}) {
    if (reinterpret_cast<std::uintptr_t>(a.dx) % (V * sizeof(T)) != 0) continue;
    if (cl ? w.C % V == 0 : w.W % V == 0) return V;
  }
  return 1;
}

template <class T>
ChunkArgs chunk_args(const Window& w, int V) {
  ChunkArgs ca;
  ca.cl = w.layout == Layout::ndhwc && w.C > 1;
  ca.per_row = ca.cl ? w.C / V : w.W / V;
  ca.chunks = w.in_numel() / V;
  ca.narrow = ca.chunks <= kMaxInt32;
  if (ca.narrow) {
    ca.by_per_row = FastDiv(ca.per_row);
    ca.by_W = FastDiv(w.W);
    ca.by_H = FastDiv(w.H);
    ca.by_D = FastDiv(w.D);
  }
  for (int i = 0; i < 3; ++i) ca.by_s[i] = FastDiv(w.s[i]);
  return ca;
}

template <class T>
void bwd_v5_chunk_writer(cudaStream_t s, const BackwardArgs<T>& a) {
  check_backward(a, "bwd_v5_chunk_writer");
  if (const std::string why = bwd_v5_refuses<T>(a.w); !why.empty()) throw tut::Unsupported(why);
  const int V = bwd_v5_pack(a);
  const ChunkArgs ca = chunk_args<T>(a.w, V);
  // One wave of resident blocks, each thread walking its chunks kChunkBatch at a time.
  const auto launch = [&](auto v) {
    constexpr int kBlock = 256;
    constexpr int kV = decltype(v)::value;
    static const std::int64_t resident = resident_blocks(TUT_KERNEL(bwd_v5_chunk_writer_kernel<kV, T>), kBlock, 0);
    const std::int64_t needed = (ca.chunks + static_cast<std::int64_t>(kBlock) * kChunkBatch - 1) /
                                (static_cast<std::int64_t>(kBlock) * kChunkBatch);
    const unsigned grid = one_wave_grid(needed, resident);
    bwd_v5_chunk_writer_kernel<kV, T><<<grid, kBlock, 0, s>>>(a, ca);
  };
  if (V == 4) launch(std::integral_constant<int, 4>{});
  else if (V == 2) launch(std::integral_constant<int, 2>{});
  else launch(std::integral_constant<int, 1>{});
  TUT_CHECK_LAUNCH("bwd_v5_chunk_writer_kernel");
}

template <class T>
std::vector<const void*> bwd_v5_kernels() {
  return {TUT_KERNEL(bwd_v5_chunk_writer_kernel<4, T>), TUT_KERNEL(bwd_v5_chunk_writer_kernel<1, T>)};
}

}  // namespace ch06
