// bwd v28_rank_bits: v9's ranks, with the order kept by bits instead of barriers, in a kernel whose
// window and tile are compile-time constants. NCDHW, cubic kernel 3 with stride 1 or 2 (27 and 8
// ranks), undilated.
//
// v9 makes P passes over its outputs, a barrier before each, so that each cell receives its terms in
// ascending rank. On kernel 3 stride 1 that is 27 passes, and v9 ran 528 M warp instructions there
// (H100), 0.13 of copy. Here a block takes a tile of TD x TH x 32 cells of one plane and:
//   1. loads the outputs whose windows reach the tile (a box of at most CD x CH x CW, up to 8 a
//      thread, all in flight while the tile's words are zeroed); for each whose saved cell lies in
//      its window and in the tile it sets bit `rank` of that cell's 32-bit word in shared memory (an
//      OR: the same word whatever the order) and keeps its dy at its place in the box;
//   2. a warp per row of the tile, a lane per cell: the output of rank r at cell x is lo(x) plus
//      r's offsets along each axis, its place in the box lo(x)'s plus a table entry. A cell with at
//      most 2 bits adds those terms at once, in ascending rank, and stores its dx; a cell with 3 or
//      more goes on a list (one shared add per warp for the list's length);
//   3. after a barrier, a thread per listed cell adds its terms bit by bit, in ascending rank.
// Every cell's terms are added in ascending rank, from 0: ascending (od, oh, ow), v1's order, so dx
// has v1's bits on every run.
//
// Why the list. With random inputs most outputs of kernel 3 stride 1 choose a local maximum: a
// 64^3 volume of normal values (numpy, seed 1) gives 88.6 % of cells no term and a few up to 27, and
// the most terms among 32 consecutive cells averages 16.6. Lanes looping over their own cell's bits
// would run 16.6 rounds per 32 cells; the list packs the cells of many terms (under 10 %) into full
// warps.
//
// The first form of this kernel (results/forms/v28_first.*, H200) took v9's planner and helpers as
// they are: any tile box, either layout, the box's sizes and the tile's place at run time. Its SASS
// spent about 250 instructions on each output read (v9's decode, twice, and its key) and about 150
// on each cell, and it ran 279 M warp instructions on kernel 3 stride 1 (16.6 a cell; predicted
// 4.3), 0.406 ms against v18's 0.208, and 136 M on the stem case against v9's 58 M.
//
// Prediction for this form (before any run), from the first form's SASS with the divisions by
// compile-time constants and one lane per cell: about 65 instructions per output read and 40 per
// cell. Kernel 3 stride 1 on 4x32x32x64x64 (8 x 10 x 32 tiles, 1.6 outputs read per cell): about
// 150 per cell, 4.5 warp instructions, 76 M against v18's 132 M, so about 1.5x v18's speed if both
// stay bound by issue. The stem case (16 x 32 x 32 tiles, 0.16 read per cell): about 50 per cell,
// 40 M against v9's 58 M.
//
// Measured (H200, results/forms/v28_second.*): wrong again, by 2.4 times on kernel 3 stride 1 and
// 2.8 on the stem. Nsight Compute: 184 M warp instructions and 322 us on kernel 3 stride 1 (int64)
// against v18's 132 M and 211 us; 113 M and 167 us on the stem against v9's 58 M and 85 us, at the
// same DRAM bytes as they read. Raced in one process against PyTorch: 0.646x on kernel 3 stride 1
// (v18 0.988x), 0.536x on the stem (v9 1.032x); compact 0.816x and 0.582x. The SASS says where the
// instructions go: per output read about 50 to load (its place in the box, two 64-bit addresses,
// the index's format) and 79 to set its bit (the decode, the window's and the tile's bounds, lo(x)
// on each axis), 129 where 65 were counted; per row of 32 cells about 90 warp instructions, with the
// compiler's own aggregation of the list's atomic added to the kernel's. At 1.6 outputs read per
// cell, kernel 3 stride 1 spends more on reading its outputs than v18 spends on everything, and on
// the stem the row pass alone costs more than v9's passes and write together.
#pragma once

#include "kernels/bwd.cuh"
#include "kernels/bwd_v9_ordered_tile.cuh"  // kOrderedBlock, kOrderedPerThread, kOrderedMaxOutputs

#include <algorithm>
#include <string>

namespace ch06 {

inline constexpr int kRankBitsHeavy = 3;  // terms that send a cell to the list

// The tile (TD x TH x 32 cells) per window, and what follows from it.
template <int K, int S>
struct RankBitsShape;
template <>
struct RankBitsShape<3, 1> {
  static constexpr int TD = 8, TH = 10;  // covering outputs 10 x 12 x 34 = 4080
};
template <>
struct RankBitsShape<3, 2> {
  static constexpr int TD = 16, TH = 32;  // 9 x 17 x 17 = 2601
};
template <int K, int S>
struct RankBits {
  static constexpr int TD = RankBitsShape<K, S>::TD, TH = RankBitsShape<K, S>::TH, TW = 32;
  static constexpr int M = (K + S - 1) / S, P = M * M * M;  // covering outputs per axis, ranks
  // The most outputs whose windows reach T consecutive cells: o * S in an interval of T + K - 2.
  static constexpr int CD = (TD + K - 2) / S + 1, CH = (TH + K - 2) / S + 1, CW = (TW + K - 2) / S + 1;
  static constexpr int kOutputs = CD * CH * CW, kCells = TD * TH * TW;
  static constexpr int kPer = (kOutputs + kOrderedBlock - 1) / kOrderedBlock;  // outputs a thread holds
  static constexpr int kListMax = kOutputs / kRankBitsHeavy + 1;                // each listed cell holds 3
  static_assert(P <= 32, "a cell's ranks fit one 32-bit word");
  static_assert(kPer <= kOrderedPerThread, "a block's threads hold the box's outputs");
  static constexpr std::size_t smem_bytes(std::size_t t_bytes) {
    return (32 + 4 + kListMax + kCells) * sizeof(int) + kOutputs * t_bytes;
  }
};

// The launch's grid of tiles: tiles per axis and their divisors, the index decode.
struct RankBitsGrid {
  int nt[3] = {1, 1, 1};
  FastDiv by_nt[3];
  std::int64_t tiles = 1;
  IndexDecode dec;
};

// Along an axis, the first output whose window covers cell x, or 0 (lo(x)).
template <int K, int S>
__device__ __forceinline__ int rank_bits_lo(int x, int p) {
  const int num = x + p - K + 1;
  return num <= 0 ? 0 : (num + S - 1) / S;
}

template <int K, int S, class T>
__global__ void __launch_bounds__(kOrderedBlock, 2) bwd_v28_rank_bits_kernel(BackwardArgs<T> a, RankBitsGrid grid) {
  using R = RankBits<K, S>;
  extern __shared__ __align__(16) unsigned char rank_bits_smem[];
  int* rank_at = reinterpret_cast<int*>(rank_bits_smem);  // per rank: its output's place past rank 0's
  int* listed = rank_at + 32;                             // the list's length
  int* list = listed + 4;                                 // cells of 3 or more terms (their place)
  std::uint32_t* word = reinterpret_cast<std::uint32_t*>(list + R::kListMax);  // per cell: the ranks that chose it
  T* dys = reinterpret_cast<T*>(word + R::kCells);       // dy per output of the box whose cell is in the tile
  const Window& w = a.w;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int in[3] = {w.D, w.H, w.W}, out[3] = {w.oD, w.oH, w.oW}, T3[3] = {R::TD, R::TH, R::TW};
  const std::int64_t in_plane = w.in_plane(), out_plane = w.out_plane();
  for (std::int64_t t = blockIdx.x; t < grid.tiles; t += gridDim.x) {
    // The tile: its plane, its first cell and extent per axis, its box of covering outputs.
    int x0[3], nx[3], lo[3], cnt[3];
    std::uint32_t u = static_cast<std::uint32_t>(t);  // fewer than 2^31 tiles (the launcher checks)
    for (int ax = 2; ax >= 0; --ax) {
      const std::uint32_t q = grid.by_nt[ax].div(u);
      x0[ax] = static_cast<int>(u - q * static_cast<std::uint32_t>(grid.nt[ax])) * T3[ax];
      u = q;
    }
    const std::int64_t plane = u;
#pragma unroll
    for (int ax = 0; ax < 3; ++ax) {
      nx[ax] = min(T3[ax], in[ax] - x0[ax]);
      lo[ax] = rank_bits_lo<K, S>(x0[ax], w.p[ax]);
      const int hi = min(out[ax] - 1, (x0[ax] + nx[ax] - 1 + w.p[ax]) / S);
      cnt[ax] = hi - lo[ax] + 1;  // at least 1: every cell lies in some window (K > S)
    }
    const T* dy = a.dy + plane * out_plane;
    // The loads: the saved index as a 32-bit number (an int64 one outside the plane: -1), and dy.
    int key[R::kPer];
    T g[R::kPer];
#pragma unroll
    for (int j = 0; j < R::kPer; ++j) {
      const int e = threadIdx.x + j * kOrderedBlock;
      const int ed = e / (R::CH * R::CW), eh = e / R::CW % R::CH, ew = e % R::CW;
      key[j] = -1;
      g[j] = T(0);
      if (e < R::kOutputs && ed < cnt[0] && eh < cnt[1] && ew < cnt[2]) {
        const int o = ((lo[0] + ed) * w.oH + lo[1] + eh) * w.oW + lo[2] + ew;
        if (w.indices == IndexFormat::int64) {
          const std::int64_t f = a.index[plane * out_plane + o];
          key[j] = f < 0 || f >= in_plane ? -1 : static_cast<int>(f);
        } else {
          key[j] = w.compact8() ? a.offset8[plane * out_plane + o] : a.offset16[plane * out_plane + o];
        }
        g[j] = dy[o];
      }
    }
#pragma unroll 4
    for (int i = threadIdx.x; i < R::kCells; i += kOrderedBlock) word[i] = 0u;
    if (threadIdx.x < R::P) {
      const int r = static_cast<int>(threadIdx.x);
      rank_at[r] = (r / (R::M * R::M) * R::CH + r / R::M % R::M) * R::CW + r % R::M;
    }
    if (threadIdx.x == 0) *listed = 0;
    __syncthreads();  // the words zero, the table and the count set
    // Each output whose saved cell lies in its window and in the tile: its rank's bit at the cell,
    // its dy at its place in the box.
#pragma unroll
    for (int j = 0; j < R::kPer; ++j) {
      if (key[j] < 0) continue;
      const int e = threadIdx.x + j * kOrderedBlock;
      const int o[3] = {lo[0] + e / (R::CH * R::CW), lo[1] + e / R::CW % R::CH, lo[2] + e % R::CW};
      int x[3];
      bool in_window;
      if (w.indices == IndexFormat::int64) {
        const std::uint32_t f = static_cast<std::uint32_t>(key[j]);
        const std::uint32_t d = grid.dec.by_hw.div(f), r = f - d * grid.dec.by_hw.divisor, h = grid.dec.by_w.div(r);
        x[0] = static_cast<int>(d), x[1] = static_cast<int>(h), x[2] = static_cast<int>(r - h * static_cast<std::uint32_t>(w.W));
        in_window = true;
#pragma unroll
        for (int ax = 0; ax < 3; ++ax)
          in_window = in_window && static_cast<unsigned>(x[ax] - (o[ax] * S - w.p[ax])) < static_cast<unsigned>(K);
      } else {
        const int c = key[j];
        in_window = c < K * K * K;
        x[0] = o[0] * S - w.p[0] + c / (K * K), x[1] = o[1] * S - w.p[1] + c / K % K, x[2] = o[2] * S - w.p[2] + c % K;
      }
      int place = 0, rank = 0;
#pragma unroll
      for (int ax = 0; ax < 3; ++ax) {
        const int l = x[ax] - x0[ax];
        in_window = in_window && static_cast<unsigned>(l) < static_cast<unsigned>(nx[ax]);  // and in the tile
        place = place * T3[ax] + l;
        rank = rank * R::M + o[ax] - rank_bits_lo<K, S>(x[ax], w.p[ax]);
      }
      if (in_window) {
        atomicOr(&word[place], 1u << rank);
        dys[e] = g[j];
      }
    }
    __syncthreads();  // every bit set, every dy kept
    // A warp per row of the tile, a lane per cell: cells of at most 2 terms stored now, the rest listed.
    T* dx = a.dx + plane * in_plane;
    for (int r = warp; r < R::TD * R::TH; r += kOrderedBlock / 32) {
      const int ld = r / R::TH, lh = r % R::TH;
      if (ld >= nx[0] || lh >= nx[1]) continue;  // past the volume's end, for the whole warp
      const int row_first = ((rank_bits_lo<K, S>(x0[0] + ld, w.p[0]) - lo[0]) * R::CH +
                             rank_bits_lo<K, S>(x0[1] + lh, w.p[1]) - lo[1]) * R::CW - lo[2];
      const bool mine = lane < nx[2];
      std::uint32_t m = mine ? word[r * R::TW + lane] : 0u;
      const bool heavy = __popc(m) >= kRankBitsHeavy;
      if (mine && !heavy) {
        const int first = row_first + rank_bits_lo<K, S>(x0[2] + lane, w.p[2]);
        T acc = T(0);
        if (m != 0u) {
          acc += dys[first + rank_at[__ffs(static_cast<int>(m)) - 1]];
          m &= m - 1u;
          if (m != 0u) acc += dys[first + rank_at[__ffs(static_cast<int>(m)) - 1]];
        }
        dx[(x0[0] + ld) * w.H * static_cast<std::int64_t>(w.W) + (x0[1] + lh) * w.W + x0[2] + lane] = acc;
      }
      const unsigned heavies = __ballot_sync(0xFFFFFFFFu, heavy);
      if (heavies != 0u) {
        int base = 0;
        if (lane == 0) base = atomicAdd(listed, __popc(heavies));
        base = __shfl_sync(0xFFFFFFFFu, base, 0);
        if (heavy) list[base + __popc(heavies & ((1u << lane) - 1u))] = r * R::TW + lane;
      }
    }
    __syncthreads();  // the list complete
    const int n = *listed;
    for (int h = threadIdx.x; h < n; h += kOrderedBlock) {
      const int i = list[h], r = i / R::TW, lw = i % R::TW, ld = r / R::TH, lh = r % R::TH;
      const int first = ((rank_bits_lo<K, S>(x0[0] + ld, w.p[0]) - lo[0]) * R::CH +
                         rank_bits_lo<K, S>(x0[1] + lh, w.p[1]) - lo[1]) * R::CW +
                        rank_bits_lo<K, S>(x0[2] + lw, w.p[2]) - lo[2];
      std::uint32_t m = word[i];
      T acc = T(0);
      while (m != 0u) {
        acc += dys[first + rank_at[__ffs(static_cast<int>(m)) - 1]];
        m &= m - 1u;
      }
      dx[(x0[0] + ld) * w.H * static_cast<std::int64_t>(w.W) + (x0[1] + lh) * w.W + x0[2] + lw] = acc;
    }
    __syncthreads();  // the words, the table and the list read before the next tile sets them
  }
}

template <class T>
std::string bwd_v28_refuses(const Window& w) {
  const std::string who = "bwd_v28_rank_bits";
  if (w.layout != Layout::ncdhw) return who + " reads the layout NCDHW only (v9 takes NDHWC)";
  if (w.dilated()) return who + " takes dilation 1 only";
  if (w.k[0] != 3 || w.k[1] != 3 || w.k[2] != 3 || w.s[0] != w.s[1] || w.s[1] != w.s[2] || (w.s[0] != 1 && w.s[0] != 2))
    return who + " takes the cubic kernel 3 with stride 1 or 2 on every axis (v9 takes other windows)";
  if (!plane_fits_32_bits(w)) return who + " indexes a plane in 32 bits; this one is larger";
  return {};
}

template <class T>
RankBitsGrid rank_bits_grid(const Window& w, int TD, int TH, int TW) {
  RankBitsGrid g;
  const int in[3] = {w.D, w.H, w.W}, t[3] = {TD, TH, TW};
  g.tiles = w.N * w.C;
  for (int ax = 0; ax < 3; ++ax) {
    g.nt[ax] = (in[ax] + t[ax] - 1) / t[ax];
    g.by_nt[ax] = FastDiv(g.nt[ax]);
    g.tiles *= g.nt[ax];
  }
  g.dec = index_decode(w);
  return g;
}

template <int K, int S, class T>
void launch_rank_bits(cudaStream_t s, const BackwardArgs<T>& a) {
  using R = RankBits<K, S>;
  constexpr std::size_t bytes = R::smem_bytes(sizeof(T));
  static const std::int64_t resident = [] {
    TUT_CUDA(cudaFuncSetAttribute(bwd_v28_rank_bits_kernel<K, S, T>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                  static_cast<int>(bytes)));
    return resident_blocks(reinterpret_cast<const void*>(bwd_v28_rank_bits_kernel<K, S, T>), kOrderedBlock, bytes);
  }();
  const RankBitsGrid g = rank_bits_grid<T>(a.w, R::TD, R::TH, R::TW);
  if (g.tiles > kMaxInt32) throw tut::Unsupported("bwd_v28_rank_bits numbers its tiles in 32 bits; this case has more");
  const unsigned grid = static_cast<unsigned>(std::max<std::int64_t>(1, std::min(g.tiles, 8 * resident)));
  bwd_v28_rank_bits_kernel<K, S, T><<<grid, kOrderedBlock, bytes, s>>>(a, g);
  TUT_CHECK_LAUNCH("bwd_v28_rank_bits_kernel");
}

template <class T>
void bwd_v28_rank_bits(cudaStream_t s, const BackwardArgs<T>& a) {
  check_backward(a, "bwd_v28_rank_bits");
  if (const std::string why = bwd_v28_refuses<T>(a.w); !why.empty()) throw tut::Unsupported(why);
  if (a.w.s[0] == 1) launch_rank_bits<3, 1>(s, a);
  else launch_rank_bits<3, 2>(s, a);
}

template <class T>
std::vector<const void*> bwd_v28_kernels() {
  return {TUT_KERNEL(bwd_v28_rank_bits_kernel<3, 1, T>), TUT_KERNEL(bwd_v28_rank_bits_kernel<3, 2, T>)};
}

}  // namespace ch06
