// bwd v28_rank_bits: v9's tile and ranks, with the order kept by bits instead of barriers. For
// overlapping windows of at most 32 ranks (kernel 3 stride 1: 27; kernel 3 stride 2: 8).
//
// v9 makes P passes over its outputs, a barrier before each, so that each cell receives its terms in
// ascending rank. On kernel 3 stride 1 that is 27 passes, and v9 ran 528 M warp instructions there
// (H100), 0.13 of copy. Here a block:
//   1. loads the outputs whose windows reach its tile (v9's loads, v9's keys: place and rank), and
//      for each one whose cell lies in the tile sets bit `rank` of that cell's word in shared memory
//      (an OR: the same word whatever the order of the ORs) and keeps its dy in shared memory at the
//      output's place among the tile's outputs;
//   2. visits every cell of the tile once. The output of rank r at cell x is lo(x) + r's offsets
//      along each axis, so its place among the tile's outputs is the cell's first covering output's
//      place plus a table entry per rank. A cell with at most 2 bits adds those terms at once, in
//      ascending rank, and stores its dx. A cell with 3 or more goes on a list;
//   3. after a barrier, a thread per listed cell adds its terms, bit by bit in ascending rank, and
//      stores its dx.
// Every cell's terms are added in ascending rank, from 0: ascending (od, oh, ow), v1's order, so dx
// has v1's bits on every run.
//
// Why the list. With random inputs most outputs of kernel 3 stride 1 choose a local maximum: a
// 64^3 volume of normal values (numpy, seed 1) gives 88.6 % of cells no term and a few cells up to
// 27, and the most terms among 32 consecutive cells averages 16.6. A warp whose lanes each loop over
// their own cell's bits would run 16.6 rounds for 32 cells; the list packs the cells of many terms
// (under 10 % of them) into full warps.
//
// Prediction (before any run; kernel 3 stride 1 on 4x32x32x64x64, int64): v9's box of 8 x 10 x 32,
// 1.45 outputs read per cell. Per output read about 60 thread instructions (v9's decode and key,
// an ATOMS.OR, an STS), per cell about 25 (its place, its word, at most two terms, its store), the
// list about 0.5 warp instructions per cell: about 4.3 warp instructions per cell, 72 M, against
// v18's (H100) 0.213 ms. If it stays bound by issue, about twice v18's speed and 1.5 to 2 times
// PyTorch's scatter on the H200; on the stem case (kernel 3 stride 2, 8 ranks) ahead of v9, whose
// passes it no longer makes.
//
// Limits, refused before launch: v9's (undilated, a plane that fits 32-bit offsets), at most 32
// ranks, and v9's planner under a smaller tile (kRankBitsMaxCells) so that two blocks fit an SM.
#pragma once

#include "kernels/bwd.cuh"
#include "kernels/bwd_v9_ordered_tile.cuh"  // OrderedTile, tile_box, ordered_output, ordered_key, the planner

#include <algorithm>
#include <string>

namespace ch06 {

inline constexpr int kRankBitsMaxRanks = 32;                                 // a cell's word
inline constexpr int kRankBitsMaxCells = 20480;                              // 80 KiB of words
inline constexpr int kRankBitsHeavy = 3;                                     // terms that send a cell to the list
inline constexpr int kRankBitsListMax = kOrderedMaxOutputs / kRankBitsHeavy + 1;  // each listed cell holds 3 outputs
inline constexpr PlanLimits kRankBitsLimits{kRankBitsMaxCells, kRankBitsMaxRanks, "bwd_v28_rank_bits"};

// Shared memory: the rank table and the list's count, the list, the outputs' dy, then a word per
// cell of the tile.
template <class T>
constexpr std::size_t rank_bits_fixed_bytes() {
  return (kRankBitsMaxRanks + 4 + kRankBitsListMax) * sizeof(int) + kOrderedMaxOutputs * sizeof(T);
}

// Cell `i` of the tile, in the order of the tile's places ((ld * TH + lh) * TW + lw) * TC + c:
// its element of dx, and its place among the tile's outputs of its first covering output (the
// output of rank 0); false when it lies past the volume's end.
template <class T>
__device__ __forceinline__ bool rank_bits_cell(const Window& w, const OrderedTile& ot, const FastDiv& by_TC,
                                               const TileBox& b, std::int64_t dx0, int i, std::int64_t& at,
                                               int& first) {
  std::uint32_t u = static_cast<std::uint32_t>(i);
  const std::uint32_t q0 = by_TC.div(u);
  const int c = static_cast<int>(u - q0 * static_cast<std::uint32_t>(ot.t[3]));
  const std::uint32_t q1 = ot.by_TW.div(q0);
  const int lw = static_cast<int>(q0 - q1 * static_cast<std::uint32_t>(ot.t[2]));
  const std::uint32_t q2 = ot.by_TH.div(q1);
  const int lh = static_cast<int>(q1 - q2 * static_cast<std::uint32_t>(ot.t[1]));
  const int ld = static_cast<int>(q2);
  if (ld >= b.nx[0] || lh >= b.nx[1] || lw >= b.nx[2] || c >= b.nc) return false;
  const std::int64_t C = ot.cl ? w.C : 1;
  at = dx0 + ((static_cast<std::int64_t>(ld * w.H + lh) * w.W + lw) * C + c);
  const int lo0 = first_covering(b.x0[0] + ld, w.k[0], w.s[0], w.p[0], ot.by_s[0]);
  const int lo1 = first_covering(b.x0[1] + lh, w.k[1], w.s[1], w.p[1], ot.by_s[1]);
  const int lo2 = first_covering(b.x0[2] + lw, w.k[2], w.s[2], w.p[2], ot.by_s[2]);
  first = (((lo0 - b.lo[0]) * b.cnt[1] + (lo1 - b.lo[1])) * b.cnt[2] + (lo2 - b.lo[2])) * b.nc + c;
  return true;
}

template <class T>
__global__ void __launch_bounds__(kOrderedBlock, 2) bwd_v28_rank_bits_kernel(BackwardArgs<T> a, OrderedTile ot,
                                                                              FastDiv by_TC) {
  extern __shared__ __align__(16) unsigned char rank_bits_smem[];
  int* rank_at = reinterpret_cast<int*>(rank_bits_smem);  // per rank: its output's place past rank 0's
  int* listed = rank_at + kRankBitsMaxRanks;              // the list's length
  int* list = listed + 4;                                 // cells of 3 or more terms
  T* dys = reinterpret_cast<T*>(list + kRankBitsListMax);  // dy per output of the tile, where its cell is in the tile
  std::uint32_t* word = reinterpret_cast<std::uint32_t*>(dys + kOrderedMaxOutputs);  // per cell: the ranks that chose it
  const Window& w = a.w;
  const int lane = threadIdx.x % 32;
  const std::int64_t C = ot.cl ? w.C : 1;
  for (std::int64_t t = blockIdx.x; t < ot.tiles; t += gridDim.x) {
    const TileBox b = tile_box(w, ot, t);
    const TileRecip rc = tile_recip(b);
    const int outputs = tile_outputs(b);
    // v9's loads, all in flight while the words are zeroed.
    int key[kOrderedPerThread];  // first the saved index (an int64 one outside the plane: -1), then the key
    T g[kOrderedPerThread];
#pragma unroll
    for (int j = 0; j < kOrderedPerThread; ++j) {
      const int e = threadIdx.x + j * kOrderedBlock;
      key[j] = -1;
      g[j] = T(0);
      if (e < outputs) {
        int od, oh, ow, c;
        const std::int64_t o = ordered_output<T>(w, ot, b, rc, e, od, oh, ow, c);
        key[j] = saved_as_int(a, o);
        g[j] = a.dy[o];
      }
    }
    for (int i = threadIdx.x; i < ot.cells; i += kOrderedBlock) word[i] = 0;
    if (threadIdx.x < ot.passes) {
      const int r = static_cast<int>(threadIdx.x), rw = r % ot.m[2], rh = (r / ot.m[2]) % ot.m[1], rd = r / (ot.m[2] * ot.m[1]);
      rank_at[r] = ((rd * b.cnt[1] + rh) * b.cnt[2] + rw) * b.nc;
    }
    if (threadIdx.x == 0) *listed = 0;
    __syncthreads();  // the words zero, the table and the count set
#pragma unroll
    for (int j = 0; j < kOrderedPerThread; ++j) {
      const int e = threadIdx.x + j * kOrderedBlock;
      if (e < outputs && key[j] >= 0) {
        int od, oh, ow, c;
        ordered_output<T>(w, ot, b, rc, e, od, oh, ow, c);
        const int k = ordered_key<T>(w, ot, b, od, oh, ow, c, key[j]);
        if (k >= 0) {
          atomicOr(&word[k >> 6], 1u << (k & 63));
          dys[e] = g[j];
        }
      }
    }
    __syncthreads();  // every bit set, every dy kept
    const std::int64_t dx0 =
        (((b.lead * w.D + b.x0[0]) * w.H + b.x0[1]) * static_cast<std::int64_t>(w.W) + b.x0[2]) * C + b.c0;
    // Every cell, a warp's lanes on consecutive places: those of at most 2 terms stored now.
    for (int i0 = threadIdx.x - lane; i0 < ot.cells; i0 += kOrderedBlock) {
      const int i = i0 + lane;
      std::int64_t at = 0;
      int first = 0;
      const bool mine = i < ot.cells && rank_bits_cell<T>(w, ot, by_TC, b, dx0, i, at, first);
      std::uint32_t m = mine ? word[i] : 0u;
      const bool heavy = __popc(m) >= kRankBitsHeavy;
      if (mine && !heavy) {
        T acc = T(0);
        if (m != 0u) {
          acc += dys[first + rank_at[__ffs(static_cast<int>(m)) - 1]];
          m &= m - 1u;
          if (m != 0u) acc += dys[first + rank_at[__ffs(static_cast<int>(m)) - 1]];
        }
        a.dx[at] = acc;
      }
      const unsigned heavies = __ballot_sync(0xFFFFFFFFu, heavy);
      if (heavies != 0u) {
        int base = 0;
        if (lane == 0) base = atomicAdd(listed, __popc(heavies));
        base = __shfl_sync(0xFFFFFFFFu, base, 0);
        if (heavy) list[base + __popc(heavies & ((1u << lane) - 1u))] = i;
      }
    }
    __syncthreads();  // the list complete
    const int n = *listed;
    for (int h = threadIdx.x; h < n; h += kOrderedBlock) {
      const int i = list[h];
      std::int64_t at = 0;
      int first = 0;
      rank_bits_cell<T>(w, ot, by_TC, b, dx0, i, at, first);  // listed cells lie in the volume
      std::uint32_t m = word[i];
      T acc = T(0);
      while (m != 0u) {
        acc += dys[first + rank_at[__ffs(static_cast<int>(m)) - 1]];
        m &= m - 1u;
      }
      a.dx[at] = acc;
    }
    __syncthreads();  // the words, the table and the list read before the next tile sets them
  }
}

template <class T>
std::string bwd_v28_refuses(const Window& w) {
  return planned<kRankBitsLimits>(w).refused;
}

template <class T>
void bwd_v28_rank_bits(cudaStream_t s, const BackwardArgs<T>& a) {
  check_backward(a, "bwd_v28_rank_bits");
  const OrderedPlan plan = planned<kRankBitsLimits>(a.w);
  if (!plan.refused.empty()) throw tut::Unsupported(plan.refused);
  constexpr std::size_t most = rank_bits_fixed_bytes<T>() + kRankBitsMaxCells * sizeof(std::uint32_t);
  static const std::int64_t resident = [] {
    TUT_CUDA(cudaFuncSetAttribute(bwd_v28_rank_bits_kernel<T>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(most)));
    return resident_blocks(reinterpret_cast<const void*>(bwd_v28_rank_bits_kernel<T>), kOrderedBlock, most);
  }();
  const unsigned grid = static_cast<unsigned>(std::max<std::int64_t>(1, std::min(plan.ot.tiles, 8 * resident)));
  const std::size_t bytes = rank_bits_fixed_bytes<T>() + static_cast<std::size_t>(plan.ot.cells) * sizeof(std::uint32_t);
  bwd_v28_rank_bits_kernel<T><<<grid, kOrderedBlock, bytes, s>>>(a, plan.ot, FastDiv(plan.ot.t[3]));
  TUT_CHECK_LAUNCH("bwd_v28_rank_bits_kernel");
}

}  // namespace ch06
