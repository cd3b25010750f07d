// fwd v29_held_rounds: NHWC, part of x held on chip between the statistics and the pass, in the
// rounds the grid reads side by side. One cooperative kernel, one block of 1024 threads an SM. Half
// first; float later (below).
//
// Why. The two-pass forwards run at their traffic's pace (v28 took 1.029 of the time of two plain
// sweeps over x at 64x64x112x112 half), and cuDNN's fused forward there is level with them. The
// traffic of a kernel that keeps each thread's first packs on chip and reads only the rest again
// took 0.861 of the two sweeps' time and 0.844 of cuDNN's (tools/l2_sweeps, variant held; README
// "What holding part of x on chip is worth"). v25 held part of x too, each block on its own chunk,
// and that layout alone cost 1.028 of the held traffic's time.
//
// How.
//   The walk. A row is P = L / V packs (L = lcm(C, V) elements). Thread t is column tx = t % P of
//   row ty = t / P of its block; its packs are rows ty + b by, then a grid's rows further each
//   round (by = 1024 / P rows a block), so a round of the grid reads one run of memory, as the two
//   sweeps do. Its first `held` packs also go to shared memory (16 KiB a round of the block), as
//   many as fit beside the merge's buffer. Sums of deviations from the thread's first value, in
//   float (at most kV29MostPacks packs a thread, so the sums' rounding stays under 2^-12 of them).
//   The block's sums. Moved to K* = x[c] in double, merged over the lanes of a column by shuffles
//   (P divides 32) and over the warps in a fixed order through shared memory, then over the
//   positions of a channel in a row: every block's partials in the same bits, launch after launch.
//   The merge. A grid barrier; block b takes channels b, b + G, ... (v28's), the elements past the
//   last whole pack added by one thread; then a second grid barrier.
//   The pass. The packs not held, last first (the L2 still holds the last ones read), 4 loads in
//   flight; then the held ones from shared memory. v17's arithmetic, y evict-first, a byte of the
//   mask a pack (fwd_finish_pack). The elements from the last mask word the packs do not fill whole
//   go to one warp, 32 at a time with ballots (fwd_apply_tail).
// Where it does not apply (NCHW; P not dividing 32 or L > 64; more than kV29MostPacks packs a
// thread; x, y or r off 16 bytes; the dynamic shared memory refused), v29 runs v28.
// Bytes: x once, less what is held, then y and the mask; the held part is not read twice.
// Prediction (before any run): at 64x64x112x112 NHWC half, with about 25 MB held, under v28's
// 0.0894 ms and cuDNN's 0.0885 (results/NVIDIA_H200.held_peers64.txt): about 0.080 ms.
// Measured on the H200 (results/v29_trial/; README "Part of x held between the sweeps"): wrong
// there. 155.2 MB read from DRAM (cuDNN's kernel 160.3, v28's two 205.6 with the caches flushed),
// but 0.0900 ms against v28's 0.0897 and cuDNN's 0.0895, the DRAM 46.5 % busy under Nsight
// Compute. Ahead of v28 where x fits (16x32x112x112 half, 0.0220 ms against 0.0239) and in the Add
// form (128x64x56x56, 0.0562 against 0.0613); in the race against PyTorch behind v28 in the plain
// forward (1.464x against 1.513x at 64x64x112x112), ahead in the Add form (1.911x against 1.866x).
//
// Float. A pack is 4 floats, half a byte of the mask: the even lane writes the byte with its
// neighbour's half (fwd_finish_pack's shuffle), so the pass walks k together across the warp (see
// the pass). The held packs are the same 16 bytes, so a thread keeps 12 packs of 4 floats, half the
// elements it keeps in half.
// Prediction for float (before any run): at 128x64x56x56 NHWC it keeps 25.9 MB of x's 102.8
// (12 x 16 bytes x 1024 threads x 132 SMs), so the traffic falls from about 311.6 MB (x twice, y,
// the mask) to 285.7, 0.917 of it. v28 took 0.0836 ms there and cuDNN's fused forward 0.0804
// (results/NVIDIA_H200.cudnn_suite.txt): at v28's pace over the traffic v29 would take about 0.077
// ms; in half v29 won a fifth of what its traffic promised (0.966 of v28's time against 0.834 of its
// bytes), and float does half the instructions per byte, so between 0.077 and 0.082 ms. At
// 64x64x112x112 (0.958 of the traffic) about 0.155 to 0.160 against v28's 0.1612 and cuDNN's 0.1604.
// Measured on the H200 (commit c41ba47, results/v29_float/; README "Part of x held in float too"):
// right at 128x64x56x56, 0.0789 ms against v28's 0.0843 and cuDNN's 0.0808 in one run, 155.8 MB
// read from DRAM; wrong at 64x64x112x112, 0.1618 ms, v28's time (cuDNN 0.1610); in the Add form
// level with v28 or behind it at both large shapes; ahead where x fits (16x32x112x112: 0.0255
// against 0.0296).
#pragma once

#include "kernels/fwd_v28_loads_ahead.cuh"

namespace ch05 {

inline constexpr int kV29Threads = 1024;            // one block an SM
inline constexpr int kV29Warps = kV29Threads / 32;
inline constexpr int kV29Ahead = 4;                 // loads in flight a thread, in both sweeps
inline constexpr int kV29MostL = 64;                // elements a row at most (the merge's buffer)
inline constexpr int kV29MostPacks = 256;           // packs a thread at most (its float sums)

// The plan of a kernel that holds rounds (v29, bwd v31). A row is nhwc_plan's P packs of L elements.
struct HeldPlan {
  int P = 1, by = 1, held = -1;     // packs a row, rows a block, packs a thread keeps (-1: not taken)
  std::int64_t q_full = 0;          // whole packs
  std::int64_t tail_from = 0;       // the first element of the last mask word the packs do not fill
};
using V29Plan = HeldPlan;

// held = -1 where the kernel does not take the case: not NHWC, its operands not in packs, a row of
// more than most_l elements or of a number of packs not dividing 32, more than most_packs a thread.
inline HeldPlan held_plan(const Shape4& s, int V, bool packs_ok, int threads, int grid, int slots, int most_l,
                          int most_packs) {
  HeldPlan plan;
  if (slots < 1 || s.layout != Layout::nhwc || !packs_ok) return plan;
  const NhwcPlan row = nhwc_plan(s, V);
  if (row.L > most_l || 32 % row.P != 0) return plan;
  plan.P = static_cast<int>(row.P);
  plan.by = threads / plan.P;
  plan.q_full = row.q_full;
  const std::int64_t dr = static_cast<std::int64_t>(grid) * plan.by;
  if ((row.rows + dr - 1) / dr > most_packs) return plan;
  plan.tail_from = plan.q_full * V / 32 * 32;
  plan.held = slots;
  return plan;
}

// The merge's buffer: each warp's sums by position in a row (the held packs are the dynamic shared
// memory, [slot][thread]).
struct V29Shared {
  double ws[kV29Warps * kV29MostL * 2];
};

// Step 2 of v29 and bwd v31, the block's sums by position in a row. First the thread's two sums of
// position lane V + j, added over the lanes of its column by shuffles (P divides 32), into
// ws[(warp L + lane V + j) * 2 + {0, 1}] by the column's first lane (lane < P).
template <int N>
__device__ __forceinline__ void held_column_sums(double (&ws)[N], double a1, double a2, int P, int L, int V, int j,
                                                 int lane, int warp) {
  for (int o = 16; o >= P; o /= 2) {
    a1 += __shfl_xor_sync(kFullWarp, a1, o);
    a2 += __shfl_xor_sync(kFullWarp, a2, o);
  }
  if (lane < P) {
    ws[(warp * L + lane * V + j) * 2] = a1;
    ws[(warp * L + lane * V + j) * 2 + 1] = a2;
  }
}
// Then over the block's kWarpsN warps in order, and over a channel's positions c, c + C, ... of a
// row: the block's partials[b C + c], c < C.
template <int kWarpsN, int N>
__device__ __forceinline__ void held_block_partials(double (&ws)[N], int L, int C, DSum* partials, int t) {
  __syncthreads();
  double b1 = 0.0, b2 = 0.0;
  if (t < L)
    for (int w = 0; w < kWarpsN; ++w) b1 += ws[(w * L + t) * 2], b2 += ws[(w * L + t) * 2 + 1];
  __syncthreads();
  if (t < L) ws[t * 2] = b1, ws[t * 2 + 1] = b2;
  __syncthreads();
  if (t < C) {
    double c1 = 0.0, c2 = 0.0;
    for (int i = t; i < L; i += C) c1 += ws[i * 2], c2 += ws[i * 2 + 1];
    partials[static_cast<std::int64_t>(blockIdx.x) * C + t] = DSum{c1, c2};
  }
}

template <class T, bool kAdd>
__global__ void __launch_bounds__(kV29Threads, 1)
    fwd_v29_kernel(FwdArgs<T> a, ChannelParams p, DSum* partials, V29Plan plan, ChannelMap map) {
  constexpr int V = kPack<T>;
  extern __shared__ uint4 held[];
  __shared__ V29Shared sh;
  __shared__ double w1[kV29Warps], w2[kV29Warps];
  __shared__ __align__(16) float prm[3][kV29MostL];  // the pass's mean, scale and shift by position in a row
  const int C = static_cast<int>(a.s.C), P = plan.P, L = P * V;
  const int t = static_cast<int>(threadIdx.x), tx = t % P, ty = t / P, lane = t % 32, warp = t / 32;
  // The thread's packs: rows r0, r0 + dr, ... whose pack in column tx is whole.
  const std::int64_t r0 = static_cast<std::int64_t>(blockIdx.x) * plan.by + ty;
  const std::int64_t dr = static_cast<std::int64_t>(gridDim.x) * plan.by;
  const std::int64_t rows = (plan.q_full - tx + P - 1) / P;
  const int n = r0 < rows ? static_cast<int>((rows - r0 + dr - 1) / dr) : 0;
  const int kept = n < plan.held ? n : plan.held;
  const std::int64_t e_first = (r0 * P + tx) * V, e_step = dr * L;  // pack k's first element: e_first + k e_step
  const auto elem = [&](int k) { return e_first + k * e_step; };

  // 1. The walk: float sums of deviations from the first value, the first `kept` packs kept.
  float K[V], s1[V], s2[V];
#pragma unroll
  for (int j = 0; j < V; ++j) K[j] = s1[j] = s2[j] = 0.0f;
  if (n > 0) unpack<V, T>(load_raw<V, T>(a.x + elem(0)), K);
  for (int k0 = 0; k0 < n; k0 += kV29Ahead) {
    uint4 raw[kV29Ahead];
#pragma unroll
    for (int u = 0; u < kV29Ahead; ++u)
      if (k0 + u < n) raw[u] = load_raw<V, T>(a.x + elem(k0 + u));
#pragma unroll
    for (int u = 0; u < kV29Ahead; ++u) {
      if (k0 + u < n) v28_add<V, T>(raw[u], K, s1, s2);
      if (k0 + u < kept) held[(k0 + u) * kV29Threads + t] = raw[u];
    }
  }
  // 2. The block's sums, to K* = x[c] in double: over a column's lanes, then the warps in order.
#pragma unroll
  for (int j = 0; j < V; ++j) {
    const int c = (tx * V + j) % C;
    const double d = static_cast<double>(K[j]) - static_cast<double>(to_float(a.x[c]));
    double a1 = static_cast<double>(s1[j]), a2 = static_cast<double>(s2[j]);
    a2 = a2 + 2.0 * d * a1 + n * d * d;
    a1 = a1 + n * d;
    held_column_sums(sh.ws, a1, a2, P, L, V, j, lane, warp);
  }
  held_block_partials<kV29Warps>(sh.ws, L, C, partials, t);
  cg::grid_group grid = cg::this_grid();
  grid.sync();

  // 3. The merge: block b takes channels b, b + G, ... (merge_block_partials, v28's and bwd v31's,
  // written out again: called through it, or any helper shared with v28 tried before, this kernel
  // spills 8 bytes at its 64 registers a thread).
  const int G = static_cast<int>(gridDim.x);
  const std::int64_t tail_first = plan.q_full * V, numel = a.s.numel();
  for (int c = static_cast<int>(blockIdx.x); c < C; c += G) {
    double m1 = 0.0, m2 = 0.0;
    for (int k = t; k < G; k += kV29Threads) {
      const DSum d = partials[static_cast<std::int64_t>(k) * C + c];
      m1 += d.s1;
      m2 += d.s2;
    }
#pragma unroll
    for (int o = 16; o > 0; o /= 2) {
      m1 += __shfl_xor_sync(kFullWarp, m1, o);
      m2 += __shfl_xor_sync(kFullWarp, m2, o);
    }
    if (lane == 0) w1[warp] = m1, w2[warp] = m2;
    __syncthreads();
    if (t == 0) {
      double t1 = 0.0, t2 = 0.0;
      for (int k = 0; k < kV29Warps; ++k) t1 += w1[k], t2 += w2[k];
      const float ks = to_float(a.x[c]);
      // the elements past the last whole pack (fewer than V): channel c's among them
      for (std::int64_t i = tail_first + ((c - tail_first % C) % C + C) % C; i < numel; i += C) {
        const double d = static_cast<double>(to_float(a.x[i])) - ks;
        t1 += d;
        t2 += d * d;
      }
      finish_forward_channel(a, p, c, shifted_welford(a.s.per_channel(), ks, t1, t2));
    }
    __syncthreads();  // w1 and w2 are read before the next channel's totals
  }
  grid.sync();

  // 4. The pass: the packs not kept, last first, then the kept ones; the tail by one warp. A row's
  // parameters by position in shared memory, read a pack at a time (in registers they would
  // take 24 a thread, and the pass would spill).
  if (t < L) {
    const int c = t % C;
    prm[0][t] = p.mean[c], prm[1][t] = p.scale[c], prm[2][t] = p.shift[c];
  }
  __syncthreads();
  // (The Add form's packs are x and r: 2 of each in flight, the same 64 bytes, and no spill.)
  // Half: a pack is a byte of the mask, and each thread walks its own packs. Float: a pack is half a
  // byte, which the even lane writes with its neighbour's half (fwd_finish_pack's shuffle; the two
  // are the packs e0 and e0 + 4, at the same k, both below tail_from or both not), so the warp walks
  // k together, from the most packs of any of its lanes, a lane without pack k idle.
  constexpr bool kPaired = V == 4;
  const int top = kPaired ? __reduce_max_sync(kFullWarp, n) : n;
  constexpr int kAhead = kAdd ? kV29Ahead / 2 : kV29Ahead;
  for (int k0 = top - 1; k0 >= 0; k0 -= kAhead) {
    uint4 raw[kAhead], rq[kAhead];
#pragma unroll
    for (int u = 0; u < kAhead; ++u) {
      const int k = k0 - u;
      const bool has = k >= 0 && (!kPaired || k < n);  // half: k < n always
      if constexpr (kPaired) raw[u] = rq[u] = make_uint4(0u, 0u, 0u, 0u);
      if (has) raw[u] = k < kept ? held[k * kV29Threads + t] : load_raw<V, T>(a.x + elem(k));
      if (kAdd && has) rq[u] = load_raw<V, T>(a.r + elem(k));
    }
#pragma unroll
    for (int u = 0; u < kAhead; ++u) {
      const int k = k0 - u;
      const std::int64_t e0 = elem(k);
      const bool active = (!kPaired || k < n) && e0 < plan.tail_from;
      if (k < 0 || (!kPaired && !active)) continue;  // k < 0: the same in every lane
      float xv[V], rv[V] = {}, mean[V], scale[V], shift[V];
      unpack<V, T>(raw[u], xv);
      if constexpr (kAdd) unpack<V, T>(rq[u], rv);
      load_params<V>(&prm[0][tx * V], mean);
      load_params<V>(&prm[1][tx * V], scale);
      load_params<V>(&prm[2][tx * V], shift);
      fwd_finish_pack<V, T, kAdd, true>(a, 0, e0, lane, xv, rv, mean, scale, shift, !kPaired || active);
    }
  }
  if (blockIdx.x == 0 && warp == 0) fwd_apply_tail<T, kAdd>(a, p, map, plan.tail_from, lane);
}

template <class T>
std::size_t fwd_v29_scratch_bytes(const Shape4& s) {
  return fwd_v28_scratch_bytes<T>(s);
}

// The kernel's plan, or held = -1 where v29 does not take the case.
template <class T, bool kAdd>
V29Plan v29_plan(const FwdArgs<T>& a, int grid, int slots) {
  return held_plan(a.s, kPack<T>, stats_packs_ok<T>(a.s, a.x) && fwd_apply_packs_ok<T, kAdd>(a), kV29Threads, grid,
                   slots, kV29MostL, kV29MostPacks);
}

// The dynamic shared memory of `slots` held packs a thread: a round of the block's 16-byte packs each.
inline std::size_t v29_dynamic_bytes(int slots) { return static_cast<std::size_t>(slots) * kV29Threads * 16; }

// The slots of `slot_bytes` a kernel of `threads` threads, one block an SM, keeps in its dynamic
// shared memory beside its static arrays: as many as the SM's shared memory takes; 0 where a block
// with them does not fit an SM. Grants the kernel the dynamic shared memory of that many slots.
inline int held_slots(const void* kernel, int threads, std::size_t slot_bytes) {
  cudaFuncAttributes fa{};
  TUT_CUDA(cudaFuncGetAttributes(&fa, kernel));
  int optin = 0, device = 0;
  TUT_CUDA(cudaGetDevice(&device));
  TUT_CUDA(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
  const long long room = static_cast<long long>(optin) - static_cast<long long>(fa.sharedSizeBytes);
  const int s = room > 0 ? static_cast<int>(room / static_cast<long long>(slot_bytes)) : 0;
  if (s < 1) return 0;
  const std::size_t bytes = static_cast<std::size_t>(s) * slot_bytes;
  TUT_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
  int per_sm = 0;
  TUT_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, bytes));
  return per_sm < 1 ? 0 : s;
}

// A held-rounds kernel's cooperative launch (v29, bwd v31), `grid` blocks of `threads` with `dyn`
// bytes of dynamic shared memory, on its arguments: the operands a; the channels' parameters and the
// blocks' partials, from the scratch's layout for `partial_bytes`; the plan; the channel map.
template <class Args>
void launch_held(const void* kernel, int grid, int threads, std::size_t dyn, const Args& a, void* ws,
                 std::size_t partial_bytes, HeldPlan plan, cudaStream_t st, const char* who) {
  const Scratch sc(a.s.C, partial_bytes, 0);
  ChannelParams p = sc.params_at(ws);
  DSum* partials = sc.partials_at<DSum>(ws);
  ChannelMap map(a.s);
  Args args = a;
  void* kargs[] = {&args, &p, &partials, &plan, &map};
  ::tut::check_cuda(cudaLaunchCooperativeKernel(kernel, grid, threads, kargs, dyn, st), who, __FILE__, __LINE__);
}

// held_slots for one kernel, asked once.
template <auto Kernel>
int held_slots_once(int threads, std::size_t slot_bytes) {
  static const int slots = held_slots(reinterpret_cast<const void*>(Kernel), threads, slot_bytes);
  return slots;
}

// v29's kernel where it takes the case, else v28.
template <class T, bool kAdd>
void fwd_v29_held_rounds(cudaStream_t st, const FwdArgs<T>& a, void* ws) {
  check_shape(a.s, "fwd_v29_held_rounds");
  const int grid = device_limits().sm_count;
  const int slots = held_slots_once<&fwd_v29_kernel<T, kAdd>>(kV29Threads, v29_dynamic_bytes(1));
  V29Plan plan = v29_plan<T, kAdd>(a, grid, slots);
  if (plan.held < 0) {
    fwd_v28_loads_ahead<T, kAdd>(st, a, ws);
    return;
  }
  launch_held(reinterpret_cast<const void*>(&fwd_v29_kernel<T, kAdd>), grid, kV29Threads, v29_dynamic_bytes(slots), a,
              ws, v3_partial_bytes(a.s, kPack<T>, sizeof(DSum)), plan, st, "fwd_v29_held_rounds");
}

// The kernels it launches, the fallbacks' included.
template <class T, bool kAdd>
std::vector<const void*> fwd_v29_kernels() {
  std::vector<const void*> k = fwd_v28_kernels<T, kAdd>();
  k.push_back(TUT_KERNEL((fwd_v29_kernel<T, kAdd>)));
  return k;
}

}  // namespace ch05
