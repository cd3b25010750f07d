// bwd v17_bulk_store: where windows do not overlap, a block builds dx's next contiguous span in
// shared memory (zeros, kept zero between uses, and the few cells the span's outputs name) and
// hands it to the copy engine with one bulk copy; no thread issues a store to dx but for the
// span's unaligned ends.
//
// What v10, v13 and v16 showed on kernel 8 stride 8 (2x64x64^3, results/): dx is 134 MB and dy
// with the index under 1 MB, a stream of stores, yet v10's and v13's 16-byte stores each wait for
// their item's index and dy (warps stalled on a long scoreboard 78 % of their cycles, DRAM 71.7 %
// busy where PyTorch's fill reaches 81 %), and v16, whose zeros wait for nothing, then waited on
// the load/store unit's queue instead (lg_throttle 26.6 %, 64 registers). Both sides of the
// problem are the store instructions: a thread issues them, so they wait for what the thread waits
// for, and they fill the queue that the thread's loads also use.
//
// Here no thread issues them. A unit of work is a span of dx: G output rows' segments of rows at
// one input depth d of one (n, c) plane, contiguous in NCDHW (on kernel 8 stride 8 one whole
// 64x64 plane, 16 KiB, and its 64 outputs). The block keeps 4 stages of shared memory, each all
// zeros. For a unit, each thread takes at most 2 of its outputs, decodes the cell the output's
// index names (the inverse of v10's compare: the cell must lie in the span and be owned by the
// output, so dx is v10's bit for bit on any index, a corrupt one included), writes dy there in
// the stage and remembers where; then one thread issues cp.async.bulk (sm_90's bulk copy from
// shared to global memory, 16-byte aligned, a multiple of 16 bytes) for the span's aligned body,
// and up to 3 + 3 threads store its unaligned ends from the stage. Four units later the stage is
// reused: its bulk copy has been read out (cp.async.bulk.wait_group.read), and each thread puts
// back the zeros over the cells it set. The next unit's index and dy are loaded into registers
// while this unit is copied, so a load is waited on at most once per unit and never by a store.
// Each dx cell is written once, by the bulk copy or by one thread: no atomics, the same
// bits every run.
//
// First form's prediction, kernel 8 stride 8: the write stream no longer depends on the threads;
// one bulk copy of 16 KiB per unit, up to 3 in flight per block while the next is built, 3 blocks
// per SM, is far more bytes in flight than the ~25 KB per SM that 3.27 TB/s needs over a
// microsecond of latency. So DRAM busy near the fill's 81 %, about 41-42 us, and no 16-byte store
// left in the SASS (UBLKCP in their place).
//
// First form, measured (H100, results/forms/v17_first.*, one bench process; its GPU tests passed):
// wrong. On kernel 8
// stride 8, 0.851 of copy with the int64 index and 0.845 compact, where v10 ran 0.937 and 0.936
// and v13 0.945 and 0.909; raced as auto, 0.968x and 0.961x PyTorch. Kernel 2 stride 2, 0.836 and
// 0.728 (v10 0.847 and 0.823); kernel 2 stride 3 (int64), 0.767 (v10 0.781). Nsight Compute
// (kernel 8 stride 8, int64): 50.5 us against v10's 46.0, DRAM 67.2 % busy (v10 73.1), 113.7 MB
// of DRAM traffic (one pass, as v10), 35 % of the warps resident, and 51.9 % of the warps' active
// cycles at a barrier, 8.6 % on a long scoreboard. 8192 units over 396 blocks in 50 us is about
// 2.4 us per unit, where 3 blocks of 16 KiB per SM at the fill's rate allow 2.0.
// What held each unit, read from the SASS (the profile did not count the stall on memory
// barriers, so this is a reading, not a measurement): the first form took units gridDim.x apart
// (v10's order) and issued the next unit's index and dy loads at the top of the loop, before
// building this unit's stage; the fence that makes the stage visible to the bulk copy
// (fence.proxy.async: MEMBAR.ALL.CTA, then FENCE.VIEW.ASYNC.S) orders the thread's earlier memory
// accesses, those loads among them, so every unit would wait for a load from DRAM under a full
// write stream, and the block's other warps at the barrier behind it.
//
// Second form (this code), three changes. (1) The next unit's loads are issued after the fence,
// not before it. (2) A block takes a contiguous run of units, so that neighbouring units read the
// same outputs (on kernel 8 stride 8, 8 units in a row read the same 64 indices), and a 9th warp,
// which holds no output and never fences, asks the index and dy of the unit 3 ahead into L2
// (prefetch.global.L2). (3) Only a thread that wrote to the stage fences. Prediction: a unit costs
// its own work and the barriers, well under the 2 us that 3 blocks of 16 KiB per SM may take at
// the fill's rate, so the kernel is bound by DRAM: near the fill's 81 % busy, about 42 us on
// kernel 8 stride 8.
// Second form, measured (H100, the suite run in results/NVIDIA_H100_80GB_HBM3.json, commit
// f2ab537): wrong, and slower than the first. On kernel 8 stride 8, 0.0561 ms (0.796 of copy) with
// the int64 index and 0.0564 ms compact, where v10 ran 0.0471 and 0.0470 and v13 0.0482 and
// 0.0488 in the same process; on kernel 2 stride 2, 0.1336 and 0.1348 ms against v10's 0.1100 and
// 0.0962. It was not profiled, so which of the three changes cost the time is not known. The whole
// GPU test binary and the four sanitizers on the newest rungs' case passed with it. The rule does
// not take it (kernels/bwd_auto_rule.cuh).
#pragma once

#include "kernels/bwd.cuh"

#include <type_traits>

namespace ch06 {

inline constexpr int kBulkBlock = 256;                     // threads that hold a unit's outputs
inline constexpr int kBulkThreads = kBulkBlock + 32;       // and a warp that only prefetches
inline constexpr int kBulkStages = 4;              // spans in shared memory per block
inline constexpr int kBulkOutsPerThread = 2;       // a unit's outputs per thread
inline constexpr int kBulkMaxOuts = kBulkBlock * kBulkOutsPerThread;
inline constexpr int kBulkTargetBytes = 16 * 1024;  // a unit's span, aimed at
inline constexpr int kBulkMaxBytes = 48 * 1024;     // the largest span a stage holds
inline constexpr int kBulkAhead = 3;                // units ahead whose index and dy are asked into L2

// The launch's plan, computed on the host (a kernel argument: plain data only).
struct BulkPlan {
  int G = 1;                 // output rows per unit
  int groups = 1;            // units per (n, c, d) plane: ceil(oH / G)
  int cap = 0;               // the longest unit, in elements
  int stage = 0;             // a stage's elements: room for cap after a shift of up to 16 bytes
  std::int64_t units = 0;    // N * C * D * groups
  bool narrow = true;        // unit numbers fit 32 bits: FastDiv
  FastDiv by_groups, by_D, by_HW, by_W, by_oW, by_k1, by_k2;
  FastDiv by_s[3];
};

// Rows [h0, h1) that output rows [oa, ob) own: from 0 for the first, to H for the last (the cells
// past the last window belong to it, as in v10).
TUT_HD inline int bulk_row_begin(const Window& w, int oa) { return oa == 0 ? 0 : oa * w.s[1] - w.p[1]; }
TUT_HD inline int bulk_row_end(const Window& w, int ob) { return ob == w.oH ? w.H : ob * w.s[1] - w.p[1]; }

// The plan for window w, or why the kernel refuses it (then `b` is left unfinished).
template <class T>
std::string bulk_plan(const Window& w, BulkPlan& b) {
  if (const std::string why = disjoint_writer_refuses(w, "bwd_v17_bulk_store"); !why.empty()) return why;
  if (w.layout == Layout::ndhwc && w.C > 1)
    return "bwd_v17_bulk_store copies spans of rows along W: NCDHW, or NDHWC with one channel (v3 and v7 take NDHWC)";
  if (w.oW > kBulkMaxOuts)
    return "bwd_v17_bulk_store: an output row of more than " + std::to_string(kBulkMaxOuts) +
           " outputs (2 per thread of a block); v10 takes it";
  const auto span = [&](int G, int g) {  // elements of unit g of a plane
    const int oa = g * G, ob = std::min(oa + G, w.oH);
    return static_cast<std::int64_t>(bulk_row_end(w, ob) - bulk_row_begin(w, oa)) * w.W;
  };
  const auto longest = [&](int G) {
    const int groups = (w.oH + G - 1) / G;
    std::int64_t m = std::max(span(G, 0), span(G, groups - 1));
    if (groups > 2) m = std::max(m, span(G, 1));  // the middle units are all alike
    return m;
  };
  const std::int64_t target = kBulkTargetBytes / static_cast<std::int64_t>(sizeof(T));
  int G = std::max(1, std::min({w.oH, kBulkMaxOuts / w.oW, static_cast<int>(std::max<std::int64_t>(1, target / (static_cast<std::int64_t>(w.s[1]) * w.W)))}));
  while (G > 1 && longest(G) > target) --G;
  const std::int64_t cap = longest(G);
  if (cap * static_cast<std::int64_t>(sizeof(T)) > kBulkMaxBytes)
    return "bwd_v17_bulk_store: one output row's segment of rows is " + std::to_string(cap * sizeof(T)) +
           " bytes, more than a stage's " + std::to_string(kBulkMaxBytes) + "; v10 takes it";
  constexpr int kPer16 = 16 / static_cast<int>(sizeof(T));
  b.G = G;
  b.groups = (w.oH + G - 1) / G;
  b.cap = static_cast<int>(cap);
  b.stage = (b.cap + kPer16 - 1 + kPer16 - 1) / kPer16 * kPer16;  // up to kPer16 - 1 elements of shift
  b.units = w.N * w.C * w.D * b.groups;
  b.narrow = b.units <= kMaxInt32;
  if (b.narrow) {
    b.by_groups = FastDiv(b.groups);
    b.by_D = FastDiv(w.D);
  }
  b.by_HW = FastDiv(static_cast<std::int64_t>(w.H) * w.W);
  b.by_W = FastDiv(w.W);
  b.by_oW = FastDiv(w.oW);
  b.by_k1 = FastDiv(w.k[1]);
  b.by_k2 = FastDiv(w.k[2]);
  for (int i = 0; i < 3; ++i) b.by_s[i] = FastDiv(w.s[i]);
  return {};
}

// Where unit u lies: its plane's depth d, the output rows [oa, ob) whose rows it holds, its first
// element g0 in dx and its length, and its first output (its outputs are contiguous).
struct BulkUnit {
  int d = 0, od = 0, jd = 0, oa = 0, ob = 0, h0 = 0, len = 0;
  std::int64_t g0 = 0, o0 = 0;
};

TUT_HD inline BulkUnit bulk_unit(const Window& w, const BulkPlan& b, std::int64_t u) {
  BulkUnit r;
  std::int64_t lead;
  int g;
  if (b.narrow) {
    std::uint32_t x = static_cast<std::uint32_t>(u), q = b.by_groups.div(x);
    g = static_cast<int>(x - q * static_cast<std::uint32_t>(b.groups));
    x = q;
    q = b.by_D.div(x);
    r.d = static_cast<int>(x - q * static_cast<std::uint32_t>(w.D));
    lead = q;
  } else {
    g = static_cast<int>(u % b.groups);
    r.d = static_cast<int>((u / b.groups) % w.D);
    lead = u / b.groups / w.D;
  }
  r.od = owning_output(r.d, w.p[0], w.oD, b.by_s[0]);
  r.jd = place_in_window(r.d, r.od, w.k[0], w.s[0], w.p[0], w.dil[0]);
  r.oa = g * b.G;
  r.ob = r.oa + b.G < w.oH ? r.oa + b.G : w.oH;
  r.h0 = bulk_row_begin(w, r.oa);
  r.len = (bulk_row_end(w, r.ob) - r.h0) * w.W;
  r.g0 = ((lead * w.D + r.d) * w.H + r.h0) * static_cast<std::int64_t>(w.W);
  r.o0 = ((lead * w.oD + r.od) * w.oH + r.oa) * static_cast<std::int64_t>(w.oW);
  return r;
}

// The place within unit r of the cell that output (oh, ow) (one of r's) names with `saved`, or -1
// when it names none of r's cells. The inverse of v10's compare: cell x gets dy[o] there exactly
// when o owns x along every axis and o's index names x, so here the named cell must lie at r's
// depth, inside the volume, and be owned by o. int64: a flat index within the plane; compact: a
// cell of o's window (a window cell is always owned by its output when windows do not overlap).
template <bool kInt64>
TUT_HD inline int bulk_named_place(const Window& w, const BulkPlan& b, const BulkUnit& r, int oh, int ow,
                                   std::int64_t saved) {
  int h, x;
  if (kInt64) {
    if (saved < 0 || saved >= w.in_plane()) return -1;
    const std::uint32_t t = static_cast<std::uint32_t>(saved), dd = b.by_HW.div(t);
    if (static_cast<int>(dd) != r.d) return -1;
    const std::uint32_t rem = t - dd * static_cast<std::uint32_t>(w.H * w.W), hh = b.by_W.div(rem);
    h = static_cast<int>(hh);
    x = static_cast<int>(rem - hh * static_cast<std::uint32_t>(w.W));
    if (owning_output(h, w.p[1], w.oH, b.by_s[1]) != oh || owning_output(x, w.p[2], w.oW, b.by_s[2]) != ow) return -1;
  } else {
    if (r.jd < 0 || saved < 0) return -1;
    const std::uint32_t c = static_cast<std::uint32_t>(saved), q = b.by_k2.div(c), jd = b.by_k1.div(q);
    const int jw = static_cast<int>(c - q * static_cast<std::uint32_t>(w.k[2]));
    const int jh = static_cast<int>(q - jd * static_cast<std::uint32_t>(w.k[1]));
    if (static_cast<int>(jd) != r.jd) return -1;
    h = oh * w.s[1] - w.p[1] + jh * w.dil[1];
    x = ow * w.s[2] - w.p[2] + jw * w.dil[2];
    if (h < 0 || h >= w.H || x < 0 || x >= w.W) return -1;
  }
  return (h - r.h0) * w.W + x;
}

// ---- sm_90 bulk copy (PTX ISA: cp.async.bulk, bulk_group completion) ----------------------------

__device__ __forceinline__ void bulk_fence_shared() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
}

__device__ __forceinline__ void bulk_store(void* dst, const void* src, std::uint32_t bytes) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  const auto s = static_cast<std::uint32_t>(__cvta_generic_to_shared(src));
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(dst), "r"(s), "r"(bytes) : "memory");
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
#endif
}

template <int N>
__device__ __forceinline__ void bulk_wait_read() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
#endif
}

__device__ __forceinline__ void bulk_wait_all() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
#endif
}

// One output's loads for a unit.
template <class T>
struct BulkLoad {
  std::int64_t saved = -1;
  T grad{};
};

template <bool kInt64, class T>
__device__ __forceinline__ void bulk_fetch(const BackwardArgs<T>& a, const BulkUnit& r, const int (&j)[kBulkOutsPerThread],
                                           BulkLoad<T> (&ld)[kBulkOutsPerThread]) {
  const int outs = (r.ob - r.oa) * a.w.oW;
#pragma unroll
  for (int q = 0; q < kBulkOutsPerThread; ++q) {
    if (j[q] < outs) {
      const std::int64_t o = r.o0 + j[q];
      ld[q].saved = kInt64 ? a.index[o] : saved_window_cell(a, o);
      ld[q].grad = a.dy[o];
    }
  }
}

// The 128-byte lines of [p, p + bytes) asked into L2 by a warp's lanes.
__device__ __forceinline__ void bulk_prefetch_lines(const void* p, std::size_t bytes, int lane) {
  const std::uintptr_t lo = reinterpret_cast<std::uintptr_t>(p) & ~std::uintptr_t{127};
  const std::uintptr_t hi = reinterpret_cast<std::uintptr_t>(p) + bytes;
  for (std::uintptr_t x = lo + 128u * static_cast<unsigned>(lane); x < hi; x += 32u * 128u)
    asm volatile("prefetch.global.L2 [%0];" ::"l"(x));
}

// A unit's index and dy, asked into L2 by the prefetching warp, which holds no output and never
// fences (a fence would wait for its prefetches, if for anything).
template <bool kInt64, class T>
__device__ __forceinline__ void bulk_prefetch_unit(const BackwardArgs<T>& a, const BulkUnit& r, int lane) {
  const std::size_t outs = static_cast<std::size_t>(r.ob - r.oa) * a.w.oW;
  if (kInt64) bulk_prefetch_lines(a.index + r.o0, outs * sizeof(std::int64_t), lane);
  else if (a.w.compact8()) bulk_prefetch_lines(a.offset8 + r.o0, outs, lane);
  else bulk_prefetch_lines(a.offset16 + r.o0, outs * sizeof(std::int16_t), lane);
  bulk_prefetch_lines(a.dy + r.o0, outs * sizeof(T), lane);
}

template <bool kInt64, class T>
__global__ void __launch_bounds__(kBulkThreads) bwd_v17_bulk_store_kernel(BackwardArgs<T> a, BulkPlan b) {
  extern __shared__ __align__(128) unsigned char bulk_smem[];
  T* const stages = reinterpret_cast<T*>(bulk_smem);
  constexpr int kPer16 = 16 / static_cast<int>(sizeof(T));
  const Window& w = a.w;
  const int t = static_cast<int>(threadIdx.x);
  for (int i = t; i < kBulkStages * b.stage; i += kBulkThreads) stages[i] = T(0);
  bulk_fence_shared();  // the zeros, visible to the bulk copies
  // This thread's outputs of a unit: j = t and t + 256, at output row oa + j / oW, column j % oW
  // (none for the prefetching warp, t >= 256).
  const bool holder = t < kBulkBlock;
  int j[kBulkOutsPerThread];
  int set[kBulkStages][kBulkOutsPerThread];  // the cells set in each stage, oldest first (-1: none)
#pragma unroll
  for (int q = 0; q < kBulkOutsPerThread; ++q) {
    j[q] = holder ? t + q * kBulkBlock : kBulkMaxOuts;
#pragma unroll
    for (int s = 0; s < kBulkStages; ++s) set[s][q] = -1;
  }
  __syncthreads();
  // This block's units: a contiguous run (neighbouring units share their outputs' index and dy:
  // on kernel 8 stride 8 the 8 depths of a window read the same 64 outputs).
  const std::int64_t per = b.units / gridDim.x, extra = b.units % gridDim.x, blk = blockIdx.x;
  const std::int64_t first = blk * per + (blk < extra ? blk : extra), last = first + per + (blk < extra ? 1 : 0);
  if (first >= last) return;
  BulkUnit cur = bulk_unit(w, b, first);
  BulkLoad<T> now[kBulkOutsPerThread];
  bulk_fetch<kInt64>(a, cur, j, now);
  if (!holder)
    for (std::int64_t v = first + 1; v < first + kBulkAhead && v < last; ++v) bulk_prefetch_unit<kInt64>(a, bulk_unit(w, b, v), t & 31);
  int stage = 0;
  for (std::int64_t u = first; u < last; ++u) {
    T* const buf = stages + stage * b.stage;
    // This stage's bulk copy (4 units ago) has been read (thread 0 waited, then the barrier at the
    // end of the last unit): put back the zeros this thread set there.
    bool wrote = false;
#pragma unroll
    for (int q = 0; q < kBulkOutsPerThread; ++q) {
      if (set[0][q] >= 0) buf[set[0][q]] = T(0);
      wrote |= set[0][q] >= 0;
#pragma unroll
      for (int s = 0; s + 1 < kBulkStages; ++s) set[s][q] = set[s + 1][q];
    }
    __syncthreads();  // every zero back before any new cell (another thread's old cell may be one)
    // dx[g0 + e] sits at buf[shift + e]: the stage's 16-byte boundaries fall where dx's do.
    const int shift = static_cast<int>((reinterpret_cast<std::uintptr_t>(a.dx + cur.g0) % 16) / sizeof(T));
    const int outs = (cur.ob - cur.oa) * w.oW;
#pragma unroll
    for (int q = 0; q < kBulkOutsPerThread; ++q) {
      int e = -1;
      if (j[q] < outs) {
        const int r = static_cast<int>(b.by_oW.div(static_cast<std::uint32_t>(j[q])));
        e = bulk_named_place<kInt64>(w, b, cur, cur.oa + r, j[q] - r * w.oW, now[q].saved);
      }
      if (e >= 0) buf[shift + e] = now[q].grad;
      wrote |= e >= 0;
      set[kBulkStages - 1][q] = e >= 0 ? shift + e : -1;
    }
    // This thread's writes to the stage, visible to the bulk copy: a fence, only where it wrote
    // (on kernel 8 stride 8, 1 thread in 8 of the 64 with an output). The fence waits for the
    // thread's loads in flight (first form: the next unit's, issued before it, so a unit waited a
    // whole load latency here); the next unit's loads go after it.
    if (wrote) bulk_fence_shared();
    const BulkUnit here = cur;
    if (u + 1 < last) {
      cur = bulk_unit(w, b, u + 1);
      if (holder) bulk_fetch<kInt64>(a, cur, j, now);
    }
    if (!holder && u + kBulkAhead < last) bulk_prefetch_unit<kInt64>(a, bulk_unit(w, b, u + kBulkAhead), t & 31);
    __syncthreads();
    int head = (kPer16 - shift) % kPer16;
    if (head > here.len) head = here.len;
    const int body = (here.len - head) / kPer16 * kPer16, tail = here.len - head - body;
    T* const dst = a.dx + here.g0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if (t == 0) {
      if (body > 0) bulk_store(dst + head, buf + shift + head, static_cast<std::uint32_t>(body * sizeof(T)));
      bulk_wait_read<kBulkStages - 1>();  // the next unit's stage (4 units ago) has been read out
    }
    if (t < head) dst[t] = buf[shift + t];
    else if (t >= 32 && t - 32 < tail) dst[head + body + t - 32] = buf[shift + head + body + t - 32];
#else
    for (int e = t; e < here.len; e += kBulkThreads) dst[e] = buf[shift + e];
#endif
    __syncthreads();  // thread 0's wait, before any thread zeroes the next stage
    stage = stage + 1 == kBulkStages ? 0 : stage + 1;
  }
  if (t == 0) bulk_wait_all();  // every bulk copy complete before the block's shared memory goes
}

template <class T>
std::string bwd_v17_refuses(const Window& w) {
  BulkPlan b;
  return bulk_plan<T>(w, b);
}

template <class T>
void bwd_v17_bulk_store(cudaStream_t s, const BackwardArgs<T>& a) {
  check_backward(a, "bwd_v17_bulk_store");
  BulkPlan b;
  if (const std::string why = bulk_plan<T>(a.w, b); !why.empty()) throw tut::Unsupported(why);
  if (reinterpret_cast<std::uintptr_t>(a.dx) % sizeof(T) != 0)
    throw std::invalid_argument("bwd_v17_bulk_store: dx must be aligned to its element size");
  const std::size_t smem = static_cast<std::size_t>(kBulkStages) * b.stage * sizeof(T);
  const auto launch = [&](auto i64) {
    constexpr bool kI = decltype(i64)::value;
    const void* k = TUT_KERNEL(bwd_v17_bulk_store_kernel<kI, T>);
    static const bool opted = [&] {
      TUT_CUDA(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    kBulkStages * (kBulkMaxBytes + 32)));
      return true;
    }();
    (void)opted;
    const unsigned grid = one_wave_grid(b.units, resident_blocks(k, kBulkThreads, smem));
    bwd_v17_bulk_store_kernel<kI, T><<<grid, kBulkThreads, smem, s>>>(a, b);
  };
  if (a.w.indices == IndexFormat::int64) launch(std::true_type{});
  else launch(std::false_type{});
  TUT_CHECK_LAUNCH("bwd_v17_bulk_store_kernel");
}

template <class T>
std::vector<const void*> bwd_v17_kernels() {
  return {TUT_KERNEL(bwd_v17_bulk_store_kernel<true, T>), TUT_KERNEL(bwd_v17_bulk_store_kernel<false, T>)};
}

}  // namespace ch06
