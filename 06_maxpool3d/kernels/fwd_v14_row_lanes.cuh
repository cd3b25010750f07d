// fwd v14_row_lanes: a warp reads the window rows of neighbouring outputs as consecutive 16-byte
// pieces, and each output's window is split over the lanes that read it.
//
// Why. On 2 x 64 x 64^3 with kernel 8 stride 8 in NCDHW, auto's v4 reached 0.811 of copy on the
// H200 (the suite's run of the tree of commit 2236234), and Nsight Compute put 23.9 % of the warps
// resident, waiting on a long scoreboard 84.4 % of their cycles, the issue slots 16.8 % busy
// (results/NVIDIA_H200.gaps.ncu.csv). The case has 65,536 outputs, so a thread per output (v1 to
// v5, v8) is 2,048 warps: 15.5 for each of the 132 SMs, which hold 64. That is 24 % of the warps
// whatever the registers, and each of them waits on 2 KB of window.
//
// How. Where a window row is 1, 2, 4 or 8 pieces of 16 bytes (kernel 4, 8, 16 or 32 along W in
// float; 8 to 64 in half) and the stride and padding along W keep every piece on 16 bytes, a warp
// takes O neighbouring outputs of one output row and splits each window's kD x kH rows over S
// lanes: lane (s, o, p) reads piece p of output o's rows s, s + S, ..., O x q x S = 32 with q the
// pieces of a row. The q x O lanes of one row read consecutive 16-byte pieces, one or more whole
// sectors. Each lane loads kLaneRows rows before it compares, scans its cells in PyTorch's order
// (kernels/pool.cuh) from its first cell inside the input, and the lanes of an output meet in an
// XOR butterfly with `outranks`, which gives the sequential scan's value and cell in any grouping
// (v8's combine).
//
// Prediction (before any run): on that case 8,192 warps, so residency set by the registers, with
// kLaneRows x 16 bytes in flight a lane; DRAM near its copy rate, about 0.9 of copy.
//
// Measured (H200, results/forms/v14_first.*, v14.*, v14_final.*): wrong about what held v4. The
// first form (8 rows in flight, 78 registers) had 32 % of the warps resident, its last wave of
// blocks part-empty, and ran 0.803 of copy against v4's 0.799. This form (4 rows, a lane's scan from
// its first cell inside the input, 32 registers, every warp resident at once) has 90.5 % of the
// warps resident against v4's 23.9 %, and DRAM about 77 % busy in both (Nsight Compute: 37.0 us
// against 37.5). In the benchmark 0.0377 and 0.0371 ms against v4's 0.0389 and 0.0390 in two
// processes, and 0.861 and 0.852 of copy as auto in two suite runs; raced, 3.115x and 3.147x
// PyTorch against v4's 2.934x and 2.942x. On 8^3 and 4^3 planes (one output a row) it loses to
// v10. Auto takes it for large disjoint float windows whose rows of outputs span >= 128 bytes.
//
// Limits, refused before launch: NCDHW, dilation 1, a window row of 1, 2, 4 or 8 pieces, W, the
// stride and padding along W multiples of a piece, a plane that fits 32-bit offsets. Where x is not
// on 16 bytes the same lanes read their pieces element by element.
#pragma once

#include "kernels/pool.cuh"
#include "tut/elementwise.cuh"

#include <cstdint>
#include <string>
#include <vector>

namespace ch06 {

inline constexpr int kLaneBlock = 256;
inline constexpr int kLaneRows = 4;  // window rows a lane loads before it compares

// How the lanes of a warp split its outputs; a warp's task is a tile of O outputs of one row of
// outputs (RowPieces: tiles per row of outputs, then oH, then oD).
struct RowLanes {
  int q = 1, O = 1, S = 32;        // pieces per window row, outputs per warp, lanes per output's rows
  int step_d = 0, step_h = 0;      // S rows in (jd, jh): S = step_d kH + step_h
  RowPieces tasks;
};

// Wide: x on 16 bytes, so a piece is one load; else the same pieces element by element.
template <class T, bool Wide>
__global__ void __launch_bounds__(kLaneBlock) fwd_v14_row_lanes_kernel(ForwardArgs<T> a, RowLanes g) {
  constexpr int V = 16 / sizeof(T);
  using Pack = tut::ew::Packed<T, V>;
  const Window& w = a.w;
  const int lane = static_cast<int>(threadIdx.x) & 31, p = lane & (g.q - 1), o_in = (lane / g.q) & (g.O - 1),
            s = lane / (g.q * g.O);
  const int rows = w.k[0] * w.k[1], kh = w.k[1], kw = w.k[2];
  const std::int64_t plane = w.in_plane();
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * (blockDim.x / 32);
  // The whole warp loops together: its lanes meet in shuffles at the end of every task.
  for (std::int64_t t = blockIdx.x * static_cast<std::int64_t>(blockDim.x / 32) + threadIdx.x / 32; t < g.tasks.count; t += warps) {
    const RowPiece it = row_piece(t, g.tasks, w);
    const std::int64_t nc = it.plane, row = it.row;
    const int tile = it.piece, oh = it.oh, od = it.od;
    const int ow = tile * g.O + o_in;
    const bool mine = ow < w.oW;
    const int d0 = od * w.s[0] - w.p[0], h0 = oh * w.s[1] - w.p[1], w0 = ow * w.s[2] - w.p[2];
    const int wp = w0 + p * V;                           // this lane's piece of each row
    const bool piece_in = mine && wp >= 0 && wp < w.W;  // W and wp are multiples of V: wholly in or out
    const T* x = a.x + nc * plane + wp;
    int jd = 0, jh = s;  // this lane's first row, s < 32, split into (jd, jh)
    while (jh >= kh) jh -= kh, ++jd;
    const auto inside = [&](int r, int rd, int rh) {  // window row r = (rd, rh) of this lane's piece
      return piece_in && r < rows && static_cast<unsigned>(d0 + rd) < static_cast<unsigned>(w.D) &&
             static_cast<unsigned>(h0 + rh) < static_cast<unsigned>(w.H);
    };
    // The lane's first cell inside the input, where its scan starts: a row outside (padding,
    // ceil_mode) then reads as -inf, which never replaces it, the same as skipping the row. A
    // lane with no cell inside keeps -1, which `outranks` never takes.
    int cell = -1;
    for (int r = s, fd = jd, fh = jh; piece_in && r < rows; r += g.S) {
      if (inside(r, fd, fh)) {
        cell = r * kw + p * V;
        break;
      }
      fd += g.step_d, fh += g.step_h;
      if (fh >= kh) fh -= kh, ++fd;
    }
    T best = lowest<T>();
    for (int r0 = s; r0 < rows; r0 += kLaneRows * g.S) {
      Pack v[kLaneRows];
#pragma unroll
      for (int i = 0; i < kLaneRows; ++i) {
        const T* at = x + ((d0 + jd) * w.H + (h0 + jh)) * w.W;
        if (inside(r0 + i * g.S, jd, jh)) {
          if constexpr (Wide) {
            v[i] = *reinterpret_cast<const Pack*>(at);
          } else {
#pragma unroll
            for (int e = 0; e < V; ++e) v[i].elem[e] = at[e];
          }
        } else {
#pragma unroll
          for (int e = 0; e < V; ++e) v[i].elem[e] = lowest<T>();
        }
        jd += g.step_d, jh += g.step_h;
        if (jh >= kh) jh -= kh, ++jd;
      }
#pragma unroll
      for (int i = 0; i < kLaneRows; ++i) {
        const int c0 = (r0 + i * g.S) * kw + p * V;
#pragma unroll
        for (int e = 0; e < V; ++e)
          if (replaces(best, v[i].elem[e])) best = v[i].elem[e], cell = c0 + e;
      }
    }
    // The lanes of one output: its q pieces (the low bits of the lane) and its S row sets (the high bits).
    const auto meet = [&](int m) {
      const T bv = __shfl_xor_sync(0xffffffffu, best, m);
      const int bc = __shfl_xor_sync(0xffffffffu, cell, m);
      if (outranks(bv, bc, best, cell)) best = bv, cell = bc;
    };
    for (int m = 1; m < g.q; m *= 2) meet(m);
    for (int m = g.q * g.O; m < 32; m *= 2) meet(m);
    if (mine && p == 0 && s == 0) store_result(a, row * w.oW + ow, best, cell, d0, h0, w0);
  }
}

template <class T>
std::string fwd_v14_refuses(const Window& w) {
  const char* who = "fwd_v14_row_lanes";
  constexpr int V = 16 / sizeof(T);
  if (w.layout != Layout::ncdhw) return std::string(who) + " reads the layout NCDHW only";
  if (w.dilated()) return std::string(who) + " takes dilation 1 only";
  const int q = w.k[2] / V;
  if (w.k[2] % V != 0 || (q != 1 && q != 2 && q != 4 && q != 8))
    return std::string(who) + " takes window rows of 1, 2, 4 or 8 pieces of 16 bytes (kernel 4, 8, 16 or 32 along W in float)";
  if (w.W % V != 0 || w.s[2] % V != 0 || w.p[2] % V != 0)
    return std::string(who) + " needs W, the stride and the padding along W in whole 16-byte pieces";
  if (!plane_fits_32_bits(w)) return std::string(who) + " indexes a plane in 32 bits; this one is larger";
  return {};
}

// The lanes' split: q pieces a row, O outputs (at most the row of outputs, rounded down to a power
// of two), and the rest of the warp's 32 lanes over the window's rows.
inline RowLanes row_lanes(const Window& w, int V) {
  RowLanes g;
  g.q = w.k[2] / V;
  g.O = 1;
  while (g.O * 2 * g.q <= 32 && g.O * 2 <= w.oW) g.O *= 2;
  g.S = 32 / (g.q * g.O);
  g.step_d = g.S / w.k[1], g.step_h = g.S % w.k[1];
  g.tasks = row_pieces(w, (w.oW + g.O - 1) / g.O);
  return g;
}

// The grid for `tasks` of one warp each, `per_block` warps a block, `resident` blocks at once:
// the rounds one wave of warps needs (r = ceil(tasks / resident warps)), then the fewest blocks
// that finish in r rounds, so that every warp takes r or r - 1 tasks and the last round is as full
// as the first. A grid of one task a warp (2.59 waves of blocks on 2 x 64 x 64^3 with kernel 8)
// leaves the last wave part-empty with too few loads in flight.
inline unsigned balanced_grid(std::int64_t tasks, int per_block, std::int64_t resident) {
  const std::int64_t warps = resident * per_block, rounds = (tasks + warps - 1) / warps;
  const std::int64_t needed = (tasks + rounds - 1) / rounds;
  return one_wave_grid((needed + per_block - 1) / per_block, resident);
}

template <class T>
void fwd_v14_row_lanes(cudaStream_t s, const ForwardArgs<T>& a) {
  check_forward(a, "fwd_v14_row_lanes");
  if (const std::string why = fwd_v14_refuses<T>(a.w); !why.empty()) throw tut::Unsupported(why);
  const RowLanes g = row_lanes(a.w, 16 / sizeof(T));
  const bool wide = reinterpret_cast<std::uintptr_t>(a.x) % 16 == 0;
  const void* k = wide ? TUT_KERNEL((fwd_v14_row_lanes_kernel<T, true>)) : TUT_KERNEL((fwd_v14_row_lanes_kernel<T, false>));
  const unsigned grid = balanced_grid(g.tasks.count, kLaneBlock / 32, resident_blocks(k, kLaneBlock, 0));
  if (wide) fwd_v14_row_lanes_kernel<T, true><<<grid, kLaneBlock, 0, s>>>(a, g);
  else fwd_v14_row_lanes_kernel<T, false><<<grid, kLaneBlock, 0, s>>>(a, g);
  TUT_CHECK_LAUNCH("fwd_v14_row_lanes_kernel");
}

template <class T>
std::vector<const void*> fwd_v14_kernels() {
  return {TUT_KERNEL((fwd_v14_row_lanes_kernel<T, true>)), TUT_KERNEL((fwd_v14_row_lanes_kernel<T, false>))};
}

}  // namespace ch06
