// The backward dispatcher's rule (kernels/bwd_auto.cuh states it), apart from the kernels so that
// the CPU tests can check which version each case gets; and what v4 refuses.
#pragma once

#include "kernels/bwd_v6_staged_tile.cuh"  // bwd_v6_refuses
#include "kernels/bwd_v9_ordered_tile.cuh"  // ordered_plan
#include "kernels/bwd_v10_row_writer.cuh"
#include "kernels/bwd_v15_separable_stages.cuh"
#include "kernels/bwd_v18_column_walk.cuh"
#include "kernels/bwd_v20_plane_fill.cuh"
#include "kernels/bwd_v25_clean_counters.cuh"
#include "kernels/bwd_v29_lean_scale.cuh"
#include "kernels/pool.cuh"

namespace ch06 {

// What v4 refuses ("" when it takes the case): its mask holds a bit per covering output when there
// are at most 32 of them, else a bit per (D slot, H slot) pair, at most 64 of those.
inline std::string tile_mask_refuses(const Window& w) {
  if (w.dilated()) return "bwd_v4_tile_mask takes dilation 1 only (v1 takes any)";
  const int c0 = (w.k[0] + w.s[0] - 1) / w.s[0], c1 = (w.k[1] + w.s[1] - 1) / w.s[1];
  if (c0 * c1 > 64) return "bwd_v4_tile_mask: more than 64 covering outputs over D and H (v1 takes any)";
  if (!plane_fits_32_bits(w)) return "bwd_v4_tile_mask indexes a plane in 32 bits; this one is larger";
  return {};
}

enum class BwdPick {
  v1_gather,
  v3_segment_writer,
  v6_staged_tile,
  v7_zero_then_store,
  v9_ordered_tile,
  v10_row_writer,
  v15_separable_stages,
  v18_column_walk,
  v20_plane_fill,
  v29_lean_scale
};

inline const char* bwd_pick_name(BwdPick p) {
  switch (p) {
    case BwdPick::v3_segment_writer: return "v3_segment_writer";
    case BwdPick::v6_staged_tile: return "v6_staged_tile";
    case BwdPick::v7_zero_then_store: return "v7_zero_then_store";
    case BwdPick::v9_ordered_tile: return "v9_ordered_tile";
    case BwdPick::v10_row_writer: return "v10_row_writer";
    case BwdPick::v15_separable_stages: return "v15_separable_stages";
    case BwdPick::v18_column_walk: return "v18_column_walk";
    case BwdPick::v20_plane_fill: return "v20_plane_fill";
    case BwdPick::v29_lean_scale: return "v29_lean_scale";
    default: return "v1_gather";
  }
}

//   1. windows that do not overlap, in NCDHW, undilated, where an output owns at least 27 cells
//      (the strides' product) and a plane at least 1024: v20, the plane fill. Raced in one process
//      (results/NVIDIA_H100_80GB_HBM3.v20_race.txt) it ran 1.052x PyTorch on kernel 8 stride 8
//      (1.070x compact) where v10 ran 0.987x (0.981x), and 1.556x on kernel 2 stride 3 (27 cells an
//      output, gaps between windows) where v10 ran 1.371x; on kernel 2 stride 2 (8 cells an output)
//      it lost, 1.900x against v10's 2.112x. Small planes (4^3: 16 cells a plane) give it spans of
//      64 bytes and were not timed, so they stay with v10. Else, in NCDHW (or NDHWC with one
//      channel), one pass that writes each 16-byte chunk of dx once: v10. Three rungs tried to beat
//      it there and none is a choice:
//      v13 (the next item's loads issued early) ran behind v10 on kernel 8 stride 8 in each of the
//      last three suite runs (results/, ninth_run/, tenth_run/: 0.0482 against 0.0471 ms, 0.0488
//      against 0.0477, 0.0487 against 0.0470 with the int64 index; 0.0488 against 0.0470, 0.0487
//      against 0.0479 and 0.0483 compact), so auto, which took v13 there, raced level with PyTorch
//      (1.00x and 0.99x); v16 (a thread's zeros for 4 items before any load is waited on, then the
//      named cells) lost in its own suite run (results/NVIDIA_H100_80GB_HBM3.v16_backward.txt):
//      kernel 8 stride 8, 0.841 and 0.769 of copy (int64, compact) against v10's 0.945 and 0.909;
//      v17 (spans of dx built in shared memory, written by bulk copies) lost in both its forms
//      (results/forms/v17_first.bench.txt: 0.851 against v10's 0.937; the suite run: 0.796
//      against 0.947). In NDHWC with several channels, which v10 refuses: v3 where an output owns
//      fewer than 64 cells (a thread per output's piece of a slice), else v7;
//   2. (v14, the gather over 4 channels of a position, is not taken: on the NDHWC stem case it ran
//      at 0.300 of copy against v9's first form's 0.366 in the same suite run, results/twelfth_run/ and before; v9's NDHWC kernel has since widened the gap.)
//   3. overlapping windows with at most 8 covering outputs per cell (kernel 3 stride 2: ceil(k / s)
//      multiplied over the axes) that v9 takes: v9, the ordered tile. With more (kernel 3 stride 1:
//      27 ranks) its passes and the halo of outputs read cost more than v6's search. v11 (the
//      unrolled gather) and v12 (the class scatter) lost to v9 and v6 on every such suite case;
//   4. other overlapping windows with stride 1 that v15 takes (NCDHW, undilated, cubic kernel 2 to
//      8): v15, the separable stages, 3k candidates per cell instead of v6's k^3; on kernel 3 v18,
//      the same stages with D walked along each thread's column of dx in registers (in its own
//      run, results/forms/bwd_k8_r7.*, 0.2133 ms against v15's 0.2295 on 4 x 32 x 32 x 64^2 with
//      the int64 index; on kernel 8 it lost, 0.0895 against 0.0773, and the other kernels were not
//      timed). In the suite
//      (results/) auto with v15 raced 1.06x and 1.07x PyTorch on kernel 3 stride 1 (int64,
//      compact; v6 0.77x and 0.76x the run before), 0.68x and 0.68x on kernel 8 stride 1 (v6 0.40x
//      and 0.38x);
//      on kernels of 5 and more, v21, the fixed-point counters in global memory, where it takes
//      the case (at most 2048 covering outputs): timed against v15 and v18 in one process per
//      kernel on 1 x 16 x 64^3, stride 1, int64 (results/NVIDIA_H200.v21_sweep.txt), v21 ran
//      0.0636, 0.0640, 0.0585 and 0.0577 ms on kernels 5, 6, 7 and 8 against v15's 0.0693,
//      0.0703, 0.0730 and 0.0768, and lost on kernel 4, 0.0654 against 0.0632. Raced on
//      kernel 8 it ran 0.772x PyTorch (0.809x compact) where v15 ran 0.580x (0.592x)
//      (results/NVIDIA_H200.v21_race.txt). Since then v23, v21 with a lane's runs added in
//      registers, in its place: in one process per kernel (results/NVIDIA_H200.v23_sweep_k*.json)
//      0.0595, 0.0555, 0.0522 and 0.0524 ms on kernels 5 to 8 against v21's 0.0645, 0.0620,
//      0.0569 and 0.0565, and level with v15 on kernel 4 (0.0628 against 0.0633: v15 stays);
//      raced on kernel 8, 0.829x PyTorch (0.843x compact) where v21 ran 0.770x (0.783x)
//      (results/NVIDIA_H200.v23_race.txt). A plane whose dy hold an Inf or a NaN, or span more
//      than about 27 binades, takes v1's gather inside v23, which is slower. Since then v25, v23 with
//      v24's branch-free terms and counters its rounding leaves zero (kernel 1 only reads dy), in
//      place of v23 and on kernel 4 too: in one process per kernel
//      (results/NVIDIA_H200.v25_sweep.txt) 0.0549, 0.0492, 0.0495, 0.0463 and 0.0455 ms on
//      kernels 4 to 8 against v24's 0.0609, 0.0575, 0.0542, 0.0513 and 0.0507 and v15's 0.0631 on
//      kernel 4; on kernel 3 0.0659 against v18's 0.0569 (v18 stays). Raced on kernel 8, 1.011x
//      PyTorch (1.044x compact) where v24 ran 0.859x (0.897x) (results/NVIDIA_H200.v25_race.txt).
//      v26, v25 with a bit per 4 cells so that the rounding reads only reached counters, lost to
//      it on every kernel, and v27, v25 with its loads issued earlier, lost on kernels 6 and 8
//      (results/forms/v27.*): not choices. Since then v29, v25 with a kernel 1 of half the
//      instructions (6.3 us against 7.1 under Nsight Compute), in v25's place: the same sums, so
//      the same bits. Raced, 1.020x and 1.002x PyTorch where v25 ran 0.998x and 1.012x, and in one
//      process per kernel within the spread of v25 (results/forms/v29.*); in the H200's suite runs
//      of the trees of commits 2236234 and 21b5dbf, on kernel 8 stride 1, 0.0432 and 0.0423 ms
//      with the int64 index against v25's 0.0450 and 0.0451 (1.044 and 1.073 times v29's time,
//      past the 5 % the issue allows), and 0.0440 and 0.0440 with the compact index against
//      0.0434 and 0.0427 (results/h200_2236234/, results/h200_21b5dbf/);
//      (v19, the fixed-point tile, is deterministic on any overlap but lost to the version this rule
//      takes on each case it was raced on, results/NVIDIA_H100_80GB_HBM3.v19_race.txt: kernel 8
//      stride 1 0.425x PyTorch against v15's 0.673x, kernel 3 stride 1 0.877x against v18's 1.144x,
//      the stem 0.664x against v9's 1.217x: not a choice);
//   5. other overlapping windows that v6 takes (undilated, at most 64 covering outputs over D and H,
//      a tile that fits its shared memory): v6;
//   6. anything else: v1.
inline constexpr int kOrderedAutoMaxRanks = 8;
// v20 where an output owns at least this many cells of dx (the strides' product) and a plane at
// least this many: a span is then a fill of 4 KiB or more with few outputs to look up.
inline constexpr std::int64_t kFillAutoMinCells = 27;
inline constexpr std::int64_t kFillAutoMinPlane = 1024;
// v29 (v25's sums) instead of v15 on stride-1 cubic windows of at least this kernel (64 covering
// outputs a cell).
inline constexpr int kFixedAutoMinKernel = 4;

inline BwdPick bwd_pick(const Window& w) {
  if (windows_disjoint(w) && plane_fits_32_bits(w)) {
    if (bwd_v20_refuses<float>(w).empty() &&
        static_cast<std::int64_t>(w.s[0]) * w.s[1] * w.s[2] >= kFillAutoMinCells &&
        static_cast<std::int64_t>(w.H) * w.W >= kFillAutoMinPlane)
      return BwdPick::v20_plane_fill;
    if (bwd_v10_refuses<float>(w).empty()) return BwdPick::v10_row_writer;
    return static_cast<std::int64_t>(w.s[0]) * w.s[1] * w.s[2] >= 64 ? BwdPick::v7_zero_then_store
                                                                      : BwdPick::v3_segment_writer;
  }
  const OrderedPlan plan = ordered_plan(w);
  if (plan.refused.empty() && plan.ot.passes <= kOrderedAutoMaxRanks) return BwdPick::v9_ordered_tile;
  if (w.k[0] == 3 && bwd_v18_refuses<float>(w).empty()) return BwdPick::v18_column_walk;
  if (bwd_v15_refuses<float>(w).empty()) {
    if (w.k[0] >= kFixedAutoMinKernel && bwd_v29_refuses<float>(w).empty()) return BwdPick::v29_lean_scale;
    return BwdPick::v15_separable_stages;
  }
  if (bwd_v6_refuses<float>(w).empty()) return BwdPick::v6_staged_tile;
  return BwdPick::v1_gather;
}

}  // namespace ch06
